"""Run a grid of experiments (settings x runs) on this machine's run slots, or on Ray.

``run_experiments`` keeps every run slot of an affinity code busy: it takes runs
from a queue (run id 0 of every setting first, then run id 1, ...) and starts
``python script <slot_affinity_code> <exp_dir>/<log_dir> <run_ID> [args]`` pinned
to the slot's CPUs. A failing run is reported and the others go on. Launched
again with the same ``exp_dir``, it skips runs that completed (see
``rlpyt.utils.launching.runs`` for the ``.done`` marker), so an interrupted grid
resumes where it stopped.

Layout of ``exp_dir``::

    experiments_tree.txt          the plan: script, affinity, settings, run ids
    experiments_summary.txt       the outcome of the latest launch
    <log_dir>/variant_config.json
    <log_dir>/run_<k>/            the script's outputs, launch.log, .done
"""

from __future__ import annotations

import collections
import dataclasses
import os
import signal
import sys
import time
import warnings
from collections.abc import Sequence

from rlpyt.utils.launching.affinity import (
    affinity_cpus,
    affinity_from_code,
    get_n_run_slots,
    get_run_slot,
    prepend_run_slot,
)
from rlpyt.utils.launching.cpus import LAUNCHER_CPUS_ENV, can_pin, layout_cpus
from rlpyt.utils.launching.runs import (
    RunProcess,
    RunRequest,
    RunResult,
    jsonable,
    read_done_marker,
    start_run,
)
from rlpyt.utils.launching.variant import save_variant
from rlpyt.utils.logging.context import get_log_dir
from rlpyt.utils.supervisor import interrupt_on_signals

__all__ = ["ExperimentSummary", "run_experiments"]

TREE_FILE = "experiments_tree.txt"
SUMMARY_FILE = "experiments_summary.txt"
BACKENDS = ("local", "ray")


@dataclasses.dataclass
class ExperimentSummary:
    """Outcome of ``run_experiments``.

    Attributes:
        exp_dir: the experiment directory.
        results: one ``RunResult`` per run of the grid, in launch order.
    """

    exp_dir: str
    results: list[RunResult]

    def count(self, status: str) -> int:
        """Runs with this status (``"done"``, ``"skipped"``, ``"failed"``, ...)."""
        return sum(r.status == status for r in self.results)

    @property
    def failed(self) -> list[RunResult]:
        """Runs that are not complete: failed, stopped or not started."""
        return [r for r in self.results if r.status not in ("done", "skipped", "held back")]

    @property
    def ok(self) -> bool:
        """True when every run is complete (done now or earlier)."""
        return not self.failed

    def text(self) -> str:
        lines = [
            f"Experiment summary for {self.exp_dir}: {len(self.results)} runs, "
            f"{self.count('done')} done, {self.count('skipped')} skipped (completed "
            f"earlier), {self.count('failed')} failed, {self.count('stopped')} stopped, "
            f"{self.count('not started')} not started"
            + (f", {self.count('held back')} held back ({MAX_RUNS_ENV})"
               if self.count("held back") else "")
        ]
        for r in self.results:
            if r.status in ("done", "skipped"):
                took = f"{r.seconds:7.1f}s" if r.status == "done" else "        "
                lines.append(f"  {r.status:<8} {took}  {r.name}")
            elif r.status in ("not started", "held back"):
                lines.append(f"  {r.status:<20}{r.name}")
            else:
                lines.append(
                    f"  {r.status.upper():<8} {r.seconds:7.1f}s  {r.name}  (exit code "
                    f"{r.returncode}; log: {r.log_path})"
                )
        return "\n".join(lines)


def run_experiments(
    script: str,
    affinity_code: str,
    experiment_title: str,
    runs_per_setting: int,
    variants: Sequence[dict],
    log_dirs: Sequence[str],
    common_args: Sequence | None = None,
    runs_args: Sequence[Sequence] | None = None,
    exp_dir: str | None = None,
    backend: str = "local",
    ray_address: str | None = None,
    python_executable: str | None = None,
    poll_interval: float = 0.2,
    verbose: bool = True,
) -> ExperimentSummary:
    """Run every setting ``runs_per_setting`` times, as many at once as there are slots.

    Args:
        script: train script, called as ``python script <slot_affinity_code>
            <exp_dir>/<log_dir> <run_ID> [*common_args, *runs_args[i]]``.
        affinity_code: layout of the machine into run slots (``encode_affinity``);
            with ``backend="ray"`` it gives the shape of one run (see below).
        experiment_title: name of the experiment, used for the default ``exp_dir``.
        runs_per_setting: runs of each setting, with run ids ``0..runs_per_setting-1``
            (the script typically derives its seed from the run id).
        variants: one nested dict per setting, saved as ``<log_dir>/variant_config.json``.
        log_dirs: one relative directory per setting (from ``make_variants``).
        common_args: extra arguments for every run.
        runs_args: extra arguments per setting (a sequence per entry of ``variants``).
        exp_dir: where the experiment lives (default ``<cwd>/data/local/<experiment_title>``).
            Launching again with the same ``exp_dir`` skips completed runs.
        backend: ``"local"`` (subprocesses on this machine's run slots) or ``"ray"``
            (one Ray task per run, asking for one run's CPUs and GPUs; needs the
            ``ray`` extra).
        ray_address: Ray cluster to join (``"auto"``, ``"ray://host:10001"``, ...);
            None starts a local Ray instance, unless Ray is already initialised in
            this process (then that one is used as it is).
        python_executable: interpreter for the scripts (default: this one).
        poll_interval: seconds between checks on running runs (local backend).
        verbose: print a line when a run starts or ends, and the summary.

    Returns:
        The ``ExperimentSummary`` (also printed and written to ``experiments_summary.txt``).
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend={backend!r} is invalid: use one of {BACKENDS}")
    if get_run_slot(affinity_code) is not None:
        raise ValueError(
            f"affinity_code={affinity_code!r} names a run slot; give the whole machine's "
            f"code (the launcher assigns slots)"
        )
    exp_dir = os.path.abspath(exp_dir or get_log_dir(experiment_title, date=False))
    requests = _plan_runs(
        script, runs_per_setting, variants, log_dirs, common_args, runs_args, exp_dir,
        python_executable or sys.executable,
    )
    # Check the layout fits this machine before anything is written.
    slots = _local_slots(affinity_code) if backend == "local" else None
    os.makedirs(exp_dir, exist_ok=True)
    _write_tree(exp_dir, experiment_title, script, affinity_code, backend, runs_per_setting,
                log_dirs)
    done_before, pending = _split_completed(requests)
    pending, held_back = _smoke_limit(pending)
    for request in pending:  # Saved up front: scripts load their variant at start.
        save_variant(request.variant, request.setting_dir)
    say = print if verbose else (lambda *a, **k: None)
    say(f"Experiment {experiment_title!r} in {exp_dir}: {len(requests)} runs, "
        f"{len(done_before)} already complete, {len(pending)} to run ({backend} backend)")
    results = {r.name: _skipped_result(r) for r in done_before}
    if held_back:
        say(f"{MAX_RUNS_ENV}={os.environ[MAX_RUNS_ENV]}: running {len(pending)} of them; "
            f"{len(held_back)} held back (a smoke run of the grid; launch again without "
            f"{MAX_RUNS_ENV} to run the rest)")
        results.update((r.name, RunResult(r.name, "held back", None, r.run_dir,
                                          os.path.join(r.run_dir, "launch.log")))
                       for r in held_back)

    def record(result: RunResult) -> None:
        results[result.name] = result

    try:
        # SIGTERM and SIGHUP stop the running runs as Ctrl-C does, not orphan them.
        with interrupt_on_signals(signal.SIGTERM, signal.SIGHUP):
            if backend == "local":
                _run_local(pending, slots, poll_interval, say, record)
            else:
                from rlpyt.utils.launching.ray_backend import run_on_ray

                run_on_ray(pending, affinity_code, exp_dir, ray_address, say, record)
    finally:
        summary = ExperimentSummary(exp_dir, [results.get(r.name) or _not_started(r)
                                              for r in requests])
        with open(os.path.join(exp_dir, SUMMARY_FILE), "w") as f:
            f.write(summary.text() + "\n")
        say(summary.text())
    return summary


def _plan_runs(
    script, runs_per_setting, variants, log_dirs, common_args, runs_args, exp_dir, python,
) -> list[RunRequest]:
    if not os.path.isfile(script):
        raise FileNotFoundError(f"script={script!r} is not a file")
    if not isinstance(runs_per_setting, int) or runs_per_setting < 1:
        raise ValueError(f"runs_per_setting={runs_per_setting!r} is invalid: use an int >= 1")
    variants, log_dirs = list(variants), [str(d) for d in log_dirs]
    if len(variants) != len(log_dirs):
        raise ValueError(f"{len(variants)} variants but {len(log_dirs)} log_dirs; give one each")
    if not variants:
        raise ValueError("variants is empty: nothing to run")
    if len(set(log_dirs)) != len(log_dirs):
        repeated = sorted({d for d in log_dirs if log_dirs.count(d) > 1})
        raise ValueError(f"log_dirs repeat {repeated}; each setting needs its own directory")
    for log_dir in log_dirs:
        if os.path.isabs(log_dir) or ".." in log_dir.split(os.sep):
            raise ValueError(f"log_dir {log_dir!r} must be a relative path inside exp_dir")
    runs_args = [()] * len(variants) if runs_args is None else list(runs_args)
    if len(runs_args) != len(variants):
        raise ValueError(f"{len(runs_args)} runs_args for {len(variants)} variants; give one each")
    common = tuple(str(a) for a in (common_args or ()))
    script = os.path.abspath(script)
    return [
        RunRequest(
            script=script,
            setting_dir=os.path.join(exp_dir, log_dir),
            log_dir=log_dir,
            run_ID=run_ID,
            variant=jsonable(variant),
            args=common + tuple(str(a) for a in run_args),
            python=python,
        )
        for run_ID in range(runs_per_setting)
        for variant, log_dir, run_args in zip(variants, log_dirs, runs_args)
    ]


def _split_completed(requests: list[RunRequest]) -> tuple[list[RunRequest], list[RunRequest]]:
    """Runs completed by an earlier launch, and the rest; a changed run is an error."""
    done, pending, changed = [], [], []
    for request in requests:
        marker = read_done_marker(request.run_dir)
        if marker is None:
            pending.append(request)
        elif marker.get("variant") != request.variant or marker.get("args") != list(request.args):
            changed.append(request.name)
        else:
            done.append(request)
    if changed:
        raise ValueError(
            f"{len(changed)} runs in this exp_dir completed with a different variant or "
            f"args than now (e.g. {changed[0]}); use a new exp_dir, or delete those runs to "
            f"run them again"
        )
    return done, pending


# Smoke runs of a grid: with this environment variable set to N, a launch runs only the
# first N runs still to do (with RLPYT_MAX_STEPS, each one short); the rest are held back.
MAX_RUNS_ENV = "RLPYT_MAX_RUNS"


def _smoke_limit(pending: list[RunRequest]) -> tuple[list[RunRequest], list[RunRequest]]:
    text = os.environ.get(MAX_RUNS_ENV, "").strip()
    if not text:
        return pending, []
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"environment variable {MAX_RUNS_ENV}={text!r} must be a positive "
                         f"integer (or unset)")
    return pending[:int(text)], pending[int(text):]


def _not_started(request: RunRequest) -> RunResult:
    return RunResult(request.name, "not started", None, request.run_dir,
                     os.path.join(request.run_dir, "launch.log"))


def _skipped_result(request: RunRequest) -> RunResult:
    return RunResult(request.name, "skipped", 0, request.run_dir,
                     os.path.join(request.run_dir, "launch.log"))


def _write_tree(exp_dir, title, script, affinity_code, backend, runs_per_setting, log_dirs):
    run_ids = " ".join(f"run_{k}" for k in range(runs_per_setting))
    lines = [
        f"Experiment: {title}",
        f"Launched: {time.strftime('%Y-%m-%d %H:%M:%S')} by process {os.getpid()}",
        f"Script: {os.path.abspath(script)}",
        f"Affinity code: {affinity_code} ({get_n_run_slots(affinity_code)} run slots)",
        f"Backend: {backend}",
        f"Settings: {len(log_dirs)}, runs per setting: {runs_per_setting}",
        "",
    ]
    printed: set[tuple[str, ...]] = set()
    for log_dir in log_dirs:
        parts = tuple(p for p in log_dir.split(os.sep) if p)
        for depth in range(len(parts)):
            if parts[: depth + 1] in printed:
                continue
            printed.add(parts[: depth + 1])
            leaf = depth == len(parts) - 1
            lines.append("  " * depth + parts[depth] + "/" + (f"  {run_ids}" if leaf else ""))
    with open(os.path.join(exp_dir, TREE_FILE), "w") as f:
        f.write("\n".join(lines) + "\n")


@dataclasses.dataclass(frozen=True)
class _Slot:
    code: str  # The slot's affinity code, given to the script.
    cpus: tuple[int, ...] | None  # CPUs to pin the run to (None: unpinned).
    env: dict[str, str]  # Environment for the script.


def _local_slots(affinity_code: str) -> list[_Slot]:
    """Resolve every slot on this machine (raising if the layout does not fit)."""
    cpu_ids = layout_cpus()
    codes = [prepend_run_slot(s, affinity_code) for s in range(get_n_run_slots(affinity_code))]
    affinities = [affinity_from_code(code, cpu_ids) for code in codes]
    pin = all(_pins(a) for a in affinities) and _can_pin_or_warn()
    slots = []
    for code, affinity in zip(codes, affinities):
        # The run resolves its code against the launcher's CPU list, not its pinned set.
        env = {LAUNCHER_CPUS_ENV: ",".join(map(str, cpu_ids))}
        if "OMP_NUM_THREADS" not in os.environ:  # Don't oversubscribe at import time.
            env["OMP_NUM_THREADS"] = str(_master_threads(affinity))
        slots.append(_Slot(code, affinity_cpus(affinity) if pin else None, env))
    return slots


def _run_local(
    pending: list[RunRequest], slots: list[_Slot], poll_interval: float, say, record,
) -> None:
    """Start runs on free slots until the queue is empty; ``record`` each result.

    On any exception (Ctrl-C, SIGTERM) the running runs are stopped, recorded as
    ``"stopped"``, and the exception propagates.
    """
    queue = collections.deque(pending)
    running: dict[int, RunProcess] = {}
    total, finished = len(pending), 0
    try:
        while queue or running:
            for index, slot in enumerate(slots):
                if index in running or not queue:
                    continue
                request = queue.popleft()
                running[index] = start_run(request, slot.code, slot.cpus, slot.env)
                where = f"cpus {_ranges(slot.cpus)}" if slot.cpus else "unpinned"
                say(f"[start] {request.name} on slot {index} ({where})")
            time.sleep(poll_interval)
            for index, run in list(running.items()):
                result = run.poll()
                if result is not None:
                    del running[index]
                    finished += 1
                    say(result.progress_line(finished, total))
                    record(result)
    except BaseException:
        if running:
            say(f"Stopping {len(running)} running runs ...")
        for run in running.values():  # Signal all first, so they wind down together.
            run.terminate()
        for run in running.values():
            result = run.stop()
            say(result.progress_line(finished, total))
            record(result)
        raise


def _can_pin_or_warn() -> bool:
    if can_pin():
        return True
    warnings.warn("This platform cannot pin processes to CPUs (e.g. macOS); runs start "
                  "unpinned and share all CPUs.", RuntimeWarning, stacklevel=3)
    return False


def _pins(affinity) -> bool:
    parts = affinity if isinstance(affinity, list) else [affinity]
    return all(p.get("set_affinity", True) for p in parts)


def _master_threads(affinity) -> int:
    if isinstance(affinity, list):
        return affinity[0]["master_torch_threads"]
    if "optimizer" in affinity:
        return affinity["optimizer"][0]["torch_threads"]
    return affinity["master_torch_threads"]


def _ranges(cpus: Sequence[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``"0-2,5"``."""
    spans: list[list[int]] = []
    for c in cpus:
        if spans and c == spans[-1][1] + 1:
            spans[-1][1] = c
        else:
            spans.append([c, c])
    return ",".join(f"{a}-{b}" if b > a else str(a) for a, b in spans)
