"""R2D1 learns a task that needs memory, and a feed-forward DQN does not: POPGym's
RepeatPreviousEasy with the presets a launch script gets (``rlpyt train --algo r2d1
--env popgym-RepeatPreviousEasy-v0``, and ``--algo dqn`` beside it).

Each step the agent names the suit of the card dealt 4 steps earlier (+1/48 right,
-1/48 wrong, 51 steps a deck): guessing scores -0.5, recalling every card 1.0.  An R2D1
seed trains for at most N_STEPS env steps, evaluating every 25k; it passes when an
evaluation reaches 0.8 and the two after it average at least 0.72 (``EndOfRun``).  The
committed runs (``docs/results/popgym``) first evaluated 0.8 or more at 275k-350k steps
and ended at 0.99-1.0 at 500k; their DQN runs ended at -0.54 to -0.50.  The feed-forward DQN, trained as long, must end at most -0.3: a
policy that sees only the current card cannot beat guessing, and one that did would
mean the env leaked the card of 4 steps ago.  ``make learning`` only: a seed takes
about two minutes of CPU.
"""

from __future__ import annotations

import pytest
import torch
from helpers import EndOfRun, k_of_n, make_learning_only, train_preset

pytest.importorskip("popgym")

ENV = "popgym-RepeatPreviousEasy-v0"
THRESHOLD = 0.8
N_STEPS = 400_000
EVAL_INTERVAL = 25_000
MIN_PASSES, SEEDS = 2, range(3)
SOLVED = EndOfRun(THRESHOLD)
GUESSING_BAR = -0.3  # guessing scores -0.5


def _train(algo: str, seed: int, log_dir, end_of_run: EndOfRun) -> list:
    return train_preset(["--algo", algo, "--env", ENV], seed, N_STEPS, end_of_run, log_dir,
                        EVAL_INTERVAL, f"{algo} {ENV}")


@pytest.mark.learning
@pytest.mark.timeout(3600)
@make_learning_only("R2D1 on POPGym (R2D1 has its masked-CartPole test in make test)")
def test_r2d1_preset_recalls_the_card_of_four_steps_ago(tmp_path):
    torch.set_num_threads(1)
    k_of_n(lambda seed: _train("r2d1", seed, tmp_path / str(seed), SOLVED), list(SEEDS),
           MIN_PASSES, SOLVED, f"R2D1 {ENV}")


@pytest.mark.learning
@pytest.mark.timeout(1800)
@make_learning_only("the feed-forward baseline of the POPGym R2D1 test")
def test_a_feed_forward_dqn_stays_at_guessing(tmp_path):
    torch.set_num_threads(1)
    never = EndOfRun(float("inf"))  # train the whole budget
    history = _train("dqn", 0, tmp_path, never)
    final = sum(ret for _, ret in history[-2:]) / 2
    assert final <= GUESSING_BAR, (
        f"a feed-forward DQN ended at {final:.2f} on {ENV} (guessing -0.5): without memory "
        f"it cannot know the card of 4 steps ago; history {history}")
