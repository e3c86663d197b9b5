"""Peer: EnvPool stepping Pong in a plain loop, with random actions or with the Atari
CNN choosing them (one forward pass on the whole batch per step, in this process).

EnvPool is configured like rlpyt's ``AtariEnv``: frame skip 4, 4 stacked 104x80
grayscale frames, episodic lives, 30 no-op starts.  Prints
``PEER_RESULT {"steps_per_s": ..., "cpu_s": ...}`` (agent steps, each 4 emulator
frames; ``cpu_s`` is the process CPU over the timed loop).

    python envpool_loop.py --B 16 --threads 2 --steps 6400 --agent random
"""

from __future__ import annotations

import argparse
import json
import time

import envpool
import numpy as np
import torch
from nets import AtariNet


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--B", type=int, default=16)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--steps", type=int, default=6400, help="agent steps, all envs")
    p.add_argument("--agent", choices=("random", "model"), default="random")
    a = p.parse_args()
    torch.set_num_threads(1)
    env = envpool.make_gymnasium("Pong-v5", num_envs=a.B, num_threads=a.threads, seed=0,
                                 img_height=104, img_width=80, episodic_life=True,
                                 use_fire_reset=False)
    n_actions = env.action_space.n
    rng = np.random.default_rng(0)
    if a.agent == "model":
        net = AtariNet(env.observation_space.shape, n_actions)

        @torch.no_grad()
        def act(obs):
            pi, _ = net(torch.from_numpy(obs))
            return torch.multinomial(pi, 1).squeeze(-1).numpy().astype(np.int32)
    else:
        def act(obs):
            return rng.integers(n_actions, size=a.B).astype(np.int32)

    obs, _ = env.reset()
    for _ in range(20):  # Warm-up.
        obs, *_ = env.step(act(obs))
    n = max(1, a.steps // a.B)
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(n):
        obs, *_ = env.step(act(obs))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    # cpu_s: this process's CPU over the loop, EnvPool's threads included.
    print("PEER_RESULT " + json.dumps(dict(steps_per_s=n * a.B / wall, wall_s=wall, cpu_s=cpu,
                                           steps=n * a.B)))


if __name__ == "__main__":
    main()
