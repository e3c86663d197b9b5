"""The MinAtar paper comparison (``bench/minatar/paper.py``) and the paper's DQN on
Breakout checked against the paper's own curve.

The learning test trains the paper's DQN (``bench/minatar/dqn.py``: its settings, with
Breakout's best step size from the paper's sensitivity figure) for 100k frames, the
first point the paper's Figure 2 gives, and asks that the return over the latest 100
training episodes at 100k frames (the paper's measure) is at least the paper's value
minus the allowed difference of the comparison rule: 4.33 - max(reading error 0.55,
15% of 4.33) = 3.68, in 2 of 3 seeds.  The threshold comes from the paper, not from our
runs; 100k frames is the smallest budget at which the paper gives a value.
"""

from __future__ import annotations

import contextlib
import csv
import io
import sys
import time
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench" / "minatar"
sys.path.insert(0, str(BENCH))

import paper  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "reference" / "minatar"


def test_reference_copy_matches_shared_when_present():
    if not SHARED.exists():
        pytest.skip(f"{SHARED} is not beside this checkout")
    for name in ("paper_curves.csv", "paper_final.csv", "paper_sensitivity.csv"):
        assert (paper.REFERENCE / name).read_text() == (SHARED / name).read_text(), name


def test_paper_curve_values_and_freeway_start():
    breakout = paper.paper_point("Breakout", 1_000_000)
    assert (breakout.value, breakout.reading_err) == (9.25, 0.04)
    assert paper.paper_point("SpaceInvaders", 5_000_000).value == 43.22
    assert paper.paper_point("Breakout", 123) is None
    assert not paper.paper_point("Freeway", 100_000).comparable
    assert not paper.paper_point("Freeway", 250_000).comparable
    assert paper.paper_point("Freeway", 500_000).comparable
    assert paper.paper_point("Freeway", 250_000, "ac_lambda_0.8").comparable
    for game in paper.GAME_KEYS:
        frames = [p.frames for p in paper.paper_curve(game)]
        assert frames == sorted(frames) and frames[0] == 100_000 and frames[-1] == 5_000_000
    with pytest.raises(ValueError, match="game='Pong'"):
        paper.paper_curve("Pong")


def test_agreement_rule():
    point = paper.PaperPoint(frames=1, value=10.0, reading_err=0.5, status="ok",
                             comparable=True)
    # 15% of the paper's value dominates a small standard error.
    assert paper.agrees(11.5, 0.1, point) and not paper.agrees(11.51, 0.1, point)
    # 2 standard errors of ours plus the reading error dominate a large spread.
    assert paper.agrees(13.0, 1.25, point) and not paper.agrees(13.1, 1.25, point)
    assert paper.verdict([13.0, 13.0], point) == "above"
    assert paper.verdict([7.0, 7.2], point) == "below"
    assert paper.verdict([9.0, 10.5], point) == "agrees"
    assert paper.verdict([], point) == "-"
    hidden = paper.PaperPoint(frames=1, value=5.56, reading_err=0.1, status="ok",
                              comparable=False)
    assert paper.verdict([30.0], hidden) == "not comparable"


def test_paper_dqn_optimizer_has_no_momentum():
    """The script behind the paper's figures ran centered RMSProp without momentum (its
    GRAD_MOMENTUM was never passed on); with momentum 0.95, about a 20-fold step,
    Breakout at the best step size stalled near 3 (docs/notes/minatar.md)."""
    import dqn

    assert dqn.ALGO_KWARGS["optim_kwargs"] == dict(alpha=0.95, momentum=0.0, eps=0.01,
                                                    centered=True)


def test_mean_sem_plain_loop():
    values = [1.0, 2.0, 4.0, 7.0]
    mean = sum(values) / len(values)
    var = sum((v - mean) ** 2 for v in values) / (len(values) - 1)
    assert paper.mean_sem(values) == pytest.approx((mean, (var / len(values)) ** 0.5))
    assert paper.mean_sem([3.0]) == (3.0, 0.0)


GAME = "Breakout"
FRAMES = 100_000
SEEDS = range(3)
MIN_PASSES = 2


def _train_paper_dqn(seed: int, log_dir: Path) -> float:
    """The paper's DQN on Breakout for ``FRAMES``; returns ReturnAverage at FRAMES."""
    import argparse

    import dqn

    from rlpyt.utils.logging.context import logger_context

    args = argparse.Namespace(n_steps=FRAMES, log_interval=25_000, traj_window=100,
                              checkpoint_interval=0, step_size="best")
    runner = dqn.make_runner(GAME, seed, args)
    with contextlib.redirect_stdout(io.StringIO()), logger_context(
            str(log_dir), seed, "paper_dqn", override_prefix=True):
        runner.train()
    with open(log_dir / f"run_{seed}" / "progress.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert float(rows[-1]["CumSteps"]) == FRAMES
    return float(rows[-1]["ReturnAverage"])


@pytest.mark.learning
@pytest.mark.paper
def test_paper_dqn_breakout_matches_paper_at_100k(tmp_path):
    pytest.importorskip("minatar")
    point = paper.paper_point(GAME, FRAMES)
    threshold = point.value - paper.allowed_difference(point)
    passes, failures, lines = 0, 0, []
    for seed in SEEDS:
        if passes >= MIN_PASSES or failures > len(SEEDS) - MIN_PASSES:
            break  # the outcome is decided
        start = time.process_time()
        ret = _train_paper_dqn(seed, tmp_path)
        passes += ret >= threshold
        failures += ret < threshold
        lines.append(f"seed {seed}: {ret:.2f} at {FRAMES} frames (threshold {threshold:.2f} "
                     f"from the paper's {point.value}); {time.process_time() - start:.0f} s CPU")
        print(lines[-1], flush=True)
    assert passes >= MIN_PASSES, "\n".join(lines)
