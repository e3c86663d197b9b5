"""Prioritized sequence replay (R2D1)."""

from __future__ import annotations

from rlpyt.replays.async_ import AsyncPrioritizedReplayMixin
from rlpyt.replays.prioritized import PrioritizedReplay
from rlpyt.replays.sequence.n_step import SequenceNStepReturnBuffer

__all__ = ["AsyncPrioritizedSequenceReplayBuffer", "PrioritizedSequenceReplayBuffer"]


class PrioritizedSequenceReplayBuffer(PrioritizedReplay, SequenceNStepReturnBuffer):
    """Sequence replay drawing sequence starts by priority, one priority per start.

    Args:
        example, size, B, discount=1, n_step_return=1, batch_T, rnn_state_interval,
        warmup_T=0: as ``UniformSequenceReplayBuffer``.
        alpha=0.6, beta=0.4, default_priority=1, beta_final=None, beta_steps=None: as
        ``rlpyt.replays.prioritized.PrioritizedReplay``.
        input_priorities: appended batches come as
            ``PrioritiesSamplesToBuffer(priorities, samples)`` with one priority per
            new sequence start (``[new starts, B]``), one per step (``[T, B]``: those of
            the steps that start sequences are used), ``[B]`` or a scalar.  Default
            ``False``.
        input_priority_shift: starts back from the new ones that input priorities
            apply to (R2D1 uses ``warmup_T // rnn_state_interval``).  Default ``0``.

    ``sample_batch(batch_B)`` adds ``is_weights`` ``[batch_B]``;
    ``update_batch_priorities`` takes one priority per sampled sequence.
    """


class AsyncPrioritizedSequenceReplayBuffer(
    AsyncPrioritizedReplayMixin, PrioritizedSequenceReplayBuffer
):
    """``PrioritizedSequenceReplayBuffer`` in shared memory behind a reader-writer lock."""
