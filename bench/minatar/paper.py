"""The MinAtar paper's published learning curves and the rule that compares runs with them.

K. Young and T. Tian (2019), "MinAtar: An Atari-Inspired Testbed for Thorough and
Reproducible Reinforcement Learning Experiments", arXiv:1903.03176, Figure 2: each
curve is the mean of 30 runs of the return over the latest 100 training episodes.  The
values were read from the figure with a reading error per value (``reference/``, whose
README says how far to trust them).

A cell *agrees* when our mean is within 2 standard errors of ours plus the reading
error of the paper's value, or within 15% of the paper's value (``agrees``).
"""

from __future__ import annotations

import csv
import math
import statistics
from dataclasses import dataclass
from functools import cache
from pathlib import Path

REFERENCE = Path(__file__).resolve().parent / "reference"
GAME_KEYS = dict(Asterix="asterix", Breakout="breakout", Freeway="freeway",
                 Seaquest="seaquest", SpaceInvaders="space_invaders")
COMPARE_AT = (250_000, 500_000, 1_000_000, 2_000_000, 5_000_000)
REL_TOL = 0.15
ALGORITHM_LABELS = {"dqn": "paper DQN", "ac_lambda_0.8": "paper AC(0.8)"}


@dataclass(frozen=True)
class PaperPoint:
    """One value read from the paper's figure."""

    frames: int
    value: float
    reading_err: float
    status: str
    comparable: bool  # False where the curve is not a learning result (Freeway's start)


@cache
def paper_curve(game: str, algorithm: str = "dqn") -> tuple[PaperPoint, ...]:
    """The paper's curve of ``algorithm`` on ``game`` (our game name, e.g. ``SpaceInvaders``)."""
    if game not in GAME_KEYS:
        raise ValueError(f"game={game!r} is not one of {sorted(GAME_KEYS)}")
    with open(REFERENCE / "paper_curves.csv", newline="") as f:
        rows = [r for r in csv.DictReader(f)
                if r["game"] == GAME_KEYS[game] and r["algorithm"] == algorithm]
    if not rows:
        raise ValueError(f"no paper curve for algorithm={algorithm!r} on {game}")
    return tuple(
        PaperPoint(frames=int(r["frames"]), value=float(r["return"]),
                   reading_err=float(r["reading_err"]), status=r["status"],
                   # Freeway DQN is a filled-in constant up to 0.25M frames (README).
                   comparable=not (game == "Freeway" and algorithm == "dqn"
                                   and int(r["frames"]) <= 250_000))
        for r in rows)


def paper_point(game: str, frames: int, algorithm: str = "dqn") -> PaperPoint | None:
    """The paper's value at exactly ``frames`` (None where none was read)."""
    return next((p for p in paper_curve(game, algorithm) if p.frames == frames), None)


def allowed_difference(point: PaperPoint, ours_sem: float = 0.0) -> float:
    """How far our mean may sit from ``point`` and still agree with it."""
    return max(2 * ours_sem + point.reading_err, REL_TOL * abs(point.value))


def agrees(ours_mean: float, ours_sem: float, point: PaperPoint) -> bool:
    return abs(ours_mean - point.value) <= allowed_difference(point, ours_sem)


def mean_sem(values: list[float]) -> tuple[float, float]:
    """Mean and standard error of the mean (0 for a single value)."""
    if len(values) < 2:
        return statistics.mean(values), 0.0
    return statistics.mean(values), statistics.stdev(values) / math.sqrt(len(values))


def verdict(values: list[float], point: PaperPoint | None) -> str:
    """``agrees``, ``above`` or ``below`` the paper; ``-`` where there is nothing to compare."""
    if point is None or not values:
        return "-"
    if not point.comparable:
        return "not comparable"
    mean, sem = mean_sem(values)
    if agrees(mean, sem, point):
        return "agrees"
    return "above" if mean > point.value else "below"
