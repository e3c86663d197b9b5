"""Protection of run directories: never overwrite a run, never run twice at once.

- ``check_run_dir_free(run_dir)`` raises ``RunDirExistsError`` when the directory
  already holds a run's results (a ``progress.csv`` with rows, snapshots or
  checkpoints), so that starting a run there cannot overwrite an earlier result.
  A directory left by a run that failed before its first log row holds no result
  and may be reused.
  The message offers to resume it or to pick a new run id.
- ``RunLock(run_dir)`` holds an exclusive ``fcntl.flock`` on ``<run_dir>/.lock``
  for the life of a run.  A second live run on the same directory is refused with
  ``RunDirLockedError`` naming the owner's pid.  The kernel drops a flock when its
  owner's file descriptor closes, so the lock of a killed run (even ``kill -9``)
  is free at once; the file itself staying behind does no harm.  Within one process
  the lock is re-entrant (``rlpyt train`` takes it before building anything, then
  ``logger_context`` takes it again): the flock is dropped at the last ``release``.
"""

from __future__ import annotations

import os
import re

__all__ = ["CHECKPOINT_DIR", "RUN_FILES", "CheckpointUnreadableError", "RunDirExistsError",
           "RunDirLockedError", "RunLock", "StorageWriteError", "check_run_dir_free",
           "latest_checkpoint", "list_checkpoints", "next_run_id", "run_files_in"]

LOCK_FILE = ".lock"
# Whole-run checkpoints (written by rlpyt.runners.checkpoint_files):
# <run_dir>/checkpoints/itr_<N>/
CHECKPOINT_DIR = "checkpoints"
STATE_FILE = "state.pt"
_CHECKPOINT_NAME = re.compile(r"^itr_(\d+)$")
_RUN_NAME = re.compile(r"^run_(\d+)$")
# Files whose presence means a run already wrote results here.
RUN_FILES = ("progress.csv", "params.pkl", "checkpoints")


def list_checkpoints(run_dir: str) -> list[tuple[int, str]]:
    """Complete checkpoints of ``run_dir`` as ``(itr, path)``, oldest first (a save cut
    short leaves only an ``itr_<N>.tmp-<pid>`` directory, which is not listed)."""
    root = os.path.join(run_dir, CHECKPOINT_DIR)
    if not os.path.isdir(root):
        return []
    found = []
    for name in os.listdir(root):
        match = _CHECKPOINT_NAME.match(name)
        path = os.path.join(root, name)
        if match and os.path.isfile(os.path.join(path, STATE_FILE)):
            found.append((int(match.group(1)), path))
    return sorted(found)


def latest_checkpoint(run_dir: str) -> str | None:
    """Path of the newest complete checkpoint of ``run_dir``, or None."""
    found = list_checkpoints(run_dir)
    return found[-1][1] if found else None


class StorageWriteError(OSError):
    """A run's file could not be written (no space left, a read-only folder, a quota):
    ``what`` and ``path`` say which, ``cause`` is the system's reason.  The partial file
    has been removed and earlier complete files are intact."""

    def __init__(self, what: str, path: str, cause: BaseException, note: str = ""):
        errno = getattr(cause, "errno", None)
        reason = os.strerror(errno) if errno else (str(cause) or type(cause).__name__)
        super().__init__(errno, f"could not write {what} {path}: {reason}{note}")
        self.path, self.cause = path, cause

    def __str__(self) -> str:
        return self.strerror


class CheckpointUnreadableError(RuntimeError):
    """A checkpoint's ``state.pt`` exists but cannot be loaded (truncated, or not a
    checkpoint at all); the message names the file and the loader's reason."""


class RunDirExistsError(FileExistsError):
    """The run directory already holds a run."""


class RunDirLockedError(RuntimeError):
    """Another live process is running in this run directory."""


def run_files_in(run_dir: str) -> list[str]:
    """The names of ``RUN_FILES`` (and ``itr_<N>.pkl`` snapshots) present in ``run_dir``."""
    if not os.path.isdir(run_dir):
        return []
    present = []
    for name in sorted(os.listdir(run_dir)):
        path = os.path.join(run_dir, name)
        if name == "progress.csv":
            if _has_rows(path):
                present.append(name)
        elif name == "checkpoints":
            if os.path.isdir(path) and os.listdir(path):
                present.append(name)
        elif name in RUN_FILES or (name.startswith("itr_") and name.endswith(".pkl")):
            present.append(name)
    return present


def next_run_id(log_dir: str) -> int:
    """One more than the highest ``run_<k>`` directory in ``log_dir`` (0 if none), so a
    new run never lands in a directory that an earlier or a live run uses."""
    if not os.path.isdir(log_dir):
        return 0
    ids = [int(m.group(1)) for m in map(_RUN_NAME.match, os.listdir(log_dir)) if m]
    return max(ids) + 1 if ids else 0


def _has_rows(csv_path: str) -> bool:
    """True if the file has a line after its header."""
    with open(csv_path, "rb") as f:
        return len(f.read(1 << 16).splitlines()) > 1


def check_run_dir_free(run_dir: str) -> None:
    """Raise ``RunDirExistsError`` if ``run_dir`` holds an earlier run's files."""
    present = run_files_in(run_dir)
    if present:
        raise RunDirExistsError(
            f"run directory {run_dir} already holds a run ({', '.join(present)}); it is "
            f"never overwritten. Continue it with `rlpyt train --resume {run_dir}` (Python: "
            f"logger_context(..., resume=True) and runner.train()), or start a new run with "
            f"another run id (--run-id) or log dir (--log-dir)"
        )


# Locks this process holds: real path of the lock file -> [pid, fd, holders].
_HELD: dict[str, list] = {}


class RunLock:
    """Exclusive lock of one run directory, held while the run lives (re-entrant
    within a process).

    Args:
        run_dir: the run directory (created if missing).
    """

    def __init__(self, run_dir: str):
        self.run_dir = run_dir
        self.path = os.path.join(run_dir, LOCK_FILE)
        self._fd: int | None = None
        self._key: str | None = None

    def acquire(self) -> RunLock:
        import fcntl  # POSIX only; imported here so that the module imports anywhere.

        if self._fd is not None:
            return self
        os.makedirs(self.run_dir, exist_ok=True)
        key = os.path.realpath(self.path)
        held = _HELD.get(key)
        if held is not None and held[0] == os.getpid():  # (a forked child holds nothing)
            held[2] += 1
            self._fd, self._key = held[1], key
            return self
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = _read_pid(fd)
            os.close(fd)
            raise RunDirLockedError(
                f"run directory {self.run_dir} is in use by a live run (pid {owner}); wait "
                f"for it to end or stop it, or use another run id (--run-id) or log dir "
                f"(--log-dir)"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd, self._key = fd, key
        _HELD[key] = [os.getpid(), fd, 1]
        return self

    def release(self) -> None:
        if self._fd is None:
            return
        held = _HELD.get(self._key)
        if held is not None and held[0] == os.getpid() and held[1] == self._fd:
            held[2] -= 1
            if held[2] > 0:  # another holder in this process keeps the flock
                self._fd = None
                return
            del _HELD[self._key]
        os.close(self._fd)  # Closing the descriptor drops the flock.
        self._fd = None

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def _read_pid(fd: int) -> str:
    try:
        text = os.pread(fd, 32, 0).decode().strip()
    except OSError:
        text = ""
    return text or "unknown"
