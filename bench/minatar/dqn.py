"""Reproduce the MinAtar paper's DQN (Young & Tian 2019, Section 4) with rlpyt's DQN.

The paper's settings (its ``examples/dqn.py``): the network of ``MinAtarDqnModel``
(3x3 conv of 16, 128 hidden units), batch 32, replay 100k, one gradient step per env
step (``replay_ratio=32``), a hard target copy every 1000 steps, 5000 uniformly random
steps before learning, epsilon 1 -> 0.1 over the next 100k steps, Huber loss, centered
RMSProp (lr 2.5e-4, squared-gradient decay 0.95, eps 0.01, no momentum), discount 0.99,
no gradient clipping, all 6 actions, sticky actions 0.1, difficulty ramping.

No momentum: the script that made the paper's figures defines a gradient momentum of 0.95
but never passes it to the optimizer (MinAtar pull request #37 later passed it; its
author called the 0.95 of the DQN Nature paper a decay of the first and second moments,
which centered RMSProp's single ``alpha`` already is).  Momentum 0.95 multiplies the
step about 20-fold: with it, Breakout at the paper's best step size stalled near 3
(docs/notes/minatar.md).
One env (``batch_B=1``); the sampler collects ``batch_T=4`` steps between the 4
gradient steps of each iteration.

Step size (``--step-size``): ``best`` (default) takes each game's best step size from
the paper's sensitivity figure (Figure 3; read into
``shared/reference/minatar/paper_final.csv``), which is most likely what its learning
curves show: Asterix and Seaquest 1.25e-4, Breakout 2e-3, Freeway 5e-4, Space
Invaders 2.5e-4.  ``paper`` is the 2.5e-4 of the paper's script for every game; a
number sets it for every game.

    nice -n 19 python bench/minatar/dqn.py --n-steps 5e6              # the paper's budget
    python bench/minatar/dqn.py --games Breakout --seeds 0 --n-steps 2e5
    python bench/minatar/report.py
"""

from __future__ import annotations

import argparse

from common import main_guard, parse_args, sweep

main_guard()

import torch  # noqa: E402

from rlpyt.agents.dqn.minatar import MinAtarDqnAgent  # noqa: E402
from rlpyt.algos.dqn.dqn import DQN  # noqa: E402
from rlpyt.envs.minatar import MinAtarEnv  # noqa: E402
from rlpyt.runners.minibatch_rl import MinibatchRl  # noqa: E402
from rlpyt.samplers.serial.sampler import SerialSampler  # noqa: E402

ALGO_KWARGS = dict(
    discount=0.99, batch_size=32, min_steps_learn=5_000, replay_size=100_000,
    replay_ratio=32, target_update_interval=1_000, learning_rate=2.5e-4,
    OptimCls=torch.optim.RMSprop,
    optim_kwargs=dict(alpha=0.95, momentum=0.0, eps=0.01, centered=True),
    eps_steps=105_000, delta_clip=1.0, clip_grad_norm=None,
)
AGENT_KWARGS = dict(eps_final=0.1, eps_eval=0.0)
PAPER_STEP_SIZE = 2.5e-4
# argmax of each game's DQN curve in the paper's step-size sensitivity figure (2^-13,
# 2^-9, 2^-11, 2^-13, 2^-12 on its grid of 2.5e-4 * 2^k)
BEST_STEP_SIZE = dict(Asterix=1.25e-4, Breakout=2e-3, Freeway=5e-4, Seaquest=1.25e-4,
                      SpaceInvaders=2.5e-4)


def step_size(game: str, choice: str) -> float:
    """The learning rate of ``game`` for ``--step-size`` ``choice``."""
    if choice == "best":
        return BEST_STEP_SIZE[game]
    if choice == "paper":
        return PAPER_STEP_SIZE
    return float(choice)


def add_args(p: argparse.ArgumentParser) -> None:
    def choice(text: str) -> str:
        if text in ("best", "paper"):
            return text
        try:
            if float(text) > 0:
                return text
        except ValueError:
            pass
        raise argparse.ArgumentTypeError(f"must be 'best', 'paper' or a positive number, "
                                         f"got {text!r}")
    p.add_argument("--step-size", type=choice, default="best",
                   help="RMSProp step size: 'best' per game from the paper's sensitivity "
                        "figure (default), 'paper' (2.5e-4 everywhere) or a number")


def make_runner(game: str, seed: int, args: argparse.Namespace, RunnerCls=MinibatchRl,
                SamplerCls=SerialSampler, batch_T: int = 4):
    """The paper's DQN on ``game``; ``async_dqn.py`` passes the asynchronous classes."""
    sampler = SamplerCls(EnvCls=MinAtarEnv, env_kwargs=dict(game=game), batch_T=batch_T,
                         batch_B=1, max_decorrelation_steps=0)
    algo = DQN(**{**ALGO_KWARGS, "learning_rate": step_size(game, args.step_size)})
    return RunnerCls(algo=algo, agent=MinAtarDqnAgent(**AGENT_KWARGS),
                     sampler=sampler, n_steps=args.n_steps, seed=seed,
                     log_interval_steps=args.log_interval, log_traj_window=args.traj_window,
                     checkpoint_interval_steps=args.checkpoint_interval)


if __name__ == "__main__":
    sweep(parse_args("dqn", __doc__.splitlines()[0], add_args=add_args), make_runner)
