"""One run of a grid: where it writes, how it starts and stops, how it counts as done.

A run of setting ``<log_dir>`` with id ``k`` lives in ``<exp_dir>/<log_dir>/run_<k>/``.
The train script is called as ``python script <slot_affinity_code> <exp_dir>/<log_dir> k
[args]`` and writes its own files there (``progress.csv``, ``params.json``, ...); the
launcher adds

- ``launch.log``: everything the script printed (stdout and stderr);
- ``.done``: written only when the script exits with code 0. A run whose directory
  holds ``.done`` is complete and is skipped when the grid is launched again.

A run dir left by an attempt that did not finish continues from its latest whole-run
checkpoint (``checkpoints/itr_<N>/``, see ``rlpyt.runners.checkpoint_files``): the
script is started with ``RLPYT_RESUME=1``, so its ``logger_context`` appends to the
run's files and the runner's ``train()`` loads the checkpoint.  A dir without a checkpoint
is moved to ``<exp_dir>/<log_dir>/failed_attempts/run_<k>_<time>/`` before the run
starts again, so a new attempt never appends to stale files.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

from rlpyt.utils.supervisor import LAUNCHER_STOPS_RUN, signal_group, stop_group

__all__ = [
    "DONE_FILE",
    "LOG_FILE",
    "RunProcess",
    "RunRequest",
    "RunResult",
    "execute_run",
    "read_done_marker",
    "resumable",
    "set_aside_stale_run_dir",
    "start_run",
]

DONE_FILE = ".done"
LOG_FILE = "launch.log"
FAILED_ATTEMPTS_DIR = "failed_attempts"
SUPERVISOR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "run_supervisor.py")


@dataclasses.dataclass(frozen=True)
class RunRequest:
    """Everything needed to start one run, on this machine or a Ray worker.

    Attributes:
        script: path of the train script.
        setting_dir: ``<exp_dir>/<log_dir>``, the script's ``log_dir`` argument.
        log_dir: the setting's directory name relative to ``exp_dir``.
        run_ID: the run's id within its setting (its seed index).
        variant: the setting's variant (saved as ``variant_config.json``).
        args: extra command-line arguments (strings) after the run id.
        python: interpreter that runs the script.
    """

    script: str
    setting_dir: str
    log_dir: str
    run_ID: int
    variant: dict
    args: tuple[str, ...] = ()
    python: str = sys.executable

    @property
    def run_dir(self) -> str:
        return os.path.join(self.setting_dir, f"run_{self.run_ID}")

    @property
    def name(self) -> str:
        return f"{self.log_dir}/run_{self.run_ID}" if self.log_dir else f"run_{self.run_ID}"

    def command(self, slot_affinity_code: str) -> list[str]:
        return [
            self.python, self.script, slot_affinity_code, self.setting_dir, str(self.run_ID),
            *self.args,
        ]


@dataclasses.dataclass
class RunResult:
    """What became of one run.

    Attributes:
        name: ``<log_dir>/run_<id>``.
        status: ``"done"``, ``"failed"``, ``"skipped"`` (completed by an earlier launch),
            ``"stopped"`` (the launcher was interrupted while it ran) or ``"not started"``
            (the launcher was interrupted before it started).
        returncode: the script's exit code (None if it never ran here).
        run_dir: the run's directory.
        log_path: the run's ``launch.log``.
        seconds: wall time of the run.
    """

    name: str
    status: str
    returncode: int | None
    run_dir: str
    log_path: str
    seconds: float = 0.0

    def progress_line(self, finished: int, total: int) -> str:
        """One line for the launcher's output, e.g. ``[3/8 done] lr_1/run_0 in 4.2s``."""
        if self.status == "done":
            return f"[{finished}/{total} done] {self.name} in {self.seconds:.1f}s"
        return (f"[{finished}/{total} {self.status.upper()}] {self.name} (exit code "
                f"{self.returncode}); log: {self.log_path}")


def read_done_marker(run_dir: str) -> dict | None:
    """The ``.done`` record of a completed run, or None if the run is not complete."""
    path = os.path.join(run_dir, DONE_FILE)
    if not os.path.isfile(path):
        return None
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None  # A marker cut short by a crash does not count.


def _write_done_marker(request: RunRequest, slot_code: str, seconds: float) -> None:
    record = dict(
        returncode=0,
        finished=time.strftime("%Y-%m-%d %H:%M:%S"),
        seconds=round(seconds, 3),
        slot_affinity_code=slot_code,
        variant=request.variant,
        args=list(request.args),
    )
    tmp = os.path.join(request.run_dir, DONE_FILE + ".tmp")
    with open(tmp, "w") as f:
        json.dump(record, f, indent=2, sort_keys=True)
    os.replace(tmp, os.path.join(request.run_dir, DONE_FILE))  # Atomic: never half-written.


def resumable(run_dir: str) -> bool:
    """True if an unfinished run left a checkpoint to continue from."""
    from rlpyt.utils.logging.run_dir import latest_checkpoint

    return latest_checkpoint(run_dir) is not None


def set_aside_stale_run_dir(run_dir: str) -> None:
    """Move a non-empty run dir into ``failed_attempts/`` so a new attempt starts clean."""
    if not os.path.isdir(run_dir) or not os.listdir(run_dir):
        return
    attempts = os.path.join(os.path.dirname(run_dir), FAILED_ATTEMPTS_DIR)
    os.makedirs(attempts, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = os.path.join(attempts, f"{os.path.basename(run_dir)}_{stamp}")
    suffix = 1
    while os.path.exists(target):
        target = os.path.join(attempts, f"{os.path.basename(run_dir)}_{stamp}_{suffix}")
        suffix += 1
    shutil.move(run_dir, target)


class RunProcess:
    """A started run: its supervisor process, log file and timing."""

    def __init__(self, request: RunRequest, slot_code: str, process: subprocess.Popen, log):
        self.request = request
        self.slot_code = slot_code
        self.process = process
        self._log = log
        self._signalled = False
        self.started = time.monotonic()

    def poll(self) -> RunResult | None:
        """The run's result once it has exited (marker written on success), else None."""
        code = self.process.poll()
        if code is None:
            return None
        return self._finish(code, stopped=False)

    def terminate(self) -> None:
        """Ask the run's supervisor to end the run's process tree (returns at once)."""
        if self.process.poll() is None:
            self._signalled = True
            signal_group(self.process.pid, signal.SIGTERM)

    def stop(self) -> RunResult:
        """Terminate the run's whole process tree and report it as stopped.

        A run that had already exited on its own is reported as it ended.
        """
        if not self._signalled and self.process.poll() is not None:
            return self._finish(self.process.returncode, stopped=False)
        if self.process.poll() is None:
            self._signalled = True
            # The supervisor leads a group of its own: its ladder, then SIGKILL.
            stop_group(self.process.pid, LAUNCHER_STOPS_RUN, leader=self.process)
        return self._finish(self.process.returncode, stopped=True)

    def _finish(self, code: int, stopped: bool) -> RunResult:
        seconds = time.monotonic() - self.started
        if not self._log.closed:
            self._log.close()
        ok = code == 0 and not stopped
        if ok:
            _write_done_marker(self.request, self.slot_code, seconds)
        status = "done" if ok else ("stopped" if stopped else "failed")
        return RunResult(
            name=self.request.name,
            status=status,
            returncode=code,
            run_dir=self.request.run_dir,
            log_path=os.path.join(self.request.run_dir, LOG_FILE),
            seconds=seconds,
        )


def start_run(
    request: RunRequest,
    slot_code: str,
    cpus: Sequence[int] | None = None,
    env: dict[str, str | None] | None = None,
) -> RunProcess:
    """Start ``request``'s script under a supervisor; returns at once.

    The setting's ``variant_config.json`` must already be saved (``save_variant``).

    Args:
        request: the run.
        slot_code: the affinity code the script receives.
        cpus: CPU ids to pin the run's whole process tree to (None: unpinned).
        env: environment variables to set (a None value removes the variable).
    """
    resume = resumable(request.run_dir)
    if not resume:
        set_aside_stale_run_dir(request.run_dir)
    os.makedirs(request.run_dir, exist_ok=True)
    command = [sys.executable, SUPERVISOR, "--parent-pid", str(os.getpid())]
    if cpus:
        command += ["--cpus", ",".join(str(c) for c in cpus)]
    command += ["--", *request.command(slot_code)]
    log = open(os.path.join(request.run_dir, LOG_FILE), "a" if resume else "w")
    log.write(f"# {'resumed: ' if resume else ''}{' '.join(request.command(slot_code))}\n")
    log.flush()
    process = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        env=_child_env({**(env or {}), "RLPYT_RESUME": "1" if resume else None}),
        start_new_session=True,  # Ctrl-C in the launcher's terminal is ours to handle.
    )
    return RunProcess(request, slot_code, process, log)


def _child_env(changes: dict[str, str | None]) -> dict[str, str]:
    env = dict(os.environ)
    for key, value in changes.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def execute_run(
    request: RunRequest,
    slot_code: str,
    cpus: Sequence[int] | None = None,
    env: dict[str, str | None] | None = None,
) -> RunResult:
    """Start a run and wait for it; any exception (Ctrl-C, cancel) stops it first."""
    run = start_run(request, slot_code, cpus, env)
    try:
        # Poll rather than block in wait(): an exception raised into this thread
        # (Ray's task cancellation) only arrives between Python bytecodes.
        while (result := run.poll()) is None:
            time.sleep(0.1)
        return result
    except BaseException:
        run.stop()
        raise


def jsonable(value: Any) -> Any:
    """``value`` as it reads back from JSON (tuples become lists), for comparisons."""
    return json.loads(json.dumps(value, sort_keys=True))
