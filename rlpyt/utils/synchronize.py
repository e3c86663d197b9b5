"""Process synchronisation helpers: a reader-writer lock, queue draining, free ports."""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import queue as queue_module
import socket
import time
from typing import Any

from rlpyt.utils.supervisor import process_alive

__all__ = ["RWLock", "drain_queue", "find_port"]

DEAD_WRITER_CHECK_S = 1.0
MUTEX_TIMEOUT_S = 10.0


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

    Robust to killed processes: waiters poll (with a short back-off) instead of
    sleeping on a ``multiprocessing.Condition``, whose ``notify`` blocks forever once a
    waiter was killed.  A process that dies holding the write lock makes every waiter
    raise ``RuntimeError`` naming its pid within ``DEAD_WRITER_CHECK_S``; one that dies
    waiting for it is forgotten, so readers go on.
    """

    def __init__(self):
        ctx = mp.get_context("spawn")
        self._mutex = ctx.Lock()  # Guards the counters; held for microseconds.
        self._readers = ctx.RawValue("i", 0)
        self._writer_active = ctx.RawValue("i", 0)
        self._writers_waiting = ctx.RawValue("i", 0)
        self._writer_pid = ctx.RawValue("q", 0)
        self._waiting_writer_pid = ctx.RawValue("q", 0)  # The latest writer to wait.

    @contextlib.contextmanager
    def _counters(self):
        deadline = time.monotonic() + MUTEX_TIMEOUT_S
        while not self._mutex.acquire(timeout=1.0):
            if time.monotonic() > deadline:
                raise RuntimeError(f"RWLock: its internal mutex was held for over "
                                   f"{MUTEX_TIMEOUT_S} s; a process probably died holding it")
        try:
            yield
        finally:
            self._mutex.release()

    def _check_writers(self) -> None:
        """With the counters held: notice writers that died holding or awaiting the lock."""
        pid = self._writer_pid.value
        if self._writer_active.value and pid and not process_alive(pid):
            raise RuntimeError(
                f"RWLock: the process holding the write lock (pid {pid}) died without "
                f"releasing it; the data it guards may be half written")
        waiting = self._waiting_writer_pid.value
        if (not self._writer_active.value and self._writers_waiting.value and waiting
                and not process_alive(waiting)):
            self._writers_waiting.value -= 1  # It died waiting: readers may go on.
            self._waiting_writer_pid.value = 0

    def acquire_read(self) -> None:
        backoff = _Backoff()
        while True:
            with self._counters():
                if not (self._writer_active.value or self._writers_waiting.value):
                    self._readers.value += 1
                    return
                if backoff.waited > DEAD_WRITER_CHECK_S:
                    self._check_writers()
            backoff.sleep()

    def release_read(self) -> None:
        with self._counters():
            if self._readers.value <= 0:
                raise RuntimeError("RWLock.release_read called without a held read lock")
            self._readers.value -= 1

    def acquire_write(self) -> None:
        backoff = _Backoff()
        with self._counters():
            self._writers_waiting.value += 1
            self._waiting_writer_pid.value = os.getpid()
        acquired = False
        try:
            while True:
                with self._counters():
                    if not (self._writer_active.value or self._readers.value):
                        self._writers_waiting.value -= 1
                        self._writer_active.value = 1
                        self._writer_pid.value = os.getpid()
                        acquired = True
                        return
                    if backoff.waited > DEAD_WRITER_CHECK_S:
                        self._check_writers()
                backoff.sleep()
        finally:
            if not acquired:  # Interrupted while waiting: stop holding readers back.
                with self._counters():
                    self._writers_waiting.value -= 1

    def release_write(self) -> None:
        with self._counters():
            if not self._writer_active.value:
                raise RuntimeError("RWLock.release_write called without a held write lock")
            self._writer_active.value = 0

    def semaphores(self) -> list:
        """Its named-semaphore primitives (to unlink their names once every process that
        uses the lock has started: see ``rlpyt.samplers.parallel.worker_channel``)."""
        return [self._mutex]

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


class _Backoff:
    """Sleeps growing from 50 us to 2 ms: quick hand-over, little CPU while a holder works."""

    def __init__(self):
        self.delay, self.waited = 5e-5, 0.0

    def sleep(self) -> None:
        time.sleep(self.delay)
        self.waited += self.delay
        self.delay = min(self.delay * 2, 2e-3)


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
