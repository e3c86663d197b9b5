"""Shared by the runner benchmarks: env steps per second measured between log rows."""

from __future__ import annotations

import contextlib
import io
import tempfile
import time


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
