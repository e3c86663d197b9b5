"""Peer: Sample Factory's APPO (asynchronous actor-learner) through its public API.

Run in the Sample Factory venv (``bench/peers/``).  ``--env atari_pong``: its Atari
example (``sf_examples.atari``: its env wrappers, 84x84 frames, frame skip 4, 4-frame
stack, episodic lives, 30 no-op starts; its defaults from ``atari_override_defaults``)
with the settings that make the batches rlpyt's: 2 rollout workers x 8 envs (16 envs),
rollouts of 20 steps, one gradient step per 320-step batch, asynchronous
(``async_rl``), CPU, and Sample Factory's default APPO losses: PPO clipping (ratio clip
0.1) with GAE advantages (gamma 0.99, lambda 0.95), no V-trace.  ``--vtrace`` asks for
V-trace instead (``--with_vtrace=True --recurrence=20``, which is what matches rlpyt's
Impala), but Sample Factory 2.1.1, its newest release, cannot train with it: its
learner's ``_record_summaries`` reads ``mb.advantages``, which only its GAE path
fills, so the first batch raises ``AttributeError: 'AttrDict' object has no attribute
'advantages'`` and training stalls (fixed upstream after 2.1.1, in its pull request
#286, which no release contains; the summaries' cadence is fixed in code, not an
option, so no setting avoids it).  The encoder is its ``convnet_atari`` (the Nature CNN: 32, 64, 64
channels, then 512 units), which rlpyt's side of the row also uses.
``--env minatar_breakout``: MinAtar Breakout registered as a custom env (Gymnasium
wrapper of ``minatar.Environment``, channels first, sticky actions 0.1 as MinAtar's
default) with a custom encoder of the MinAtar paper's size (one 3x3 conv of 16
channels, then 128 units), the same batches.

Frames/s: Sample Factory logs the env steps its learner has trained on
(``summaries_use_frameskip`` off: agent steps) every few seconds; the result is the
rate between the first report with steps and the last (start-up excluded), printed
as ``PEER_RESULT {"steps_per_s": ...}``.

    python sf_appo.py --env atari_pong --steps 60000
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
import tempfile
import time

import gymnasium as gym
import numpy as np
import torch
from torch import nn

REPORT = re.compile(r"Total num frames: (\d+)")


class Marks(logging.Handler):
    """(time, env steps) of each of Sample Factory's periodic FPS reports."""

    def __init__(self):
        super().__init__()
        self.marks = []

    def emit(self, record):
        m = REPORT.search(record.getMessage())
        if m:
            self.marks.append((time.perf_counter(), int(m.group(1))))


class MinAtarGym(gym.Env):
    """MinAtar as a Gymnasium env: float32 observations ``[C, 10, 10]``."""

    def __init__(self, game="breakout", render_mode=None):
        from minatar import Environment

        self.env = Environment(game, sticky_action_prob=0.1)
        c = self.env.state_shape()[2]
        self.observation_space = gym.spaces.Box(0.0, 1.0, (c, 10, 10), np.float32)
        self.action_space = gym.spaces.Discrete(self.env.num_actions())
        self.render_mode = render_mode

    def _obs(self):
        return np.ascontiguousarray(self.env.state().transpose(2, 0, 1), dtype=np.float32)

    def reset(self, seed=None, options=None):
        if seed is not None:
            self.env.seed(seed)
        self.env.reset()
        return self._obs(), {}

    def step(self, action):
        reward, done = self.env.act(int(action))
        return self._obs(), float(reward), bool(done), False, {}


def make_atari(name, cfg, env_config, render_mode=None):
    """Sample Factory's own Atari env (``sf_examples.atari``), with the ALE envs
    registered first in whichever worker process builds it."""
    import gymnasium
    from ale_py.registration import register_v0_v4_envs
    from sf_examples.atari.atari_utils import make_atari_env

    # ale-py 0.12 registers its envs on import only with Gymnasium 1.x (its vector env
    # needs it); Sample Factory needs Gymnasium 0.29, so register the v4 ids here.
    if "PongNoFrameskip-v4" not in gymnasium.registry:
        register_v0_v4_envs()

    return make_atari_env(name, cfg, env_config, render_mode=render_mode)


def make_minatar_breakout(name, cfg, env_config, render_mode=None):
    return MinAtarGym("breakout", render_mode)


def make_minatar_encoder(cfg, obs_space):
    """The MinAtar paper's torso: one 3x3 conv of 16 channels, then 128 units."""
    from sample_factory.model.encoder import Encoder

    class MinAtarEncoder(Encoder):
        def __init__(self):
            super().__init__(cfg)
            c, h, w = obs_space["obs"].shape
            self.net = nn.Sequential(nn.Conv2d(c, 16, 3), nn.ReLU(), nn.Flatten(),
                                     nn.Linear(16 * (h - 2) * (w - 2), 128), nn.ReLU())

        def forward(self, obs_dict):
            return self.net(obs_dict["obs"])

        def get_out_size(self):
            return 128

    return MinAtarEncoder()


def register_minatar():
    # Module-level factories: Sample Factory pickles them into its worker processes.
    from sample_factory.algo.utils.context import global_model_factory
    from sample_factory.envs.env_utils import register_env

    register_env("minatar_breakout", make_minatar_breakout)
    global_model_factory().register_encoder_factory(make_minatar_encoder)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--env", default="atari_pong")
    p.add_argument("--steps", type=int, default=60_000, help="agent steps to train on")
    p.add_argument("--vtrace", action="store_true",
                   help="V-trace (fails in Sample Factory 2.1.1, see above)")
    a = p.parse_args()
    from sample_factory.envs.env_utils import register_env
    from sample_factory.train import run_rl
    from sample_factory.utils.utils import log
    from sf_examples.atari.train_atari import parse_atari_args

    torch.set_num_threads(1)
    if a.env.startswith("atari_"):
        register_env(a.env, make_atari)
    else:
        register_minatar()
    train_dir = tempfile.mkdtemp(prefix="sf_bench_")
    argv = [f"--env={a.env}", "--experiment=bench", f"--train_dir={train_dir}",
            "--device=cpu", "--num_workers=2", "--num_envs_per_worker=8",
            "--worker_num_splits=1", "--rollout=20", "--batch_size=320", "--num_epochs=1",
            "--num_batches_per_epoch=1", "--async_rl=True",
            # Input normalization on Atari (its default there), as the impala preset
            # that learns Pong has it; off on MinAtar, as ours; return normalization
            # off, as Impala has none.
            f"--normalize_input={a.env.startswith('atari_')}", "--normalize_returns=False",
            "--decorrelate_envs_on_one_worker=False",  # rlpyt's rows: no decorrelation.
            "--summaries_use_frameskip=False", "--save_every_sec=100000",
            "--save_best_every_sec=100000", "--experiment_summaries_interval=100000",
            f"--train_for_env_steps={a.steps}", "--seed=0"]
    if a.vtrace:  # V-trace in Sample Factory needs recurrence == rollout.
        argv += ["--with_vtrace=True", "--recurrence=20"]
    else:
        argv += ["--with_vtrace=False"]
    if not a.env.startswith("atari_"):
        argv += ["--env_frameskip=1", "--env_framestack=1"]
    cfg = parse_atari_args(argv)
    marks = Marks()
    log.addHandler(marks)
    status = run_rl(cfg)
    started = [m for m in marks.marks if m[1] > 0]
    if len(started) < 2:
        print(f"sf_appo: too few FPS reports ({marks.marks}); status {status}", file=sys.stderr)
        sys.exit(1)
    (t0, s0), (t1, s1) = started[0], started[-1]
    print("PEER_RESULT " + json.dumps(dict(steps_per_s=(s1 - s0) / (t1 - t0),
                                           reports=len(started), status=int(status))))


if __name__ == "__main__":
    main()
