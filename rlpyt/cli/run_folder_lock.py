"""The lock of a ``rlpyt train`` run directory, held from the command's start.

``logger_context`` takes the same lock when training starts (it is re-entrant within a
process, see ``rlpyt.utils.logging.run_dir``); holding it earlier means that two
commands naming one run directory are told so before either builds anything.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from rlpyt.cli.run_folder import writes_run_dir

__all__ = ["locked_run_dir"]


@contextlib.contextmanager
def locked_run_dir(run_dir: str | None, resume: bool) -> Iterator[None]:
    """Hold ``run_dir``'s lock (and refuse a finished run) from the start of the command;
    ``logger_context`` takes the same lock again.  A directory this made and nothing
    else wrote to (the command failed before training) is removed again."""
    from rlpyt.utils.logging.run_dir import LOCK_FILE, RunLock, check_run_dir_free

    if run_dir is None or not writes_run_dir():
        yield  # rank 0 alone writes the run directory
        return
    missing = _missing_dirs(run_dir)
    lock = RunLock(run_dir).acquire()
    try:
        if not resume:
            check_run_dir_free(run_dir)
        yield
    finally:
        if missing and os.listdir(run_dir) == [LOCK_FILE]:
            os.remove(os.path.join(run_dir, LOCK_FILE))
            for made in missing:  # deepest first
                if os.listdir(made):
                    break
                os.rmdir(made)
        lock.release()


def _missing_dirs(run_dir: str) -> list[str]:
    """The directories the lock will make for ``run_dir``, deepest first."""
    missing = []
    path = run_dir
    while not os.path.exists(path) and os.path.dirname(path) != path:
        missing.append(path)
        path = os.path.dirname(path)
    return missing
