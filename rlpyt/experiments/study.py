"""``rlpyt tune``: an Optuna study over ``rlpyt train``'s flags.

Each trial draws the searched flags (``rlpyt.experiments.search_space``) and runs
``rlpyt train`` with them once per seed, each seed a supervised process
(``rlpyt.utils.launching.runs``: its own process group, pinned to its share of the
CPUs, taken down with the tuner) writing ``<study_dir>/trial_<k>/run_<seed>/``.  The
tuner reads every seed's ``progress.csv`` as rows arrive and reports the objective so
far to Optuna at each row's ``CumSteps``; a trial the pruner stops has its runs
stopped (SIGTERM, then SIGKILL) and its folder marked ``.pruned``.

The objective of one seed is a column's mean over its last ``last`` rows, or over all
its rows (``auc``: the area under the curve, per row); a trial's is the mean over its
seeds.  The study lives in ``<study_dir>/study.db`` (SQLite) unless another storage URL
is given.  Started again on the same folder, the study goes on: finished trials are
kept, and a trial that was running when the tuner stopped (Ctrl-C, SIGTERM, or
``kill -9``) is marked failed, listed in the study's user attribute
``interrupted_trials``, and run again with the same parameters.  One tuner holds a study folder at a time.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import math
import os
import shlex
import socket
import sys
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from rlpyt.experiments.search_space import Dimension, SearchSpaceError, as_flags, suggest
from rlpyt.utils.launching.cpus import can_pin
from rlpyt.utils.launching.runs import RunProcess, RunRequest, start_run
from rlpyt.utils.process import available_cpus

__all__ = ["PRUNED_FILE", "PRUNERS", "SEARCHES", "TuneSettings", "best_command",
           "draw_flags", "open_study", "run_study", "seed_objective", "split_cpus",
           "study_lock", "write_plots"]

PRUNERS = ("median", "halving", "none")
SEARCHES = ("tpe", "random")
PRUNED_FILE = ".pruned"
LOCK_FILE = "tune.lock"
INTERRUPTED = "interrupted_trials"  # Study attribute: trials stopped mid-run, run again.


@dataclasses.dataclass(frozen=True)
class TuneSettings:
    """What a study searches and how.

    Attributes:
        study_dir: the study's folder (trial folders, ``study.db``, plots).
        trials: trials to finish, those of earlier starts included (retried ones once).
        train_flags: ``rlpyt train``'s fixed flags, as tokens.
        dims: the searched flags.
        space: a ``space(trial) -> dict`` function instead of ``dims`` (default None).
        space_file: the file ``space`` came from, recorded with the study.
        jobs: trials at once on this machine (default 1).
        seeds: runs per trial, seeds ``0 .. seeds-1`` (default 1).
        objective: the ``progress.csv`` column (default ``ReturnAverage``).
        last: rows at the end of a run the objective averages (default 3).
        auc: average over every row instead (default False).
        direction: ``maximize`` (default) or ``minimize``.
        pruner: ``median`` (Optuna's MedianPruner, default), ``halving``
            (successive halving) or ``none``.
        search: ``tpe`` (Optuna's TPE, default) or ``random``.
        startup_trials: trials drawn at random before TPE models the results
            (default 10, as the RL Zoo).
        prune_startup_trials: trials the median pruner lets finish before it prunes
            (default 5, Optuna's own; the RL Zoo uses ``startup_trials``).
        warmup_steps: env steps of a run before it may be pruned (default 0).
        storage: an Optuna storage URL (default None: ``sqlite:///<study_dir>/study.db``).
        study_name: the study's name in the storage (default: the folder's name).
        tune_seed: seed of the sampler (default 0).
        poll_seconds: how often the tuner reads the runs' logs (default 1).
    """

    study_dir: str
    trials: int
    train_flags: tuple[str, ...] = ()
    dims: tuple[Dimension, ...] = ()
    space: Callable | None = None
    space_file: str | None = None
    jobs: int = 1
    seeds: int = 1
    objective: str = "ReturnAverage"
    last: int = 3
    auc: bool = False
    direction: str = "maximize"
    pruner: str = "median"
    search: str = "tpe"
    startup_trials: int = 10
    prune_startup_trials: int = 5
    warmup_steps: int = 0
    storage: str | None = None
    study_name: str | None = None
    tune_seed: int = 0
    poll_seconds: float = 1.0

    def __post_init__(self):
        checks = [("trials", self.trials >= 1), ("jobs", self.jobs >= 1),
                  ("seeds", self.seeds >= 1), ("last", self.last >= 1),
                  ("startup_trials", self.startup_trials >= 0),
                  ("prune_startup_trials", self.prune_startup_trials >= 0),
                  ("warmup_steps", self.warmup_steps >= 0)]
        for name, ok in checks:
            if not ok:
                raise ValueError(f"{name}={getattr(self, name)!r} is out of range")
        for name, value, valid in (("direction", self.direction, ("maximize", "minimize")),
                                   ("pruner", self.pruner, PRUNERS),
                                   ("search", self.search, SEARCHES)):
            if value not in valid:
                raise ValueError(f"{name}={value!r}: valid are {', '.join(valid)}")
        has_space = self.space is not None or self.space_file is not None
        if has_space == bool(self.dims):
            raise ValueError("give searched flags (dims) or a space function, one of them")

    @property
    def storage_url(self) -> str:
        return self.storage or f"sqlite:///{os.path.abspath(self.study_dir)}/study.db"

    @property
    def name(self) -> str:
        return self.study_name or os.path.basename(os.path.abspath(self.study_dir))

    def plan(self) -> dict:
        """What defines the study's numbers; a start with another plan is refused."""
        return dict(train_flags=list(self.train_flags), dims=[d.spec() for d in self.dims],
                    keys=[d.key for d in self.dims], space_file=self.space_file,
                    seeds=self.seeds, objective=self.objective,
                    last=None if self.auc else self.last, auc=self.auc,
                    direction=self.direction)


# ---- a trial's objective --------------------------------------------------------------------
def seed_objective(values: Sequence[float], last: int, auc: bool) -> float:
    """One run's objective from its column's values so far (NaN rows skipped): their
    mean with ``auc``, else the mean of the last ``last``; NaN without values."""
    finite = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    if not finite:
        return math.nan
    chosen = finite if auc else finite[-last:]
    return sum(chosen) / len(chosen)


def split_cpus(cpus: Sequence[int], n: int) -> list[tuple[int, ...]]:
    """``n`` CPU sets over ``cpus``: equal contiguous shares when there are enough CPUs,
    else one CPU each, taken in turn (runs then share CPUs)."""
    cpus = tuple(cpus)
    if n <= len(cpus):
        share = len(cpus) // n
        return [cpus[i * share:(i + 1) * share] for i in range(n)]
    return [(cpus[i % len(cpus)],) for i in range(n)]


def draw_flags(trial, settings: TuneSettings) -> dict[str, Any]:
    """The searched flags' values for ``trial``: from the dims, or the space function."""
    if settings.space is None:
        return {d.key: suggest(trial, d) for d in settings.dims}
    drawn = settings.space(trial)
    if not isinstance(drawn, dict):
        raise SearchSpaceError(f"space(trial) of {settings.space_file} returned "
                               f"{type(drawn).__name__}; it must return a dict of flag keys "
                               f"to values")
    as_flags(drawn)  # Checks the keys.
    return drawn


@dataclasses.dataclass(frozen=True)
class _TrainRequest(RunRequest):
    """One seed of a trial: ``rlpyt train FLAGS --seed S --log-dir TRIAL_DIR --run-id S``."""

    def command(self, slot_affinity_code: str) -> list[str]:
        return [self.python, "-m", "rlpyt", "train", *self.args, "--seed", str(self.run_ID),
                "--log-dir", self.setting_dir, "--run-id", str(self.run_ID)]


class _TrialRuns:
    """A trial's runs, one per seed, and the objective reported from their logs."""

    def __init__(self, trial, flags: dict[str, Any], settings: TuneSettings,
                 cpu_sets: Sequence[tuple[int, ...] | None]):
        self.trial = trial
        self.settings = settings
        self.flags = flags
        self.dir = os.path.join(settings.study_dir, f"trial_{trial.number:04d}")
        os.makedirs(self.dir, exist_ok=True)
        args = (*settings.train_flags, *as_flags(flags))
        with open(os.path.join(self.dir, "trial.json"), "w") as f:
            json.dump(dict(number=trial.number, flags=flags, command=train_command(args)), f,
                      indent=2, default=str)
        self.runs: list[RunProcess] = [
            start_run(_TrainRequest(script="", setting_dir=self.dir,
                                    log_dir=os.path.basename(self.dir), run_ID=seed,
                                    variant=flags, args=args), "-", cpus)
            for seed, cpus in zip(range(settings.seeds), cpu_sets)]
        self.results: dict[int, Any] = {}
        self.reported = 0
        self._tables: dict[int, tuple] = {}  # seed -> (the file's size and mtime, its rows)

    def poll(self) -> str | None:
        """``"pruned"``, ``"failed"`` or ``"complete"`` once decided, else None."""
        for seed, run in enumerate(self.runs):
            if seed not in self.results and (result := run.poll()) is not None:
                self.results[seed] = result
        if any(r.status != "done" for r in self.results.values()):
            return "failed"
        prune = self._report_new_rows()
        if len(self.results) == len(self.runs):
            return "complete"
        return "pruned" if prune else None

    def _report_new_rows(self) -> bool:
        """Report the rows every seed has reached; True when the pruner stops the trial."""
        tables = [self._rows(seed) for seed in range(len(self.runs))]
        common = min(len(t) for t in tables)
        for i in range(self.reported, common):
            value = self._value([t.iloc[:i + 1] for t in tables])
            step = int(tables[0]["CumSteps"].iloc[i])
            self.reported = i + 1
            if math.isnan(value):
                continue
            self.trial.report(value, step)
            planned = tables[0]["n_steps"].iloc[i]
            last_row = planned is not None and not math.isnan(planned) and step >= planned
            if (step >= self.settings.warmup_steps and not last_row  # a finished run stays
                    and self.trial.should_prune()):
                self.pruned_at = (step, value)
                return True
        return False

    def _rows(self, seed: int):
        import pandas as pd

        from rlpyt.utils.logging.run_table import load_runs

        run_dir = os.path.join(self.dir, f"run_{seed}")
        try:
            stat = os.stat(os.path.join(run_dir, "progress.csv"))
        except FileNotFoundError:
            return pd.DataFrame(columns=["CumSteps"])
        key = (stat.st_size, stat.st_mtime_ns)
        cached = self._tables.get(seed)
        if cached is not None and cached[0] == key:  # polled every second: parse on change
            return cached[1]
        table = load_runs(run_dir, params=False)
        if self.settings.objective not in table and len(table):
            raise KeyError(f"{run_dir}/progress.csv has no column {self.settings.objective!r}"
                           f"; its columns: {', '.join(map(str, table.columns[5:]))}")
        self._tables[seed] = (key, table)
        return table

    def _value(self, tables) -> float:
        column = self.settings.objective
        values = [seed_objective(t[column].tolist(), self.settings.last, self.settings.auc)
                  for t in tables]
        return math.nan if any(math.isnan(v) for v in values) else sum(values) / len(values)

    def final_value(self) -> float:
        return self._value([self._rows(seed) for seed in range(len(self.runs))])

    def stop(self) -> None:
        for run in self.runs:  # Signal all first, so they wind down together.
            run.terminate()
        for seed, run in enumerate(self.runs):
            if seed not in self.results:
                self.results[seed] = run.stop()

    def failure(self) -> str:
        bad = [r for r in self.results.values() if r.status != "done"]
        return "; ".join(f"{r.name} exit code {r.returncode}: {_last_line(r.log_path)} "
                         f"(log {r.log_path})" for r in bad)


def _last_line(path: str) -> str:
    try:
        with open(path, errors="replace") as f:
            lines = [line.strip() for line in f if line.strip()]
    except OSError:
        return "no log"
    return lines[-1][:300] if lines else "nothing printed"


# ---- the study ---------------------------------------------------------------------------------
def train_command(args: Sequence[str]) -> str:
    return "rlpyt train " + shlex.join(args)


def best_command(study, settings: TuneSettings) -> str | None:
    """The best finished trial as a ready ``rlpyt train`` command (None without one)."""
    try:
        best = study.best_trial
    except ValueError:
        return None
    return train_command([*settings.train_flags, *as_flags(best.user_attrs["flags"])])


@contextlib.contextmanager
def study_lock(study_dir: str) -> Iterator[None]:
    """Hold the study folder for this tuner (``tune.lock``); a ``RuntimeError`` names the
    tuner that holds it already."""
    path = os.path.join(study_dir, LOCK_FILE)
    with open(path, "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            holder = f.read().strip() or "another tuner"
            raise RuntimeError(f"study folder {study_dir} is in use by {holder}; one tuner "
                               f"runs a study folder at a time") from None
        f.seek(0)
        f.truncate()
        f.write(f"{_tuner_id()}\n")
        f.flush()
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _tuner_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _make_study(settings: TuneSettings):
    import optuna

    if settings.search == "tpe":
        sampler = optuna.samplers.TPESampler(n_startup_trials=settings.startup_trials,
                                             seed=settings.tune_seed, multivariate=True)
    else:
        sampler = optuna.samplers.RandomSampler(seed=settings.tune_seed)
    if settings.pruner == "median":
        pruner = optuna.pruners.MedianPruner(n_startup_trials=settings.prune_startup_trials)
    elif settings.pruner == "halving":
        pruner = optuna.pruners.SuccessiveHalvingPruner()
    else:
        pruner = optuna.pruners.NopPruner()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        study = optuna.create_study(storage=settings.storage_url, study_name=settings.name,
                                    sampler=sampler, pruner=pruner,
                                    direction=settings.direction, load_if_exists=True)
    plan = json.loads(json.dumps(settings.plan()))
    recorded = study.user_attrs.get("plan")
    if recorded is None:
        study.set_user_attr("plan", plan)
    elif recorded != plan:
        changed = sorted(k for k in set(plan) | set(recorded) if plan.get(k) != recorded.get(k))
        raise ValueError(f"study {settings.name!r} in {settings.storage_url} was made with "
                         f"other settings ({', '.join(changed)} differ); give a new --study "
                         f"folder, or the same settings to go on")
    return study


def _retry_later(study, number: int, say) -> None:
    """Mark an interrupted trial failed, list it as interrupted (it does not count as
    ended) and queue its parameters to run again."""
    import optuna

    study.tell(number, state=optuna.trial.TrialState.FAIL)
    study.set_user_attr(INTERRUPTED, sorted({*study.user_attrs.get(INTERRUPTED, ()), number}))
    trial = study.trials[number]
    study.enqueue_trial(trial.params, user_attrs={"retry_of": number}, skip_if_exists=False)
    flags = trial.user_attrs.get("flags")
    say(f"[trial {number} interrupted] queued to run again"
        + (f" ({_describe(flags)})" if flags else ""))


def _recover_interrupted(study, say) -> None:
    """Trials left running by a tuner of this machine whose process is gone (``kill
    -9``).  Tuners of other machines recover their own when they start again."""
    import optuna
    import psutil

    for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
        host, _, pid = t.user_attrs.get("tuner", "").rpartition(":")
        if host == socket.gethostname() and pid.isdigit() and not psutil.pid_exists(int(pid)):
            _retry_later(study, t.number, say)


def _taken(study) -> int:
    """Trials that ended (interrupted ones aside) or are running, by any tuner."""
    import optuna

    states = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED,
              optuna.trial.TrialState.FAIL, optuna.trial.TrialState.RUNNING)
    interrupted = set(study.user_attrs.get(INTERRUPTED, ()))
    return sum(1 for t in study.get_trials(deepcopy=False, states=states)
               if t.number not in interrupted)


def _describe(flags: dict) -> str:
    return ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                     for k, v in flags.items())


def run_study(settings: TuneSettings, say: Callable[[str], None] = print,
              worker: bool = False):
    """Run (or go on with) the study until ``settings.trials`` trials have ended; returns
    the ``optuna.Study``.  Ctrl-C or SIGTERM stop the running trials' processes, mark
    those trials interrupted (run again by the next start) and propagate.

    ``worker``: one of several tuners sharing the study's storage (``run_study_on_ray``):
    the driver holds the study folder's lock and recovers interrupted trials, so a worker
    does neither."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    os.makedirs(settings.study_dir, exist_ok=True)
    with contextlib.nullcontext() if worker else study_lock(settings.study_dir):
        study = open_study(settings, say, recover=not worker)
        _run_trials(study, settings, say)
    return study


def open_study(settings: TuneSettings, say: Callable[[str], None] = print, recover=True):
    """The study, made or loaded (a start with another plan is refused), with the trials
    of tuners that are gone marked interrupted and queued again (``recover``)."""
    study = _make_study(settings)
    if recover:
        _recover_interrupted(study, say)
    return study


def _run_trials(study, settings: TuneSettings, say) -> None:
    sets = split_cpus(available_cpus(), settings.jobs * settings.seeds) if can_pin() else None
    running: dict[int, _TrialRuns] = {}
    try:
        while True:
            for job in range(settings.jobs):
                if job not in running and _taken(study) < settings.trials:
                    running[job] = _start_trial(study, settings, job, sets, say)
            if not running:
                break
            time.sleep(settings.poll_seconds)
            for job, runs in list(running.items()):
                outcome = runs.poll()
                if outcome is not None:
                    del running[job]
                    _finish_trial(study, runs, outcome, say)
    except BaseException:
        for runs in running.values():
            runs.stop()
            _retry_later(study, runs.trial.number, say)
        raise


def _start_trial(study, settings: TuneSettings, job: int, sets, say) -> _TrialRuns:
    import optuna

    trial = study.ask()
    trial.set_user_attr("tuner", _tuner_id())
    seeds = settings.seeds
    cpu_sets = sets[job * seeds:(job + 1) * seeds] if sets else [None] * seeds
    try:
        flags = draw_flags(trial, settings)
        trial.set_user_attr("flags", flags)
        runs = _TrialRuns(trial, flags, settings, cpu_sets)
    except BaseException:  # A failing space function or start: no trial left running.
        study.tell(trial, state=optuna.trial.TrialState.FAIL)
        raise
    trial.set_user_attr("trial_dir", os.path.abspath(runs.dir))
    retry = trial.user_attrs.get("retry_of")
    again = f", again for trial {retry}" if retry is not None else ""
    say(f"[trial {trial.number} start{again}] {_describe(flags)}")
    return runs


def _finish_trial(study, runs: _TrialRuns, outcome: str, say) -> None:
    import optuna

    number = runs.trial.number
    if outcome == "pruned":
        runs.stop()
        step, value = runs.pruned_at
        with open(os.path.join(runs.dir, PRUNED_FILE), "w") as f:
            json.dump(dict(step=step, value=value), f)
        study.tell(runs.trial, state=optuna.trial.TrialState.PRUNED)
        say(f"[trial {number} PRUNED] at {step} steps, {runs.settings.objective} "
            f"{value:.4g}")
        return
    if outcome == "failed":
        runs.stop()
        study.tell(runs.trial, state=optuna.trial.TrialState.FAIL)
        say(f"[trial {number} FAILED] {runs.failure()}")
        return
    value = runs.final_value()
    if math.isnan(value):
        study.tell(runs.trial, state=optuna.trial.TrialState.FAIL)
        say(f"[trial {number} FAILED] no {runs.settings.objective} values in its runs "
            f"({runs.dir})")
        return
    study.tell(runs.trial, value)
    best = study.best_trial
    say(f"[trial {number} done] {runs.settings.objective} {value:.4g}; best so far: trial "
        f"{best.number}, {best.value:.4g}")


def write_plots(study, out_dir: str) -> list[str]:
    """The study's history and (with two finished trials) parameter importances as PNGs
    in ``out_dir``; returns their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import optuna
    from optuna.visualization import matplotlib as oplt

    done = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
    if not done:
        return []
    written = []
    plots = [("history.png", oplt.plot_optimization_history)]
    if len(done) >= 2 and any(len(t.distributions) for t in done):
        plots.append(("importances.png", oplt.plot_param_importances))
    for name, plot in plots:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                ax = plot(study)
            except (RuntimeError, ValueError) as e:  # e.g. no parameter varies
                print(f"rlpyt tune: {name} not drawn: {e}", file=sys.stderr)
                continue
        path = os.path.join(out_dir, name)
        ax.figure.tight_layout()
        ax.figure.savefig(path, dpi=100)
        plt.close(ax.figure)
        written.append(path)
    return written
