"""Learning test: the ``ppo`` Atari preset leaves Pong's random policy within a small
budget, trained by the command a user types, and still holds its gain at the end of the
run.

Each seed is ``rlpyt train --algo ppo --env PongNoFrameskip-v4 --sampler-type cpu`` with
the preset's defaults (its thread count, CPU pinning) and no evaluation games; the score
is ``GameScoreAverage`` of its ``progress.csv`` rows: the mean whole-game score of the
latest 100 training games.  A random policy scores -20.7 (Mnih et al. 2015, Extended
Data Table 2).  The 10M-frame result and its wall time are on the results page, not here.
"""

import csv

import pytest
from helpers import EndOfRun, k_of_n, make_learning_only

from rlpyt.cli import main

pytestmark = pytest.mark.learning

RANDOM_SCORE = -20.7
N_STEPS = 1_500_000  # 6M frames, about 25 minutes of both cores a seed
# 2.2 points above random.  The two 10M-frame runs of docs/notes/pong.md (learning rate
# annealed over 2.5M steps) were at -16.4 and -16.6 near 1.5M steps; this run anneals
# over its own 1.5M.  The mean of its last 2 rows must be >= -20.35.
RISEN = EndOfRun(-18.5)


def _pong_history(tmp_path):
    def train_seed(seed: int) -> list[tuple[int, float]]:
        assert main(["train", "--algo", "ppo", "--env", "PongNoFrameskip-v4",
                     "--sampler-type", "cpu", "--n-steps", str(N_STEPS),
                     "--sampler.eval_n_envs", "0", "--seed", str(seed),
                     "--log-dir", str(tmp_path), "--run-id", str(seed),
                     "--snapshot-mode", "none"]) == 0
        with open(tmp_path / f"run_{seed}" / "progress.csv", newline="") as f:
            return [(int(row["CumSteps"]), float(row["GameScoreAverage"]))
                    for row in csv.DictReader(f) if row["GameScoreAverage"] not in ("", "nan")]

    return train_seed


@make_learning_only("PPO on Pong, 6M frames a seed (about 25 minutes of both cores)")
def test_ppo_pong_rises_from_the_random_score(tmp_path):
    """2 of 3 seeds reach -18.5 (from the random policy's -20.7) within 1.5M agent steps
    and end their runs within 10% of it."""
    assert RISEN.threshold >= RANDOM_SCORE + 2
    k_of_n(_pong_history(tmp_path), range(3), 2, RISEN, "PPO on PongNoFrameskip-v4")
