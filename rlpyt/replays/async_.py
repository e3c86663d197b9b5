"""``Async...`` twins: one buffer shared by sampler and optimizer processes.

An async buffer allocates all of its arrays and its cursor in shared memory
(``async_ = True`` makes the buffers do so) and guards them with a reader-writer
lock: appends and priority updates write, sampling reads.  Pass the buffer to
worker processes as a ``Process`` argument (or inherit it by fork); every copy
then sees the same storage, cursor and lock.
"""

from __future__ import annotations

from rlpyt.utils.synchronize import RWLock

__all__ = ["AsyncPrioritizedReplayMixin", "AsyncReplayBufferMixin"]


class AsyncReplayBufferMixin:
    """Put first in the bases of a buffer class to make its shared-memory twin."""

    async_ = True

    def __init__(self, *args, **kwargs):
        self.rw_lock = RWLock()
        super().__init__(*args, **kwargs)

    def append_samples(self, samples):
        with self.rw_lock.write_lock:
            return super().append_samples(samples)

    def sample_batch(self, *args, **kwargs):
        with self.rw_lock.read_lock:
            return super().sample_batch(*args, **kwargs)


class AsyncPrioritizedReplayMixin(AsyncReplayBufferMixin):
    """As ``AsyncReplayBufferMixin``, with priority updates under the write lock."""

    def update_batch_priorities(self, priorities) -> None:
        with self.rw_lock.write_lock:
            super().update_batch_priorities(priorities)

    def update_priorities(self, T_idxs, B_idxs, priorities) -> None:
        with self.rw_lock.write_lock:
            super().update_priorities(T_idxs, B_idxs, priorities)
