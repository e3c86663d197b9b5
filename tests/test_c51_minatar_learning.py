"""C51 learns MinAtar Breakout with the preset a launch script gets (``rlpyt train --algo
cat_dqn --env MinAtar/Breakout``: the MinAtar paper's DQN schedule with C51's head) and
holds it at the end of its run.

A uniformly random policy scores 0.52 +- 0.04 on this Breakout (``test_minatar_learning``).
A seed trains for at most N_STEPS env steps, evaluating greedily (the preset's 8 games)
every 10k; it passes when an evaluation reaches 4.0, about 8 times the random policy,
and the mean of the two evaluations after that first crossing is at least 3.6
(``helpers.EndOfRun``).  The committed 1M-frame runs (``docs/results/minatar/cat_dqn``)
evaluated 7.5 and 4.4 at 100k steps, where epsilon has just reached its floor.
``make learning`` only: each seed takes several minutes.
"""

from __future__ import annotations

import pytest
import torch
from helpers import EndOfRun, k_of_n, make_learning_only, train_preset

pytest.importorskip("minatar")

THRESHOLD = 4.0
N_STEPS = 150_000
EVAL_INTERVAL = 10_000
MIN_PASSES, SEEDS = 2, range(3)
SOLVED = EndOfRun(THRESHOLD)


def train_seed(seed: int, log_dir) -> list:
    return train_preset(["--algo", "cat_dqn", "--env", "MinAtar/Breakout"], seed, N_STEPS,
                        SOLVED, log_dir, EVAL_INTERVAL, "C51 MinAtar Breakout")


@pytest.mark.learning
@pytest.mark.timeout(3600)  # up to 3 seeds of 150k steps each, on a loaded machine
@make_learning_only("C51 on MinAtar Breakout (C51 has its CartPole test in make test)")
def test_c51_preset_learns_minatar_breakout(tmp_path):
    torch.set_num_threads(1)
    k_of_n(lambda seed: train_seed(seed, tmp_path / str(seed)), list(SEEDS), MIN_PASSES,
           SOLVED, "C51 MinAtar Breakout")
