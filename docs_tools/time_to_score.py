"""Frames and wall time to a score: the Atari tables that users compare libraries by.

A run reaches a score at its first log row whose score column (the mean whole-game score
of the latest 100 games) is at least that score; its frames (``CumSteps`` times the frame
skip) and wall time (``CumTime (s)``) there are the run's cost of the score.  The
resolution is the run's log interval.  ``GAMES`` names, for each game, its milestone
scores and the runs compared: ours (``rlpyt train``) and a peer's, whose progress.csv is
written with the same columns by ``bench/sample_factory/atari_to_score.py``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from rlpyt.cli.config import preset_config
from rlpyt.utils.logging.run_table import load_runs

TIME_COLUMN = "CumTime (s)"
STEP_COLUMN = "CumSteps"


@dataclass(frozen=True)
class ScoreRuns:
    """Runs of one contender on one task, read for their time to each milestone.

    ``folder`` is under the results directory (``<family>/<algo>/<task>``, runs in
    ``run_<seed>``); ``frames_per_step`` converts ``CumSteps`` to frames.
    """

    label: str
    task: str
    folder: str
    column: str
    frames_per_step: int
    command: str  # Shown in backticks unless it points elsewhere ("the command of ...").
    note: str = ""  # What the rows' settings column cannot say (the code a run ran), if any

    def runs(self, results: Path) -> list[Path]:
        """The committed run folders (``run_<id>`` with a progress.csv) under ``results``,
        in the order of their ids (run_2 before run_10)."""
        folders = [p.parent for p in (results / self.folder).glob("run_*/progress.csv")]
        return sorted(folders, key=_run_order)


def _run_order(folder: Path) -> tuple:
    """``run_<id>``'s sort key: a numeric id by its number, before any other name."""
    suffix = folder.name.removeprefix("run_")
    return (0, int(suffix), "") if suffix.isdigit() else (1, 0, suffix)


@dataclass(frozen=True)
class Reach:
    """Where a run first logged a score of at least the milestone."""

    frames: float
    seconds: float


@dataclass(frozen=True)
class RunEnd:
    frames: float
    seconds: float
    score: float


PPO_PONG = ScoreRuns("rlpyt PPO (the `ppo` preset)", "PongNoFrameskip-v4",
                     "atari/ppo/PongNoFrameskip-v4", "GameScoreAverage", 4,
                     "the command of the table above")
APPO_PONG = ScoreRuns(
    "rlpyt APPO (the `appo` preset, asynchronous)",
    "PongNoFrameskip-v4", "atari/appo/PongNoFrameskip-v4", "GameScoreAverage", 4,
    "for RUN in 8:2500000:1 9:2500000:2 10:1000000:0; do IFS=: read ID STEPS SEED <<< $RUN; "
    "rlpyt train --algo appo --env PongNoFrameskip-v4 --runner async --sampler-type serial "
    "--torch-threads 1 --n-steps $STEPS --sampler.eval_n_envs 0 --seed $SEED "
    "--log-dir docs/results/atari/appo/PongNoFrameskip-v4 --run-id $ID; done",
    note="runs 0 to 7 ran the preset's earlier settings, which their rows name; runs 3 on "
         "ran the faster input normalization and the channels-last learner "
         "(docs/notes/appo.md)")
IMPALA_PONG = ScoreRuns("rlpyt IMPALA (the `impala` preset, asynchronous)", "PongNoFrameskip-v4",
                        "atari/impala/PongNoFrameskip-v4", "GameScoreAverage", 4,
                        "the command of the table above")
SF_APPO_PONG = ScoreRuns("Sample Factory 2.1.1 APPO (its Atari defaults)", "PongNoFrameskip-v4",
                         "atari/sample-factory-appo/PongNoFrameskip-v4", "GameScoreAverage", 4,
                         "python bench/sample_factory/atari_to_score.py --game Pong --seed 0")
PPO_BREAKOUT = ScoreRuns(
    "rlpyt PPO (the `ppo` preset, 10M frames)", "BreakoutNoFrameskip-v4",
    "atari/ppo/BreakoutNoFrameskip-v4", "GameScoreAverage", 4,
    "for S in 0 1; do rlpyt train --sampler-type cpu --algo ppo --env BreakoutNoFrameskip-v4 "
    "--n-steps 2500000 --sampler.eval_n_envs 0 --seed $S --log-dir "
    "docs/results/atari/ppo/BreakoutNoFrameskip-v4 --run-id $S; done")
APPO_BREAKOUT = ScoreRuns(
    "rlpyt APPO (the `appo` preset, asynchronous)", "BreakoutNoFrameskip-v4",
    "atari/appo/BreakoutNoFrameskip-v4", "GameScoreAverage", 4,
    "for S in 0 1; do rlpyt train --algo appo --env BreakoutNoFrameskip-v4 --runner async "
    "--sampler-type serial --torch-threads 1 --n-steps 2500000 --sampler.eval_n_envs 0 "
    "--seed $S --log-dir docs/results/atari/appo/BreakoutNoFrameskip-v4 --run-id $((S + 2)); "
    "done",
    note="Pong's preset, unchanged: no per-game tuning; runs 0 and 1 (seeds 0 and 1) ran "
         "its earlier rate, which their rows name")
SF_APPO_BREAKOUT = ScoreRuns(
    "Sample Factory 2.1.1 APPO (its Atari defaults)", "BreakoutNoFrameskip-v4",
    "atari/sample-factory-appo/BreakoutNoFrameskip-v4", "GameScoreAverage", 4,
    "python bench/sample_factory/atari_to_score.py --game Breakout --seed 0")


@dataclass(frozen=True)
class ScoreGame:
    """One game's comparison: its milestone scores and the runs compared.

    ``ours`` are the runs whose slowest time to the last milestone caps the ``peer``'s
    wall time (``bench/sample_factory/atari_to_score.py``); ``contenders`` are every
    row of the table, the peer's last.
    """

    name: str  # Sample Factory's and the CLI's short name: "Pong", "Breakout"
    task: str
    milestones: tuple[float, ...]
    ours: ScoreRuns
    contenders: tuple[ScoreRuns, ...]

    @property
    def peer(self) -> ScoreRuns:
        return self.contenders[-1]

    @property
    def goal(self) -> float:
        return self.milestones[-1]

    @property
    def plot(self) -> str:
        return f"atari_{self.name.lower()}_score_vs_time.png"


# Pong: level with the built-in player, well ahead, solved.  Breakout: an eighth and a
# quarter of the 398 that the RL Baselines3 Zoo's PPO reaches at 40M frames.  On both
# games the `appo` preset, the fastest to a score, is what caps the peer.
PONG = ScoreGame("Pong", "PongNoFrameskip-v4", (0.0, 10.0, 18.0), APPO_PONG,
                 (PPO_PONG, APPO_PONG, IMPALA_PONG, SF_APPO_PONG))
BREAKOUT = ScoreGame("Breakout", "BreakoutNoFrameskip-v4", (50.0, 100.0), APPO_BREAKOUT,
                     (PPO_BREAKOUT, APPO_BREAKOUT, SF_APPO_BREAKOUT))
GAMES = {g.name: g for g in (PONG, BREAKOUT)}


def read_rows(run: Path) -> list[dict]:
    """The run's log rows (``rlpyt.load_runs``), oldest first."""
    return load_runs(run, params=False).to_dict("records")


def score_of(row: dict, column: str) -> float | None:
    """The row's score, or None where no game has ended yet (a missing column or NaN)."""
    value = row.get(column)
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) else value


def first_reach(rows: list[dict], column: str, score: float,
                frames_per_step: int) -> Reach | None:
    """The first row whose ``column`` is at least ``score`` (None if none is)."""
    for row in rows:
        value = score_of(row, column)
        if value is not None and value >= score:
            return Reach(float(row[STEP_COLUMN]) * frames_per_step, float(row[TIME_COLUMN]))
    return None


def _flat(values: dict, prefix: str = "") -> dict:
    """``{"a": {"b": 1}}`` as ``{"a.b": 1}``."""
    flat = {}
    for key, value in values.items():
        if isinstance(value, dict):
            flat.update(_flat(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


# The parts of a config whose settings a run's line names where they differ from the
# preset; the run's flags (sampler and runner type, torch threads) are the table's command.
_COMPONENTS = ("env", "algo", "agent", "sampler", "runner")
# Every timed run turns the evaluation off (the presets' docstring): saying so says nothing.
_UNSAID = ("sampler.eval_n_envs",)


def _params(run: Path) -> dict:
    """The run's params.json ({} without one)."""
    try:
        return json.loads((run / "params.json").read_text())
    except (OSError, ValueError):
        return {}


def changed_settings(run: Path) -> dict:
    """Every component setting the run's ``rlpyt train`` command changed from its preset,
    by its last key (``--algo.epochs 2``: ``{"epochs": 2}``); {} for a peer's run."""
    saved = _params(run)
    config = saved.get("config", {})
    if "rlpyt" not in saved.get("library", "rlpyt") or "algo_name" not in config:
        return {}
    preset = _flat(preset_config(config["algo_name"], config["env"]["id"]))
    ran = _flat({part: config.get(part, {}) for part in _COMPONENTS})
    return {key.split(".")[-1]: value for key, value in ran.items()
            if key not in _UNSAID and preset.get(key) != value}


def _settings_text(settings: dict) -> list[str]:
    return [f"{key} {value:,}" if isinstance(value, int) and abs(value) >= 10_000
            else f"{key} {value}" for key, value in settings.items()]


def run_settings(run: Path) -> str:
    """The run's seed and ``changed_settings``, as the table shows them; a peer's run
    gives its seed only; '' without a params.json."""
    saved = _params(run)
    seed = saved.get("config", {}).get("seed")
    if seed is None:  # Sample Factory's saved config may hold None; its argv has the seed.
        seed = next((arg.split("=", 1)[1] for arg in saved.get("argv", [])
                     if arg.startswith("--seed=")), None)
    return ", ".join(([f"seed {seed}"] if seed is not None else [])
                     + _settings_text(changed_settings(run)))


def other_settings(run: Path) -> str:
    """``changed_settings`` less the budget: the settings that make the run another
    configuration than its preset's ('' for the preset's own)."""
    settings = {k: v for k, v in changed_settings(run).items() if k != "n_steps"}
    return ", ".join(_settings_text(settings))


def run_end(rows: list[dict], column: str, frames_per_step: int) -> RunEnd | None:
    """The last row's frames, wall time and score (None without rows)."""
    if not rows:
        return None
    last = rows[-1]
    score = score_of(last, column)
    return RunEnd(float(last[STEP_COLUMN]) * frames_per_step, float(last[TIME_COLUMN]),
                  math.nan if score is None else score)
