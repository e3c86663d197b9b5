"""Which of several groups of runs is better, with the statistics the field advises for
a few runs each (Agarwal et al. 2021, "Deep Reinforcement Learning at the Edge of the
Statistical Precipice"), as their ``rliable`` package defines them:

- each group's **mean** and **interquartile mean** (IQM: the mean of the middle half of
  the runs, robust to one outlying seed) with 95% stratified-bootstrap confidence
  intervals (percentile method);
- the **probability of improvement** of each group over each other, P(X > Y): the
  chance that a run of X scores above a run of Y (Mann-Whitney U over all pairs), with
  its bootstrap interval;
- **performance profiles**: the fraction of runs scoring above each threshold, with
  bootstrap bands, drawn to a PNG.

A run's score is one ``progress.csv`` column at a budget: its last row at or before
``at`` env steps (runs that did not reach it are left out and counted), or its last row.
One task per comparison: the runs of every group must be of one env id.

The statistics are computed here with numpy rather than by importing ``rliable``:
``rliable`` 1.2 needs ``arch < 8``, which does not import beside pandas 3.
``bench/rliable/rliable_check.py`` runs both on the same scores in a venv of their own.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Comparison", "GroupScores", "bootstrap_indices", "compare", "group_scores", "iqm",
           "plot_profiles", "probability_of_improvement", "resample", "score_distribution"]

CONFIDENCE = 0.95


@dataclass
class GroupScores:
    """One group's run scores, and what was left out."""

    name: str
    scores: np.ndarray  # [runs]
    run_dirs: list[str]
    short: list[str] = field(default_factory=list)  # runs that did not reach the budget
    env_ids: set = field(default_factory=set)


@dataclass
class Comparison:
    """``compare``'s result: per group ``{"mean": (value, low, high), "iqm": ...}``, and
    per ordered pair ``(x, y)`` the probability that X improves on Y ``(p, low, high)``."""

    estimates: dict[str, dict[str, tuple[float, float, float]]]
    improvement: dict[tuple[str, str], tuple[float, float, float]]
    reps: int


def group_scores(name: str, runs, column: str, at: int | None = None) -> GroupScores:
    """The scores of the runs in ``runs`` (a ``load_runs`` table) at ``at`` env steps (the
    last row at or before it), or at each run's last row; a ``KeyError`` names a column
    no run has, and the nearest ones."""
    if column not in runs.columns:
        import difflib

        near = difflib.get_close_matches(column, [str(c) for c in runs.columns], n=3)
        raise KeyError(f"column {column!r} is in no run of {name}"
                       + (f"; did you mean {', '.join(near)}?" if near else ""))
    scores, kept, short = [], [], []
    for run_dir, rows in runs.groupby("run_dir", sort=True):
        rows = rows.dropna(subset=[column])
        if at is not None:
            reached = rows["CumSteps"].max() >= at if len(rows) else False
            rows = rows[rows["CumSteps"] <= at]
            if not reached or rows.empty:
                short.append(run_dir)
                continue
        if rows.empty:
            short.append(run_dir)
            continue
        scores.append(float(rows[column].iloc[-1]))
        kept.append(run_dir)
    env_ids = set(runs["env.id"].dropna()) if "env.id" in runs else set()
    return GroupScores(name, np.asarray(scores, dtype=float), kept, short, env_ids)


def iqm(scores: np.ndarray) -> float:
    """The interquartile mean: the mean of the scores left after a quarter is cut from
    each end (``scipy.stats.trim_mean(scores, 0.25)`` over all runs and tasks)."""
    from scipy.stats import trim_mean

    return float(trim_mean(np.asarray(scores, dtype=float), 0.25, axis=None))


def probability_of_improvement(x: np.ndarray, y: np.ndarray) -> float:
    """P(X > Y) of ``x`` ``[runs_x, tasks]`` over ``y`` ``[runs_y, tasks]``: per task the
    fraction of run pairs where X scores higher, ties counting a half (the Mann-Whitney
    U statistic over ``runs_x * runs_y``), averaged over tasks."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    above = (x[:, None, :] > y[None, :, :]).mean(axis=(0, 1))
    ties = (x[:, None, :] == y[None, :, :]).mean(axis=(0, 1))
    return float(np.mean(above + 0.5 * ties))


def bootstrap_indices(rng: np.random.Generator, n_runs: int, n_tasks: int,
                      reps: int) -> np.ndarray:
    """``[reps, n_runs, n_tasks]`` run indices, drawn with replacement within each task
    (the stratified bootstrap: every task keeps its own number of runs)."""
    return rng.integers(0, n_runs, size=(reps, n_runs, n_tasks))


def resample(scores: np.ndarray, index: np.ndarray) -> np.ndarray:
    """``scores`` ``[runs, tasks]`` at ``index`` ``[reps, runs, tasks]``, task by task."""
    return scores[index, np.arange(scores.shape[1])]


def percentile_interval(samples: np.ndarray) -> tuple[float, float]:
    tail = 100 * (1 - CONFIDENCE) / 2
    low, high = np.percentile(samples, [tail, 100 - tail])
    return float(low), float(high)


def _iqm_each(samples: np.ndarray) -> np.ndarray:
    """The IQM of each ``[runs, tasks]`` sample of ``samples`` ``[reps, runs, tasks]``."""
    from scipy.stats import trim_mean

    return trim_mean(samples.reshape(len(samples), -1), 0.25, axis=1)


def compare(groups: Sequence[GroupScores], reps: int = 10_000, seed: int = 0) -> Comparison:
    """Means, IQMs and probabilities of improvement with ``reps`` stratified-bootstrap
    samples and percentile intervals; ``seed`` fixes the samples."""
    for group in groups:
        if len(group.scores) < 1:
            raise ValueError(f"{group.name}: no run has a score to compare")
    env_ids = set().union(*(g.env_ids for g in groups))
    if len(env_ids) > 1:
        raise ValueError(f"runs of several tasks ({', '.join(sorted(env_ids))}): compare "
                         f"one task at a time")
    rng = np.random.default_rng(seed)
    matrices = {g.name: g.scores.reshape(-1, 1) for g in groups}  # [runs, 1 task]
    samples = {name: resample(m, bootstrap_indices(rng, *m.shape, reps))
               for name, m in matrices.items()}
    estimates = {}
    for name, m in matrices.items():
        means = samples[name].mean(axis=(1, 2))
        estimates[name] = dict(mean=(float(m.mean()), *percentile_interval(means)),
                               iqm=(iqm(m), *percentile_interval(_iqm_each(samples[name]))))
    improvement = {}
    for x, y in itertools.permutations(matrices, 2):
        sx, sy = samples[x], samples[y]  # independent resamples of each group's runs
        above = (sx[:, :, None, :] > sy[:, None, :, :]).mean(axis=(1, 2))
        ties = (sx[:, :, None, :] == sy[:, None, :, :]).mean(axis=(1, 2))
        boot = (above + 0.5 * ties).mean(axis=1)
        improvement[(x, y)] = (probability_of_improvement(matrices[x], matrices[y]),
                               *percentile_interval(boot))
    return Comparison(estimates, improvement, reps)


def score_distribution(scores: np.ndarray, taus: np.ndarray) -> np.ndarray:
    """The fraction of all runs' scores above each threshold in ``taus``."""
    return (np.asarray(scores, dtype=float).reshape(-1, 1) > taus[None, :]).mean(axis=0)


def plot_profiles(groups: Sequence[GroupScores], out: str, column: str, reps: int = 2_000,
                  seed: int = 0) -> None:
    """Performance profiles (the fraction of runs above each score) with 95% bootstrap
    bands, one curve per group."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    every = np.concatenate([g.scores for g in groups])
    low, high = float(every.min()), float(every.max())
    pad = 0.05 * (high - low or 1.0)
    taus = np.linspace(low - pad, high + pad, 101)
    rng = np.random.default_rng(seed)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for group in groups:
        m = group.scores.reshape(-1, 1)
        boot = resample(m, bootstrap_indices(rng, *m.shape, reps))
        profiles = (boot.reshape(reps, -1, 1) > taus[None, None, :]).mean(axis=1)
        tail = 100 * (1 - CONFIDENCE) / 2
        band = np.percentile(profiles, [tail, 100 - tail], axis=0)
        line, = ax.plot(taus, score_distribution(m, taus), label=group.name)
        ax.fill_between(taus, band[0], band[1], color=line.get_color(), alpha=0.2)
    ax.set_xlabel(f"{column} (tau)")
    ax.set_ylabel("fraction of runs with score > tau")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(loc="best")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
