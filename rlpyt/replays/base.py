"""The replay buffer interface shared by every buffer, and the input wrapper for priorities."""

from __future__ import annotations

from rlpyt.utils.collections import namedarraytuple

__all__ = ["BaseReplayBuffer", "PrioritiesSamplesToBuffer"]

# What an algorithm hands to a prioritized buffer built with ``input_priorities=True``:
# the usual ``[T, B]`` samples plus priorities for the new positions (see the buffers).
PrioritiesSamplesToBuffer = namedarraytuple("PrioritiesSamplesToBuffer", ["priorities", "samples"])


class BaseReplayBuffer:
    """A store of ``[T, B]`` sample batches that hands back training batches.

    ``async_`` is True for the ``Async...`` twins, which keep all state in shared
    memory behind a reader-writer lock so that sampler and optimizer processes
    can share one buffer.
    """

    async_ = False

    def append_samples(self, samples):
        """Store a ``[T, B]`` batch; returns the ``(T_idxs, B_idxs)`` written."""
        raise NotImplementedError

    def sample_batch(self, batch_B: int):
        """A training batch of ``batch_B`` samples (or sequences), as torch tensors."""
        raise NotImplementedError

    def save_state(self, f) -> None:
        """Stream the stored contents to the open binary file ``f`` (no in-memory copy)."""
        from rlpyt.replays.replay_file import save_replay_buffer

        save_replay_buffer(self, f)

    def load_state(self, f) -> None:
        """Read contents written by ``save_state`` into this (same-sized) buffer."""
        from rlpyt.replays.replay_file import load_replay_buffer

        load_replay_buffer(self, f)
