"""Process synchronisation helpers: a reader-writer lock, queue draining, free ports."""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import queue as queue_module
import socket
import time
from typing import Any

__all__ = ["RWLock", "drain_queue", "find_port"]


class RWLock:
    """Writer-preferring reader-writer lock shared between processes.

    Many readers may hold the lock together; a writer holds it alone.  Once a writer
    is waiting, new readers wait too, so a steady stream of readers (e.g. replay
    sampling) cannot starve the writer (e.g. the sampler appending data).

    Usage (both spellings work; the second is classic rlpyt's)::

        with lock.read_lock():  ...         with lock:  ...             # read
        with lock.write_lock():  ...        with lock.write_lock:  ...  # write

    Pass the lock to worker processes as a ``Process`` argument (or inherit it by
    fork).  Its primitives come from the ``spawn`` context, which works for children
    started by ``fork``, ``spawn`` and ``forkserver`` alike (a primitive made in the
    ``fork`` context cannot be sent to a spawned child).  The lock is not re-entrant.
    """

    def __init__(self):
        ctx = mp.get_context("spawn")
        self._cond = ctx.Condition(ctx.Lock())
        # Counters are only touched while holding self._cond.
        self._readers = ctx.RawValue("i", 0)
        self._writer_active = ctx.RawValue("i", 0)
        self._writers_waiting = ctx.RawValue("i", 0)

    def acquire_read(self) -> None:
        with self._cond:
            while self._writer_active.value or self._writers_waiting.value:
                self._cond.wait()
            self._readers.value += 1

    def release_read(self) -> None:
        with self._cond:
            if self._readers.value <= 0:
                raise RuntimeError("RWLock.release_read called without a held read lock")
            self._readers.value -= 1
            if self._readers.value == 0:
                self._cond.notify_all()

    def acquire_write(self) -> None:
        with self._cond:
            self._writers_waiting.value += 1
            try:
                while self._writer_active.value or self._readers.value:
                    self._cond.wait()
            finally:
                self._writers_waiting.value -= 1
            self._writer_active.value = 1

    def release_write(self) -> None:
        with self._cond:
            if not self._writer_active.value:
                raise RuntimeError("RWLock.release_write called without a held write lock")
            self._writer_active.value = 0
            self._cond.notify_all()

    @property
    def read_lock(self) -> _LockSide:
        """Context manager for shared (read) access: ``with lock.read_lock():``."""
        return _LockSide(self.acquire_read, self.release_read)

    @property
    def write_lock(self) -> _LockSide:
        """Context manager for exclusive (write) access: ``with lock.write_lock():``."""
        return _LockSide(self.acquire_write, self.release_write)

    def __enter__(self) -> RWLock:
        self.acquire_read()
        return self

    def __exit__(self, *exc) -> None:
        self.release_read()


class _LockSide:
    """One side of an RWLock as a context manager; calling it returns itself."""

    __slots__ = ("_acquire", "_release")

    def __init__(self, acquire, release):
        self._acquire = acquire
        self._release = release

    def __call__(self) -> _LockSide:
        return self

    def __enter__(self) -> None:
        self._acquire()

    def __exit__(self, *exc) -> None:
        self._release()


def drain_queue(
    queue_obj,
    n_sentinel: int = 0,
    guard_sentinel: bool = False,
    timeout: float | None = None,
) -> list[Any]:
    """Get the items of a (multiprocessing) queue as a list; ``None`` is a sentinel.

    Args:
        queue_obj: a ``multiprocessing`` or ``queue`` queue.
        n_sentinel: 0 drains without blocking: returns once the queue reports empty
            (an item ``put()`` by another process an instant ago may not be visible
            yet).  ``n > 0`` blocks until ``n`` sentinels (``None``) have arrived, e.g.
            one from each producer saying it is done; sentinels are not returned.
        guard_sentinel: with ``n_sentinel=0``, stop at the first sentinel and put it
            back, so that a later blocking drain still sees it.
        timeout: with ``n_sentinel > 0``, the most seconds to wait for all sentinels
            before raising ``TimeoutError``; ``None`` waits as long as it takes.
    """
    if n_sentinel < 0:
        raise ValueError(f"drain_queue: n_sentinel must be >= 0, got {n_sentinel}")
    if guard_sentinel and n_sentinel > 0:
        raise ValueError(
            f"drain_queue: guard_sentinel=True needs n_sentinel=0, got n_sentinel={n_sentinel}"
        )
    contents: list[Any] = []
    if n_sentinel > 0:
        deadline = None if timeout is None else time.monotonic() + timeout
        seen = 0
        while seen < n_sentinel:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                obj = queue_obj.get(timeout=remaining)
            except queue_module.Empty:
                raise TimeoutError(
                    f"drain_queue: got {seen} of n_sentinel={n_sentinel} sentinels within "
                    f"timeout={timeout}s ({len(contents)} items received); "
                    "a producer may have died"
                ) from None
            if obj is None:
                seen += 1
            else:
                contents.append(obj)
        return contents
    while True:
        try:
            obj = queue_obj.get(block=False)
        except queue_module.Empty:
            return contents
        if obj is None:
            if guard_sentinel:
                queue_obj.put(None)
                return contents
            continue  # A stray sentinel carries no data.
        contents.append(obj)


def find_port(offset: int | None = None, host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` that is free right now.

    Args:
        offset: ``None`` lets the OS pick any free port.  An integer scans upward from
            ``29500 + offset`` (classic rlpyt: predictable ports for several multi-GPU
            runs on one machine, one offset each).
        host: interface to check.

    The port is free when checked; another process could still take it before use.
    """
    if offset is None:
        with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
            s.bind((host, 0))
            return s.getsockname()[1]
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise ValueError(f"find_port: offset must be a non-negative integer, got {offset!r}")
    first = 29500 + offset
    for port in range(first, min(first + 1000, 65536)):
        with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"find_port: no free port on {host} in [{first}, {first + 1000})")
