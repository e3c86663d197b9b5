"""A2C learns MinAtar Breakout with the preset a launch script gets (``rlpyt train --algo
a2c --env MinAtar/Breakout``: 16 envs of 5 steps, learning rate 7e-4,
the MinAtar paper's actor-critic network) and holds it at the end of its run.

A uniformly random policy scores 0.52 +- 0.04 on this Breakout (``test_minatar_learning``).
A seed trains for at most N_STEPS env steps, evaluating every 10k steps on 64 games (the
preset's 8 games a row vary by 1-2 points at this stage, which the end-of-run check
would read as a collapse); it passes when an evaluation reaches 4.0, 7.7 times the
random policy, and the mean of the two evaluations after that first crossing is at
least 3.6 (``helpers.EndOfRun``).  The 64-game curves of seeds 0 and 1 rise to about 3
by 30k steps, stay at 3-3.5 to about 100k, then rise again: they first evaluated 4.0 or
more at 130k and 110k steps and ended at 4.5 and 4.3 (a threshold of 3.5, on the
plateau, failed seed 1 at its end).  ``make learning`` only: A2C has its CartPole test
in ``make test``; a seed takes about 20 s of CPU.
"""

from __future__ import annotations

import pytest
import torch
from helpers import EndOfRun, k_of_n, make_learning_only, train_preset

pytest.importorskip("minatar")

THRESHOLD = 4.0
N_STEPS = 300_000
EVAL_INTERVAL = 10_000
EVAL_GAMES = 64
MIN_PASSES, SEEDS = 2, range(3)
SOLVED = EndOfRun(THRESHOLD)


def train_seed(seed: int, log_dir) -> list:
    flags = ["--algo", "a2c", "--env", "MinAtar/Breakout",
             "--sampler.eval_max_trajectories", str(EVAL_GAMES)]
    return train_preset(flags, seed, N_STEPS, SOLVED, log_dir, EVAL_INTERVAL,
                        "A2C MinAtar Breakout")


@pytest.mark.learning
@pytest.mark.timeout(1800)  # up to 3 seeds of 200k steps each, on a loaded machine
@make_learning_only("A2C on MinAtar Breakout (A2C has its CartPole test in make test)")
def test_a2c_preset_learns_minatar_breakout(tmp_path):
    torch.set_num_threads(1)
    k_of_n(lambda seed: train_seed(seed, tmp_path / str(seed)), list(SEEDS), MIN_PASSES,
           SOLVED, "A2C MinAtar Breakout")
