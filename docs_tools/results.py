"""The results page (``docs/results.md``): its tables, made from the committed runs.

Committed runs live in ``docs/results/<family>/<algo>/<task>/run_<seed>/progress.csv``
(family ``classic``, ``minatar``, ``mujoco`` or ``atari``; a ``/`` in a task id becomes
``-``).  ``ROWS`` below declares every result the page reports: the task, the budget, the
``progress.csv`` column measured, what it is compared with and the command that makes
its runs.  For each row the script takes every run's value at the budget (its last row
at or before it, from runs that reached it) and writes our mean and spread over those
runs beside the published value, with a verdict:

* classic, MuJoCo, Atari: ``reached`` when our mean is at least the published mean
  less one published standard deviation (or a stated target, where the task has a
  threshold rather than a published run), else ``below``;
* MinAtar: each cell of ``bench/minatar/paper.py``'s comparison with the MinAtar paper
  (``verdict``: within 2 standard errors plus the reading error, or 15%).

The page's prose is written by hand; the tables sit between markers
(``<!-- results:<family>:begin -->`` ... ``<!-- results:<family>:end -->``) that this
script rewrites.  Curves (PNG, ``--plots``) go to ``docs/img/results/``; they are drawn
separately because matplotlib's output is not byte-stable.

    python docs_tools/results.py --write            # rewrite the tables in docs/results.md
    python docs_tools/results.py --write --plots    # ... and redraw the curves
    python docs_tools/results.py --check            # exit 1 if the page is out of date
"""

from __future__ import annotations

import argparse
import csv
import re
import statistics
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results"
PAGE = ROOT / "docs" / "results.md"
IMG = ROOT / "docs" / "img" / "results"
MINATAR_BENCH = ROOT / "bench" / "minatar"
for _path in (MINATAR_BENCH, ROOT / "docs_tools"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import paper  # noqa: E402  (bench/minatar/paper.py: the MinAtar paper and its rule)
import report  # noqa: E402  (bench/minatar/report.py: values at a budget, its curves)
import time_to_score as tts  # noqa: E402  (docs_tools/time_to_score.py: Atari's time to a score)

from rlpyt.utils.logging.run_table import RUN_COLUMNS, load_runs  # noqa: E402

FAMILIES = ("classic", "minatar", "popgym", "mujoco", "atari")
TIME_COLUMN = "CumTime (s)"


# ---- what the page reports ---------------------------------------------------------------
@dataclass(frozen=True)
class Published:
    """A row of ``docs/results/published.csv``, named by its first three columns."""

    task: str
    algorithm: str
    budget: int


@dataclass(frozen=True)
class Target:
    """A bar that is not a published run (a task's solved threshold, a stated goal).
    ``at_most``: the mean must stay at or under it (a baseline that should not learn)."""

    value: float
    what: str
    at_most: bool = False


@dataclass(frozen=True)
class Row:
    """One result of the page: an algorithm on a task at a budget.

    ``budget`` counts env steps as ``progress.csv``'s ``CumSteps`` does;
    ``frames_per_step`` converts them to frames for display (Atari's frame skip).
    ``command`` makes one run, with ``$S`` for the seed; ``reason`` is shown while no
    run has reached the budget.
    """

    family: str
    task: str
    algo: str
    label: str
    budget: int
    column: str
    measure: str
    bar: Published | Target
    command: str
    reason: str
    seeds: tuple[int, ...] = (0, 1, 2)
    frames_per_step: int = 1
    scale: Published | None = None  # Shown beside the bar for scale, not judged against.
    digits: int = 1  # decimals of the mean and std (2 for returns within [-1, 1])

    @property
    def folder(self) -> str:
        return f"{self.family}/{self.algo}/{task_folder(self.task)}"

    @property
    def run_glob(self) -> str:
        return f"{self.folder}/run_*"


def task_folder(task: str) -> str:
    return task.replace("/", "-")


def train_command(algo: str, env: str, family: str, n_steps: int | None = None) -> str:
    steps = f" --n-steps {n_steps}" if n_steps is not None else ""
    return (f"rlpyt train --algo {algo} --env {env}{steps} --seed $S "
            f"--log-dir docs/results/{family}/{algo}/{task_folder(env)} --run-id $S")


def atari_command(algo: str, env: str, n_steps: int, flags: str) -> str:
    """An Atari row's command: ``flags`` (runner, sampler, threads) first, and no
    evaluation games, which would take sampling time from a run timed to a score."""
    return train_command(algo, env, "atari", n_steps).replace(
        "rlpyt train", f"rlpyt train {flags}").replace(
        " --seed", " --sampler.eval_n_envs 0 --seed")


EVAL = "evaluation return (`ReturnAverage` of `rlpyt train`'s evaluation episodes)"
DETERMINISTIC = ("deterministic evaluation return (`ReturnAverage` of `rlpyt train`'s "
                 "evaluation episodes, mean action)")
CLASSIC_REASON = "the classic runs are made with the command shown (1-5 minutes each)"
MUJOCO_REASON = "runs in progress on the 2-core VM"


ATARI_SCORE = ("whole-game score of training games (`GameScoreAverage`: unclipped, a game "
               "ends at game over), mean of the latest 100 games; no evaluation games "
               "(`--sampler.eval_n_envs 0`), which would take sampling time")
POPGYM_TASK = "popgym-RepeatPreviousEasy-v0"
POPGYM_EVAL = EVAL + ", epsilon-greedy with the agent's evaluation epsilon"
POPGYM_REASON = "runs of a few minutes each on the 2-core VM, made with the command shown"


TRAIN_RETURN = ("training return (`TrainReturnAverage`: mean of the latest 100 training "
                "episodes, exploring), the measure of CleanRL's tables")


def cleanrl_q_row(task: str, algo: str, label: str, reason: str = CLASSIC_REASON) -> Row:
    """A classic ``dqn`` or ``cat_dqn`` preset at 500k steps against CleanRL's table."""
    return Row("classic", task, algo, label, 500_000, "TrainReturnAverage", TRAIN_RETURN,
               Published(task, f"{label} (CleanRL)", 500_000),
               train_command(algo, task, "classic", 500_000), reason)


def cleanrl_ppo_row(task: str, published_task: str) -> Row:
    """The MuJoCo ``ppo`` preset at 1M steps against CleanRL's run on ``published_task``."""
    return Row("mujoco", task, "ppo", "PPO", 1_000_000, "ReturnAverage",
               EVAL + ", the policy sampled",
               Published(published_task, "PPO (CleanRL)", 1_000_000),
               train_command("ppo", task, "mujoco", 1_000_000), MUJOCO_REASON)


ROWS: tuple[Row, ...] = (
    Row("classic", "CartPole-v1", "ppo", "PPO", 100_000, "ReturnAverage",
        EVAL + ", the policy sampled", Published("CartPole-v1", "PPO (CleanRL)", 500_000),
        train_command("ppo", "CartPole-v1", "classic"), CLASSIC_REASON),
    Row("classic", "CartPole-v1", "dqn", "DQN", 100_000, "ReturnAverage",
        EVAL + ", epsilon 0.001", Published("CartPole-v1", "DQN (CleanRL)", 500_000),
        train_command("dqn", "CartPole-v1", "classic"), CLASSIC_REASON),
    cleanrl_q_row("CartPole-v1", "dqn", "DQN"),
    cleanrl_q_row("CartPole-v1", "cat_dqn", "C51"),
    cleanrl_q_row("Acrobot-v1", "dqn", "DQN"),
    cleanrl_q_row("Acrobot-v1", "cat_dqn", "C51"),
    cleanrl_q_row("MountainCar-v0", "dqn", "DQN"),
    cleanrl_q_row("MountainCar-v0", "cat_dqn", "C51"),
    Row("classic", "Pendulum-v1", "sac", "SAC", 20_000, "ReturnAverage", DETERMINISTIC,
        Target(-200.0, "the task's solved threshold, not a published run"),
        train_command("sac", "Pendulum-v1", "classic"), CLASSIC_REASON),
    Row("classic", "Pendulum-v1", "td3", "TD3", 20_000, "ReturnAverage", DETERMINISTIC,
        Target(-200.0, "the task's solved threshold, not a published run"),
        train_command("td3", "Pendulum-v1", "classic"), CLASSIC_REASON),
    Row("mujoco", "HalfCheetah-v5", "sac", "SAC", 100_000, "ReturnAverage", DETERMINISTIC,
        Published("HalfCheetah-v3", "SAC", 100_000),
        train_command("sac", "HalfCheetah-v5", "mujoco", 100_000), MUJOCO_REASON),
    Row("mujoco", "HalfCheetah-v5", "td3", "TD3", 100_000, "ReturnAverage", DETERMINISTIC,
        Published("HalfCheetah-v1", "TD3", 100_000),
        train_command("td3", "HalfCheetah-v5", "mujoco", 100_000), MUJOCO_REASON),
    cleanrl_ppo_row("HalfCheetah-v5", "HalfCheetah-v4"),
    # Tianshou counts its steps after 25k uniformly random ones: its 100k is our 125k.
    Row("mujoco", "HalfCheetah-v5", "ddpg", "DDPG", 125_000, "ReturnAverage", DETERMINISTIC,
        Published("HalfCheetah-v3", "DDPG", 100_000),
        train_command("ddpg", "HalfCheetah-v5", "mujoco", 125_000), MUJOCO_REASON),
    Row("mujoco", "Hopper-v5", "sac", "SAC", 100_000, "ReturnAverage", DETERMINISTIC,
        Published("Hopper-v3", "SAC", 100_000),
        train_command("sac", "Hopper-v5", "mujoco", 100_000), MUJOCO_REASON),
    Row("mujoco", "HalfCheetah-v5", "a2c", "A2C", 1_000_000, "ReturnAverage", DETERMINISTIC,
        Published("HalfCheetah-v3", "A2C (SB3 zoo)", 1_000_000),
        train_command("a2c", "HalfCheetah-v5", "mujoco", 1_000_000), MUJOCO_REASON),
    cleanrl_ppo_row("Hopper-v5", "Hopper-v4"),
    cleanrl_ppo_row("Walker2d-v5", "Walker2d-v4"),
    cleanrl_ppo_row("Humanoid-v5", "Humanoid-v4"),
    cleanrl_ppo_row("Humanoid-v4", "Humanoid-v4"),
    Row("popgym", POPGYM_TASK, "r2d1", "R2D1", 500_000, "ReturnAverage", POPGYM_EVAL,
        Target(0.9, "the suit of 95% of the cards recalled; guessing scores -0.5, all "
                    "recalled 1.0"),
        train_command("r2d1", POPGYM_TASK, "popgym"), POPGYM_REASON, digits=2),
    Row("popgym", POPGYM_TASK, "dqn", "DQN, feed-forward", 500_000, "ReturnAverage",
        POPGYM_EVAL, Target(-0.4, "near guessing's -0.5: without memory the card of 4 "
                                  "steps ago is unknown", at_most=True),
        train_command("dqn", POPGYM_TASK, "popgym"), POPGYM_REASON, digits=2),
    Row("atari", "PongNoFrameskip-v4", "ppo", "PPO", 2_500_000, "GameScoreAverage",
        ATARI_SCORE, Target(18.0, "the target for 10M frames, not a published run"),
        atari_command("ppo", "PongNoFrameskip-v4", 2_500_000, "--sampler-type cpu"),
        "a 10M-frame run holds both cores for about 40 minutes",
        seeds=(0, 1), frames_per_step=4, scale=Published("PongNoFrameskip-v4", "PPO", 10_000_000)),
    Row("atari", "PongNoFrameskip-v4", "a2c", "A2C", 10_000_000, "GameScoreAverage",
        ATARI_SCORE, Published("PongNoFrameskip-v4", "A2C (SB3 zoo)", 10_000_000),
        atari_command("a2c", "PongNoFrameskip-v4", 10_000_000, "--torch-threads 2"),
        "at the 700 agent steps a second this 2-core VM trains the zoo's A2C "
        "(the Nature CNN's update on 80 frames takes most of it), a 10M-step run holds "
        "both cores for about 4 hours, longer than a work session here",
        seeds=(0, 1), frames_per_step=4),
    Row("atari", "PongNoFrameskip-v4", "impala", "IMPALA (`--runner async`)", 2_500_000,
        "GameScoreAverage", ATARI_SCORE, Target(18.0, "the target for 10M frames, not a "
                                                      "published run"),
        atari_command("impala", "PongNoFrameskip-v4", 2_500_000,
                      "--runner async --sampler-type cpu --torch-threads 1"),
        "a 10M-frame run holds both cores for about 80 minutes on this VM",
        seeds=(0, 1), frames_per_step=4),
    # The appo folder holds the time-to-score runs too (shorter budgets, and runs 0 to 7
    # of the preset's earlier settings): the row measures runs 8 and 9.
    Row("atari", "PongNoFrameskip-v4", "appo", "APPO (`--runner async`)", 2_500_000,
        "GameScoreAverage", ATARI_SCORE, Target(18.0, "the target for 10M frames, not a "
                                                      "published run"),
        atari_command("appo", "PongNoFrameskip-v4", 2_500_000,
                      "--runner async --sampler-type serial --torch-threads 1"
                      ).replace("--run-id $S", "--run-id $((S + 7))"),
        "a 10M-frame run holds both cores for about 35 minutes on this VM",
        seeds=(1, 2), frames_per_step=4),
)

# MinAtar: the paper's DQN (bench/minatar/dqn.py, each game's best step size) at these
# budgets; budgets above MINATAR_RUN_TO are the paper's but not run on this machine.
MINATAR_ALGO = "dqn"
MINATAR_BUDGETS = (250_000, 500_000, 1_000_000, 5_000_000)
MINATAR_RUN_TO = 1_000_000
MINATAR_COMMAND = ("python bench/minatar/dqn.py --games {game} --seeds 0 1 2 --n-steps 1e6 "
                   "--results-dir docs/results/minatar")


# ---- reading runs ------------------------------------------------------------------------
@dataclass(frozen=True)
class Measured:
    """A row's runs at its budget: one value per run that reached it."""

    values: tuple[float, ...]
    seconds: tuple[float, ...]  # Wall time to the budget, of the runs that log it.
    found: int  # Run folders found, reached or not.
    furthest: float  # The most env steps any run logged (0 without runs).


def runs_of(results: Path, glob: str) -> list[Path]:
    return sorted(p.parent for p in results.glob(f"{glob}/progress.csv"))


def row_runs(results: Path, row: Row) -> list[Path]:
    """The row's runs: those of its folder that ran the preset's own settings (a run
    whose command changed more than the budget is an ablation, in the notes)."""
    return [run for run in runs_of(results, row.run_glob) if not tts.other_settings(run)]


def header_and_last(run: Path) -> tuple[list[str], dict]:
    """The columns of ``run``'s progress.csv and its last row (empty without rows)."""
    table = load_runs(run, params=False)
    columns = [c for c in table.columns if c not in RUN_COLUMNS]
    return columns, table.iloc[-1].to_dict() if len(table) else {}


def measure(runs: list[Path], column: str, budget: int) -> Measured:
    """Each run's ``column`` at ``budget`` (report.py's rule: the last row at or before it,
    from runs that reached it) and the wall time to that row."""
    values, seconds, furthest = [], [], 0.0
    for run in runs:
        columns, last = header_and_last(run)
        furthest = max(furthest, float(last.get("CumSteps") or 0))
        value = report.return_at(run, budget, column) if last else None
        if value is None:
            continue
        values.append(value)
        if TIME_COLUMN in columns:
            seconds.append(report.return_at(run, budget, TIME_COLUMN))
    return Measured(tuple(values), tuple(s for s in seconds if s is not None), len(runs),
                    furthest)


def seconds_per_step(runs: list[Path]) -> float | None:
    """Mean wall time per env step over whole runs (None without timed runs)."""
    rates = []
    for run in runs:
        columns, last = header_and_last(run)
        if TIME_COLUMN in columns and last and float(last["CumSteps"]) > 0:
            rates.append(float(last[TIME_COLUMN]) / float(last["CumSteps"]))
    return statistics.mean(rates) if rates else None


@cache
def published_rows(path: Path) -> dict[Published, dict[str, str]]:
    with open(path, newline="") as f:
        return {Published(r["task"], r["algorithm"], int(r["budget"])): r
                for r in csv.DictReader(f)}


def published(results: Path, key: Published) -> dict[str, str]:
    rows = published_rows(results / "published.csv")
    if key not in rows:
        raise KeyError(f"{key} is not a row of {results / 'published.csv'}; rows: "
                       f"{sorted(rows, key=str)}")
    return rows[key]


# ---- verdicts ----------------------------------------------------------------------------
def bar_value(results: Path, bar: Published | Target) -> float:
    """The value our mean must reach: a published mean less one published standard
    deviation, or a target's value."""
    if isinstance(bar, Target):
        return bar.value
    row = published(results, bar)
    return float(row["return_mean"]) - float(row["return_spread"] or 0.0)


def reached(ours_mean: float, bar: float) -> bool:
    return ours_mean >= bar


def mean_std(values: tuple[float, ...]) -> tuple[float, float]:
    """Mean and sample standard deviation (n - 1; 0 for one value)."""
    std = statistics.stdev(values) if len(values) > 1 else 0.0
    return statistics.mean(values), std


# ---- formatting --------------------------------------------------------------------------
def count(n: float) -> str:
    """100000 -> 100k, 2500000 -> 2.5M."""
    if n >= 1e6:
        return f"{n / 1e6:g}M"
    if n >= 1e3:
        return f"{n / 1e3:g}k"
    return f"{n:g}"


def duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def budget_text(row: Row) -> str:
    if row.frames_per_step == 1:
        return f"{count(row.budget)} steps"
    return f"{count(row.budget * row.frames_per_step)} frames ({count(row.budget)} steps)"


def published_budget(entry: dict[str, str]) -> str:
    """A published budget in frames where its unit names a frame skip."""
    steps = int(entry["budget"])
    if frame_skip(entry) == 1:
        return f"{count(steps)} {entry['budget_unit']}"
    return f"{count(steps * frame_skip(entry))} frames ({count(steps)} agent steps)"


def published_short(entry: dict[str, str]) -> str:
    """Value ± spread and whose run it is, for a table cell."""
    spread = f" ± {entry['return_spread']}" if entry["return_spread"] else ""
    return (f"{entry['return_mean']}{spread}: {entry['algorithm']} on {entry['task']} at "
            f"{published_budget(entry)}")


def published_source(entry: dict[str, str]) -> str:
    """How the published value was measured and where it was read, for the notes."""
    seeds = f"{entry['seeds']} seed{'s' * (entry['seeds'] != '1')}"
    return f"{entry['metric']}, {entry['spread_kind']} ({seeds}); source: {entry['source']}"


def reference_text(results: Path, row: Row) -> str:
    if isinstance(row.bar, Target):
        text = f"target {row.bar.value:g}: {row.bar.what}"
    else:
        text = published_short(published(results, row.bar))
    if row.scale is not None:
        text += f"; for scale, {published_short(published(results, row.scale))}"
    return text


def verdict_text(results: Path, row: Row, measured: Measured) -> str:
    if not measured.values:
        found = (f"{measured.found} run{'s' * (measured.found > 1)} found, the furthest at "
                 f"{count(measured.furthest)} steps; " if measured.found else "")
        return f"not run yet: {found}{row.reason}"
    bar = bar_value(results, row.bar)
    why = ": published mean - 1 std" if isinstance(row.bar, Published) else ""
    mean, _ = mean_std(measured.values)
    if isinstance(row.bar, Target) and row.bar.at_most:
        if mean <= bar:
            return f"**as expected** (≤ {bar:g})"
        return f"**above** (> {bar:g}): the baseline learned what it should not"
    if reached(mean, bar):
        return f"**reached** (≥ {bar:g}{why})"
    return f"**below** (< {bar:g}{why})"


def seeds_text(mean: float, spread: float, n: int, digits: int = 1) -> str:
    """``mean ± spread (n seeds)``; one seed has no spread to show."""
    if n == 1:
        return f"{mean:.{digits}f} (1 seed)"
    return f"{mean:.{digits}f} ± {spread:.{digits}f} ({n} seeds)"


def ours_text(measured: Measured, digits: int = 1) -> str:
    if not measured.values:
        return "not run yet"
    n = len(measured.values)
    text = seeds_text(*mean_std(measured.values), n, digits)
    short = measured.found - n
    return text + (f"; {short} more run{'s' * (short > 1)} short of the budget" if short else "")


def note_line(results: Path, row: Row) -> str:
    """The row's command, its measures and sources, and where the published run differs
    from ours."""
    parts = [f"ours: {row.measure}"]
    for key in (row.bar, row.scale):
        if not isinstance(key, Published):
            continue
        entry = published(results, key)
        parts.append(f"{entry['algorithm']}: {published_source(entry)}")
        if entry["task"] != row.task:
            parts.append(f"published on {entry['task']}, ours on {row.task}")
        if int(entry["budget"]) * frame_skip(entry) != row.budget * row.frames_per_step:
            parts.append(f"published at {published_budget(entry)}, ours at {budget_text(row)}")
    return (f"- **{row.task}, {row.label}**: {seed_loop(row.command, row.seeds)}<br>"
            + "; ".join(parts) + ".")


def frame_skip(entry: dict[str, str]) -> int:
    """Frames per step of a published budget (1 unless its unit names a frame skip)."""
    skip = re.search(r"frame skip (\d+)", entry["budget_unit"])
    return int(skip.group(1)) if skip else 1


def seed_loop(command: str, seeds: tuple[int, ...]) -> str:
    """The shell line that runs ``command`` (``$S`` = seed) for every seed."""
    if len(seeds) == 1:
        return f"`{command.replace('$S', str(seeds[0]))}`"
    return f"`for S in {' '.join(map(str, seeds))}; do {command}; done`"


# ---- the tables --------------------------------------------------------------------------
# The commands sit in the notes under the table: in a column they made every row tall.
TASK_HEADER = ("| task | algorithm | budget | ours (mean ± std, N seeds) | IQM [95% CI] | "
               "published (value ± spread, source) | verdict | wall time a run |\n"
               "|---|---|---|---|---|---|---|---|")
IQM_MIN_RUNS = 3  # Fewer runs give no interval worth printing.


def iqm_text(values: tuple[float, ...]) -> str:
    """The interquartile mean with its 95% stratified-bootstrap interval (``rlpyt
    compare``'s statistics), for 3 or more runs."""
    if len(values) < IQM_MIN_RUNS:
        return "–"
    import numpy as np

    from rlpyt.experiments.group_stats import GroupScores, compare

    group = GroupScores("ours", np.asarray(values, dtype=float), [])
    value, low, high = compare([group], reps=10_000, seed=0).estimates["ours"]["iqm"]
    return f"{value:.4g} [{low:.4g}, {high:.4g}]"


def task_line(results: Path, row: Row) -> str:
    measured = measure(row_runs(results, row), row.column, row.budget)
    wall = duration(statistics.mean(measured.seconds)) if measured.seconds else "–"
    cells = [row.task, row.label, budget_text(row), ours_text(measured, row.digits),
             iqm_text(measured.values), reference_text(results, row),
             verdict_text(results, row, measured), wall]
    return "| " + " | ".join(cells) + " |"


def task_table(results: Path, family: str) -> str:
    """The family's table, the notes on its rows, then its curves."""
    rows = [r for r in ROWS if r.family == family]
    lines = [TASK_HEADER] + [task_line(results, r) for r in rows]
    notes = ["Each row's command and notes:", ""] + [note_line(results, r) for r in rows]
    figures = [figure_line(plot_name(r), f"{r.task}: ours against the published value")
               for r in unique_tasks(rows) if plotted_rows(results, r.task, rows)]
    blocks = ["\n".join(lines), "\n".join(notes)] + (["\n".join(figures)] if figures else [])
    return "\n\n".join(blocks)


def unique_tasks(rows: list[Row]) -> list[Row]:
    """The first row of each task, in order."""
    seen: dict[str, Row] = {}
    for row in rows:
        seen.setdefault(row.task, row)
    return list(seen.values())


def plotted_rows(results: Path, task: str, rows: list[Row]) -> list[Row]:
    """The rows of ``task`` that have runs to draw."""
    return [r for r in rows if r.task == task and row_runs(results, r)]


def plot_name(row: Row) -> str:
    return f"{row.family}_{task_folder(row.task)}.png"


def figure_line(name: str, caption: str) -> str:
    return f"![{caption}](img/results/{name})"


@cache
def best_step_sizes() -> dict[str, float]:
    """Each game's best DQN step size in the paper's sensitivity figure."""
    keys = {v: k for k, v in paper.GAME_KEYS.items()}
    with open(paper.REFERENCE / "paper_final.csv", newline="") as f:
        return {keys[r["game"]]: 2 ** float(r["best_log2_step"])
                for r in csv.DictReader(f) if r["algorithm"] == "dqn"}


def minatar_runs(results: Path, game: str) -> list[Path]:
    return report.runs_of(results / "minatar", MINATAR_ALGO, game)


def minatar_cell(results: Path, game: str, frames: int) -> str:
    runs = minatar_runs(results, game)
    values = [v for v in (report.return_at(r, frames) for r in runs) if v is not None]
    point = paper.paper_point(game, frames)
    if point is not None and not point.comparable:
        head = "not comparable (the paper's curve is still filling in its 100-episode mean)"
    elif not values:
        return minatar_missing(runs, frames)
    else:
        head = f"**{paper.verdict(values, point)}**"
    lines = [head]
    if values:
        mean, sem = paper.mean_sem(values)
        lines.append("ours " + seeds_text(mean, sem, len(values), digits=2))
    if point is not None:
        lines.append(f"paper {point.value:.2f} ± {point.reading_err:.2f}")
    return "<br>".join(lines)


def minatar_missing(runs: list[Path], frames: int) -> str:
    if frames <= MINATAR_RUN_TO:
        return "not run yet"
    rate = seconds_per_step(runs)
    estimate = (f": about {duration(rate * frames)} a run at the committed runs' speed"
                if rate is not None else "")
    return f"not run here{estimate}"


def minatar_line(results: Path, game: str) -> str:
    runs = minatar_runs(results, game)
    seconds = [s for s in (report.return_at(r, MINATAR_RUN_TO, TIME_COLUMN) for r in runs)
               if s is not None]
    wall = duration(statistics.mean(seconds)) if seconds else "–"
    cells = [game, f"{best_step_sizes()[game]:.3g}"]
    cells += [minatar_cell(results, game, frames) for frames in MINATAR_BUDGETS]
    cells += [wall]
    return "| " + " | ".join(cells) + " |"


def minatar_table(results: Path) -> str:
    budgets = [f"{count(f)} frames" + (" (the paper's budget, not run here)"
                                       if f > MINATAR_RUN_TO else "") for f in MINATAR_BUDGETS]
    header = ("| game | step size | " + " | ".join(budgets)
              + f" | wall time to {count(MINATAR_RUN_TO)} frames |")
    lines = [header, "|" + "---|" * (len(MINATAR_BUDGETS) + 3)]
    lines += [minatar_line(results, game) for game in paper.GAME_KEYS]
    commands = ["Each game's command:", ""] + [
        f"- **{g}**: `{MINATAR_COMMAND.format(game=g)}`" for g in paper.GAME_KEYS]
    figures = [figure_line(minatar_plot_name(g), f"MinAtar {g}: ours against the paper")
               for g in paper.GAME_KEYS if minatar_runs(results, g)]
    blocks = ["\n".join(lines), "\n".join(commands)] + (["\n".join(figures)] if figures else [])
    return "\n\n".join(blocks + [c51_table(results)])


# C51 beside the DQN rows: the `cat_dqn` MinAtar preset (the same schedule, C51's head)
# made by `rlpyt train`, its training return against our DQN's and the paper's DQN.
C51_ALGO = "cat_dqn"
C51_GAMES = ("Breakout", "Asterix")
C51_SEEDS = (0, 1)
C51_REASON: dict[str, str] = {}  # why a game has no runs yet


def c51_runs(results: Path, game: str) -> list[Path]:
    return runs_of(results, f"minatar/{C51_ALGO}/{task_folder('MinAtar/' + game)}/run_*")


def c51_cell(results: Path, game: str, frames: int) -> str:
    values = [v for v in (report.return_at(r, frames, "TrainReturnAverage")
                          for r in c51_runs(results, game)) if v is not None]
    if not values:
        return "not run yet"
    dqn = [v for v in (report.return_at(r, frames) for r in minatar_runs(results, game))
           if v is not None]
    point = paper.paper_point(game, frames)
    mean, sem = paper.mean_sem(values)
    lines = [f"**{paper.verdict(values, point)}**",
             "C51 " + seeds_text(mean, sem, len(values), digits=2)]
    if dqn:
        lines.append("our DQN {:.2f} ± {:.2f}".format(*paper.mean_sem(dqn)))
    if point is not None:
        lines.append(f"paper's DQN {point.value:.2f} ± {point.reading_err:.2f}")
    return "<br>".join(lines)


def c51_line(results: Path, game: str) -> str:
    runs = c51_runs(results, game)
    seconds = [s for s in (report.return_at(r, MINATAR_RUN_TO, TIME_COLUMN) for r in runs)
               if s is not None]
    cells = [game] + [c51_cell(results, game, f) for f in MINATAR_BUDGETS
                      if f <= MINATAR_RUN_TO]
    cells.append(duration(statistics.mean(seconds)) if seconds
                 else C51_REASON.get(game, "not run yet"))
    return "| " + " | ".join(cells) + " |"


def c51_table(results: Path) -> str:
    budgets = [f for f in MINATAR_BUDGETS if f <= MINATAR_RUN_TO]
    header = ("| game | " + " | ".join(f"{count(f)} frames" for f in budgets)
              + f" | wall time to {count(MINATAR_RUN_TO)} frames |")
    lines = ["C51 (`rlpyt train --algo cat_dqn`: the DQN schedule above with Adam and C51's "
             "head, 51 atoms on [-100, 100]) beside our DQN, judged against the paper's "
             "DQN by the same rule (no C51 curve is published at these budgets). Measure: "
             "`TrainReturnAverage`, the latest 100 training episodes.", "",
             header, "|" + "---|" * (len(budgets) + 2)]
    lines += [c51_line(results, game) for game in C51_GAMES]
    seeds = " ".join(map(str, C51_SEEDS))
    commands = ["C51's command (`$S` in " + seeds + "):", ""] + [
        f"- **{g}**: `{train_command(C51_ALGO, 'MinAtar/' + g, 'minatar', MINATAR_RUN_TO)}`"
        for g in C51_GAMES]
    figures = [figure_line(c51_plot_name(g), f"MinAtar {g}: C51 beside DQN")
               for g in C51_GAMES if c51_runs(results, g)]
    return "\n\n".join(["\n".join(lines), "\n".join(commands)] + figures)


def minatar_plot_name(game: str) -> str:
    return f"minatar_{MINATAR_ALGO}_vs_paper_{game}.png"


# ---- Atari: frames and wall time to a score ------------------------------------------------
def reach_text(reach: tts.Reach | None, end: tts.RunEnd) -> str:
    if reach is None:
        return f"not reached (by {count(round(end.frames, -5))} frames, {duration(end.seconds)})"
    return f"{count(round(reach.frames, -5))} frames, {duration(reach.seconds)}"


def score_lines(results: Path, game: tts.ScoreGame, contender: tts.ScoreRuns) -> list[str]:
    """One table line per run of ``contender`` (one saying none, without runs)."""
    runs = contender.runs(results)
    if not runs:
        return [f"| {contender.label} | | {contender.task} | not run yet |"
                + " |" * len(game.milestones)]
    lines = []
    for run in runs:
        rows = tts.read_rows(run)
        end = tts.run_end(rows, contender.column, contender.frames_per_step)
        if end is None:
            continue
        cells = [f"{contender.label}, {run.name.replace('_', ' ')}", tts.run_settings(run),
                 contender.task]
        cells += [reach_text(tts.first_reach(rows, contender.column, score,
                                             contender.frames_per_step), end)
                  for score in game.milestones]
        cells.append(f"{end.score:.1f} at {count(round(end.frames, -5))} frames, "
                     f"{duration(end.seconds)}")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def time_to_score_table(results: Path, game: tts.ScoreGame = tts.PONG) -> str:
    """Each run's frames and wall time to each milestone score of ``game``, ours and the
    peer's."""
    header = ("| run | seed, and settings beyond the preset | task | "
              + " | ".join(f"score {m:g}" for m in game.milestones)
              + " | end of run |\n|" + "---|" * (len(game.milestones) + 4))
    lines = [header]
    for contender in game.contenders:
        lines += score_lines(results, game, contender)
    commands = [f"- **{c.label}**: {c.command if c.command.startswith('the ') else f'`{c.command}`'}"
                + (f" ({c.note})" if c.note else "") for c in game.contenders]
    intro = (f"{game.name}: frames and wall time to a score (the first log row where the "
             "mean whole-game score of the latest 100 games reaches it; rows are the runs' "
             "log intervals apart), on this 2-core machine, one run at a time:")
    blocks = [intro, "\n".join(lines), "\n".join(commands)]
    if any(c.runs(results) for c in game.contenders):
        blocks.append(figure_line(game.plot, f"{game.name}: score against wall time"))
    return "\n\n".join(blocks)


def plot_time_to_score(results: Path, out: Path, game: tts.ScoreGame = tts.PONG) -> Path | None:
    """Score against wall time (hours), every run of every contender on ``game``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8.4, 3.8))
    drawn = False
    for i, contender in enumerate(game.contenders):
        for j, run in enumerate(contender.runs(results)):
            rows = tts.read_rows(run)
            points = [(float(r[tts.TIME_COLUMN]) / 3600, tts.score_of(r, contender.column))
                      for r in rows]
            points = [(t, s) for t, s in points if s is not None]
            if not points:
                continue
            other = tts.other_settings(run)  # dashed: not the preset's settings of today
            ax.plot(*zip(*points), color=f"C{i}", alpha=1.0 if j == 0 else 0.6,
                    linestyle="--" if other else "-",
                    label=f"{contender.label.split(' (')[0]}, {run.name}"
                          + (f" ({other})" if other else ""))
            drawn = True
    if not drawn:
        plt.close(fig)
        return None
    for score in game.milestones:
        ax.axhline(score, color="black", linestyle=":", linewidth=0.8)
    ax.set_xlabel("wall time (hours, 2 cores)")
    ax.set_ylabel("mean score of the latest 100 games")
    ax.set_title(f"{game.name}: score against wall time ({game.task})")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6, loc="center left", bbox_to_anchor=(1.01, 0.5))
    return report.save_figure(fig, out, game.plot)


def table(results: Path, family: str) -> str:
    """The generated block of ``family`` (its table, then its figures)."""
    if family == "minatar":
        return minatar_table(results)
    if family == "atari":
        return "\n\n".join([task_table(results, family)]
                           + [time_to_score_table(results, g) for g in tts.GAMES.values()])
    return task_table(results, family)


# ---- the page ----------------------------------------------------------------------------
def block_pattern(family: str) -> re.Pattern:
    return re.compile(rf"(<!-- results:{family}:begin -->\n)(.*?)(<!-- results:{family}:end -->)",
                      re.DOTALL)


def block_of(page: str, family: str) -> str | None:
    match = block_pattern(family).search(page)
    return match.group(2) if match else None


def rendered(block: str) -> str:
    return f"\n{block}\n\n"


def write_page(page: str, results: Path) -> str:
    """``page`` with every family's block replaced by what ``results`` gives."""
    for family in FAMILIES:
        if block_of(page, family) is None:
            raise ValueError(f"the page has no <!-- results:{family}:begin/end --> markers")
        text = rendered(table(results, family))
        page = block_pattern(family).sub(lambda m, t=text: m.group(1) + t + m.group(3), page)
    return page


def linked_images(block: str) -> list[str]:
    return re.findall(r"\]\(img/results/([^)]+)\)", block)


def check_page(page: str, results: Path, img: Path) -> str | None:
    """Why ``page`` is out of date with ``results`` (the first differing table, or a curve
    it links that is missing), or None when it is up to date."""
    for family in FAMILIES:
        block = block_of(page, family)
        if block is None:
            return f"the page has no <!-- results:{family}:begin/end --> markers"
        if block != rendered(table(results, family)):
            return (f"the {family} table differs from what the committed runs give "
                    f"(python docs_tools/results.py --write)")
        missing = [n for n in linked_images(block) if not (img / n).exists()]
        if missing:
            return (f"the {family} table links {img / missing[0]}, which is missing "
                    f"(python docs_tools/results.py --plots)")
    return None


# ---- curves ------------------------------------------------------------------------------
def plot_task(results: Path, rows: list[Row], out: Path) -> Path:
    """One task's rows: our mean with a min-max band per algorithm, each published value
    as a marker at its budget, each target as a dashed line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from rlpyt.cli.plot import aggregate, load_curve

    fig, ax = plt.subplots(figsize=(5.6, 3.8))
    for i, row in enumerate(rows):
        color = f"C{i}"
        runs = row_runs(results, row)
        curves = []
        for run in runs:
            xs, ys, _ = load_curve(str(run), row.column)
            curves.append(([x * row.frames_per_step for x in xs], ys))
        grid, mean, low, high = aggregate(curves, "minmax")
        ax.plot(grid, mean, color=color, label=f"rlpyt {row.label} ({len(runs)} runs)")
        ax.fill_between(grid, low, high, color=color, alpha=0.25)
        draw_published(ax, results, row, color)
    for target in dict.fromkeys(r.bar for r in rows if isinstance(r.bar, Target)):
        ax.axhline(target.value, color="black", linestyle="--", linewidth=1,
                   label=f"{target.value:g}: {target.what}")
    unit = "frames" if rows[0].frames_per_step > 1 else "env steps"
    ax.set_xlabel(unit)
    ax.set_ylabel(rows[0].column)
    ax.set_title(f"{rows[0].task}: mean and min-max over runs")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    return report.save_figure(fig, out, plot_name(rows[0]))


def draw_published(ax, results: Path, row: Row, color: str) -> None:
    """The row's published values as markers at their budgets, in the plot's x unit."""
    for key in (row.bar, row.scale):
        if isinstance(key, Published):
            entry = published(results, key)
            x = int(entry["budget"]) * frame_skip(entry)
            ax.errorbar([x], [float(entry["return_mean"])],
                        yerr=[float(entry["return_spread"] or 0)], color=color, marker="s",
                        capsize=3, linestyle="none",
                        label=f"{entry['algorithm']} on {entry['task']} (published)")


def plot_c51(results: Path, game: str, out: Path) -> Path:
    """C51's training return beside our DQN's on one MinAtar game (mean and min-max over
    seeds), with the paper's DQN dashed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from rlpyt.cli.plot import aggregate, load_curve

    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    for color, label, runs, column in (
            ("tab:orange", "rlpyt C51", c51_runs(results, game), "TrainReturnAverage"),
            ("tab:blue", "rlpyt DQN", minatar_runs(results, game), "ReturnAverage")):
        if not runs:
            continue
        curves = [load_curve(str(r), column)[:2] for r in runs]
        grid, mean, low, high = aggregate(curves, "minmax")
        ax.plot(grid, mean, color=color, label=f"{label} ({len(runs)} seeds)")
        ax.fill_between(grid, low, high, color=color, alpha=0.25)
    report.plot_paper_curve(ax, game, "dqn", color="black", linestyle="--", marker=".")
    ax.set_xlim(0, MINATAR_RUN_TO * 1.05)
    ax.set_title(f"MinAtar {game}: C51 beside DQN")
    ax.set_xlabel("frames")
    ax.set_ylabel("return, latest 100 training episodes")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return report.save_figure(fig, out, c51_plot_name(game))


def c51_plot_name(game: str) -> str:
    return f"minatar_{C51_ALGO}_{game}.png"


def plot_all(results: Path, out: Path) -> list[Path]:
    paths = []
    for family in FAMILIES:
        if family == "minatar":
            for game in paper.GAME_KEYS:
                if minatar_runs(results, game):
                    paths.append(report.plot_vs_paper(results / "minatar", MINATAR_ALGO, game,
                                                      out, spread="minmax"))
            paths += [plot_c51(results, g, out) for g in C51_GAMES if c51_runs(results, g)]
            continue
        rows = [r for r in ROWS if r.family == family]
        for first in unique_tasks(rows):
            drawn = plotted_rows(results, first.task, rows)
            if drawn:
                paths.append(plot_task(results, drawn, out))
    time_plots = [plot_time_to_score(results, out, g) for g in tts.GAMES.values()]
    return paths + [p for p in time_plots if p is not None]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="rewrite the tables in the page")
    mode.add_argument("--check", action="store_true",
                      help="exit 1 when the page differs from what the committed runs give")
    p.add_argument("--plots", action="store_true", help=f"draw the curves into {IMG}")
    p.add_argument("--results-dir", type=Path, default=RESULTS)
    p.add_argument("--page", type=Path, default=PAGE)
    p.add_argument("--img-dir", type=Path, default=IMG)
    args = p.parse_args(argv)
    if not (args.write or args.check or args.plots):
        p.error("say --write, --check or --plots")
    if args.plots:
        for path in plot_all(args.results_dir, args.img_dir):
            print(f"wrote {path}")
    page = args.page.read_text()
    if args.write:
        args.page.write_text(write_page(page, args.results_dir))
        print(f"wrote the tables of {args.page}")
    if args.check:
        problem = check_page(page, args.results_dir, args.img_dir)
        if problem is not None:
            print(f"{args.page}: {problem}", file=sys.stderr)
            return 1
        print(f"{args.page}: up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
