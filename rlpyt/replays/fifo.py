"""A first-in first-out ring of whole ``[T, B]`` batches in shared memory.

The queue between the samplers and the learner of an off-policy actor-critic (IMPALA):
the memory copier appends each new sampler batch, the learner consumes batches in
the order they came, once each.  Unlike a replay buffer nothing is sampled at random
and nothing is reused, so the data is never more than ``capacity`` batches old.
"""

from __future__ import annotations

import numpy as np

from rlpyt.utils.buffer import buffer_from_example, np_mp_array, numpify_buffer, torchify_buffer

__all__ = ["BatchFifo"]


class BatchFifo:
    """``capacity`` slots, each holding one batch shaped like ``example``.

    Batch number ``n`` (counting appends from 0) lives in slot ``n % capacity`` until
    batch ``n + capacity`` overwrites it.  The append counter is in shared memory, so
    a process forked after construction appends and the parent sees the batches.

    One process appends (the memory copier); the caller guarantees that an append
    never overwrites a batch not yet consumed (the asynchronous runner's throttle
    keeps the sampler at most ``capacity - 1`` batches ahead of the learner).  The
    counter is advanced only after the slot is written, so a reader that checks
    ``n_appended`` first never sees a half-written batch.

    Args:
        example: one batch (a namedtuple of arrays or tensors, ``None`` fields allowed)
            whose shapes and dtypes every slot takes; its values are not used.
        capacity: number of batches held (>= 1).
        share_memory: allocate in shared memory for forked / spawned processes
            (default True).
    """

    def __init__(self, example, capacity: int, share_memory: bool = True):
        if isinstance(capacity, bool) or int(capacity) != capacity or capacity < 1:
            raise ValueError(f"BatchFifo: capacity={capacity!r} must be an integer >= 1")
        self.capacity = int(capacity)
        self.samples_np = buffer_from_example(numpify_buffer(example), (self.capacity,),
                                              share_memory)
        self.samples = torchify_buffer(self.samples_np)  # the same memory, as tensors
        self._n_appended = (np_mp_array((), np.int64) if share_memory
                            else np.zeros((), dtype=np.int64))
        self.first = 0  # The first batch number (restart_at): earlier slots are stale.

    def restart_at(self, n: int) -> None:
        """Empty, with the next append numbered ``n`` (a resumed run's sampler goes on
        from batch ``n``; call before any process appends)."""
        if isinstance(n, bool) or int(n) != n or n < 0:
            raise ValueError(f"BatchFifo.restart_at: n={n!r} must be an integer >= 0")
        self.first = int(n)
        self._n_appended[()] = self.first

    @property
    def n_appended(self) -> int:
        """Batches appended since construction (in any process sharing this queue)."""
        return int(self._n_appended[()])

    def append_samples(self, samples) -> int:
        """Copy ``samples`` (same structure as ``example``) into the next slot; returns the
        batch number it got."""
        index = self.n_appended
        self.samples_np[index % self.capacity] = numpify_buffer(samples)
        self._n_appended[()] = index + 1  # publish only after the slot is written
        return index

    def batch(self, index: int):
        """Batch number ``index`` as tensors viewing the slot (no copy); valid until batch
        ``index + capacity`` is appended."""
        n = self.n_appended
        oldest = max(self.first, n - self.capacity)
        if not oldest <= index < n:
            raise IndexError(
                f"BatchFifo.batch: index={index} is not held; batches {oldest}"
                f" to {n - 1} are (capacity {self.capacity}, {n} appended)"
            )
        return self.samples[index % self.capacity]
