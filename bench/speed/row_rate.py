"""Shared by the runner benchmarks: env steps per second measured between log rows."""

from __future__ import annotations

import contextlib
import csv
import io
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@contextlib.contextmanager
def quiet_logging():
    """A throw-away run directory, and no console rows."""
    from rlpyt.utils.logging.context import logger_context

    with tempfile.TemporaryDirectory() as log_dir, contextlib.redirect_stdout(io.StringIO()), \
            logger_context(log_dir, 0, "bench", override_prefix=True):
        yield


def rate_between_rows(runner, from_steps: int = 0) -> float:
    """Train ``runner`` quietly; env steps per wall-clock second from its first log row at
    or after ``from_steps`` env steps to its last (start-up, and the warm-up before that
    row, excluded)."""
    marks = []
    original = runner.log_diagnostics

    def mark(itr, *args, **kwargs):
        marks.append((time.perf_counter(), (itr + 1) * runner.itr_batch_size))
        return original(itr, *args, **kwargs)

    runner.log_diagnostics = mark
    with quiet_logging():
        runner.train()
    (t0, s0), (t1, s1) = next(m for m in marks if m[1] >= from_steps), marks[-1]
    return (s1 - s0) / (t1 - t0)


def command_rate(train_args: list[str], n_steps: int, rows: int,
                 env: dict | None = None) -> dict:
    """One ``rlpyt train`` command, as a user runs it, in a fresh process with ``env`` added
    to this one's environment: its env steps a second between its first log row and its
    last (start-up excluded), and the whole run's user and system CPU seconds and minor
    page faults (its worker processes included)."""
    with tempfile.TemporaryDirectory() as log_dir:
        cmd = [sys.executable, "-m", "rlpyt", "train", *train_args, "--n-steps", str(n_steps),
               "--runner.log_interval_steps", str(n_steps // rows), "--log-dir", log_dir,
               "--run-id", "0"]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(cmd, env=dict(os.environ, **(env or {})), cwd=ROOT, check=True,
                       capture_output=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        with open(Path(log_dir) / "run_0" / "progress.csv") as f:
            table = list(csv.DictReader(f))
    first, last = table[0], table[-1]
    steps = float(last["CumSteps"]) - float(first["CumSteps"])
    seconds = float(last["CumTime (s)"]) - float(first["CumTime (s)"])
    return dict(rate=steps / seconds, user=after.ru_utime - before.ru_utime,
                system=after.ru_stime - before.ru_stime,
                faults=after.ru_minflt - before.ru_minflt)
