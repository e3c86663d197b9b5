"""CPU time per Pong frame on each side of ``peer_throughput.py``'s random-action row.

``bench/throughput/peer_throughput.py`` compares wall-clock frames/s, which mixes two
things: how much CPU each side spends per frame, and how well it keeps the cores busy.
This bench measures the first alone: every contender steps 8 Pong envs with random
actions in **one thread** (frame skip 4, 4 stacked 104x80 grayscale frames, episodic
lives, 30 no-op starts), and the figure is process CPU seconds per 1000 agent steps
(4000 frames), which load from other processes disturbs far less than wall time.  Rounds rotate the
order; medians over rounds.

* ``raw ALE + screen``: ale-py's ``act`` four times and one screen grab per step, the
  emulator's own cost (``bench/speed/atari_env.py``'s contender);
* ``AtariEnv``: our env, stepped in a loop;
* ``SerialSampler + AtariEnv``: the sampler's collector on top (agent step, buffers,
  trajectory infos), what each ``CpuSampler`` worker runs;
* ``SerialSampler + EnvPoolAtariEnv``: our sampler on EnvPool's C++ env (1 thread);
* ``EnvPool loop (peer)``: ``bench/peers/envpool_loop.py`` in the peer's venv, 1 thread
  (its process CPU over the timed loop; the main thread waits while EnvPool's thread
  steps).

    python bench/throughput/pong_cpu.py --rounds 5
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
for path in (ROOT, ROOT / "bench", ROOT / "bench" / "speed"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import numpy as np  # noqa: E402
import peers  # noqa: E402
import torch  # noqa: E402
from atari_env import RawAle  # noqa: E402
from samplers import RandomAgent  # noqa: E402

from rlpyt.envs.atari.atari_env import AtariEnv  # noqa: E402
from rlpyt.samplers.serial.sampler import SerialSampler  # noqa: E402

B, T = 8, 20


class EnvLoop:
    """Steps ``B`` envs in a plain loop; ``step(env, action)`` steps one."""

    def __init__(self, envs: list, step):
        self.envs, self.step = envs, step
        self.rng = np.random.default_rng(0)

    def cpu_per_1000(self, steps: int) -> float:
        actions = self.rng.integers(0, 6, size=(steps // B, B))
        start = time.process_time()
        for row in actions:
            for env, a in zip(self.envs, row):
                self.step(env, a)
        return (time.process_time() - start) * 1000 / steps


def raw_ale_loop() -> EnvLoop:
    return EnvLoop([RawAle("pong", grab_screen=True) for _ in range(B)],
                   lambda env, a: env.play([a]))


def atari_env_loop() -> EnvLoop:
    envs = [AtariEnv(game="pong", seed=i) for i in range(B)]
    for env in envs:
        env.reset()

    def step(env, a):
        if env.step(a).done:
            env.reset()

    return EnvLoop(envs, step)


class SamplerLoop:
    def __init__(self, EnvCls):
        self.sampler = SerialSampler(EnvCls=EnvCls, env_kwargs=dict(game="pong"), batch_T=T,
                                     batch_B=B, max_decorrelation_steps=0)
        self.sampler.initialize(RandomAgent(), seed=0)
        self.sampler.obtain_samples(0)
        self.itr = 1

    def cpu_per_1000(self, steps: int) -> float:
        n = max(1, steps // (T * B))
        start = time.process_time()
        for _ in range(n):
            self.sampler.obtain_samples(self.itr)
            self.itr += 1
        return (time.process_time() - start) * 1000 / (n * T * B)


class EnvPoolPeer:
    def cpu_per_1000(self, steps: int) -> float | None:
        out = peers.run("envpool", ["envpool_loop.py", "--agent", "random", "--B", str(B),
                                    "--threads", "1", "--steps", str(steps)], timeout=600)
        return None if out is None else out["cpu_s"] * 1000 / out["steps"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--steps", type=int, default=4000, help="agent steps per measurement")
    args = p.parse_args()
    torch.set_num_threads(1)
    contenders = {"raw ALE + screen": raw_ale_loop(), "AtariEnv": atari_env_loop(),
                  "SerialSampler + AtariEnv": SamplerLoop(AtariEnv)}
    try:
        from rlpyt.envs.vec import EnvPoolAtariEnv
    except ImportError:
        EnvPoolAtariEnv = None
    if EnvPoolAtariEnv is not None and peers.python_of("envpool") is not None:
        contenders["SerialSampler + EnvPoolAtariEnv"] = SamplerLoop(EnvPoolAtariEnv)
    contenders["EnvPool loop (peer)"] = EnvPoolPeer()
    names = list(contenders)
    cpu = {name: [] for name in names}
    for round_ in range(args.rounds):
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            value = contenders[name].cpu_per_1000(args.steps)
            if value is not None:
                cpu[name].append(value)
        print(f"round {round_}: " + ", ".join(f"{n} {v[-1]:.3f}" for n, v in cpu.items() if v),
              flush=True)
    raw = statistics.median(cpu["raw ALE + screen"])
    print(f"\nCPU seconds per 1000 agent steps (4000 frames), {B} envs, one thread, medians "
          f"of {args.rounds} rounds\n")
    print("| contender | CPU s per 1000 agent steps | frames per CPU-second | / raw ALE + screen |")
    print("|---|---:|---:|---:|")
    for name in names:
        if not cpu[name]:
            print(f"| {name} | failed | | |")
            continue
        med = statistics.median(cpu[name])
        print(f"| {name} | {med:.3f} | {4000 / med:,.0f} | {med / raw:.2f} |")


if __name__ == "__main__":
    main()
