"""DQN and Categorical DQN learn Acrobot-v1 with the presets a launch script gets
(``rlpyt train --algo dqn|cat_dqn --env Acrobot-v1``: CleanRL's classic-control
settings) and hold it at the end of their runs.

The bar is Gymnasium's solved threshold for Acrobot-v1, -100 (a policy that never
swings up scores -500, the random policy about the same).  A seed trains for at most
N_STEPS env steps, evaluating 5 greedy episodes every 10k; it passes when a mean
evaluation return reaches -100 and the mean of the two evaluations after that first
crossing is at least -110 (``helpers.EndOfRun``).  ``make learning`` only: ``make test``
has each algorithm's CartPole test, and these runs take minutes.
"""

from __future__ import annotations

import pytest
import torch
from helpers import EndOfRun, k_of_n, make_learning_only, train_preset

THRESHOLD = -100.0  # gymnasium.spec("Acrobot-v1").reward_threshold
N_STEPS = 250_000  # where the presets' epsilon reaches its floor
EVAL_INTERVAL = 10_000
MIN_PASSES, SEEDS = 2, range(3)
SOLVED = EndOfRun(THRESHOLD)


def train_seed(algo: str, seed: int, log_dir) -> list:
    return train_preset(["--algo", algo, "--env", "Acrobot-v1"], seed, N_STEPS, SOLVED,
                        log_dir, EVAL_INTERVAL, algo)


@pytest.mark.learning
@pytest.mark.timeout(3600)  # up to 3 seeds of 250k steps each, on a loaded machine
@make_learning_only("DQN's and C51's Acrobot tests (each has a CartPole test in make test)")
@pytest.mark.parametrize("algo", ["dqn", "cat_dqn"])
def test_q_learning_preset_learns_acrobot(algo, tmp_path):
    torch.set_num_threads(1)
    k_of_n(lambda seed: train_seed(algo, seed, tmp_path / str(seed)), list(SEEDS),
           MIN_PASSES, SOLVED, f"{algo} Acrobot-v1")
