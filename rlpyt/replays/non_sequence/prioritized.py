"""Prioritized transition replay."""

from __future__ import annotations

from rlpyt.replays.async_ import AsyncPrioritizedReplayMixin
from rlpyt.replays.non_sequence.n_step import NStepReturnBuffer
from rlpyt.replays.prioritized import PrioritizedReplay

__all__ = ["AsyncPrioritizedReplayBuffer", "PrioritizedReplayBuffer"]


class PrioritizedReplayBuffer(PrioritizedReplay, NStepReturnBuffer):
    """Transition replay sampled by priority (prioritized DQN).

    Args:
        example, size, B, discount=1, n_step_return=1: as ``UniformReplayBuffer``.
        alpha=0.6, beta=0.4, default_priority=1, input_priorities=False,
        input_priority_shift=0, beta_final=None, beta_steps=None: as
        ``rlpyt.replays.prioritized.PrioritizedReplay`` (input priorities are
        ``[T, B]``, ``[B]`` or scalar for the appended steps).

    ``sample_batch(batch_B)`` returns ``SamplesFromReplayPri``: the fields of
    ``SamplesFromReplay`` plus ``is_weights``.  Then call
    ``update_batch_priorities(priorities)`` with that batch's new priorities.
    """


class AsyncPrioritizedReplayBuffer(AsyncPrioritizedReplayMixin, PrioritizedReplayBuffer):
    """``PrioritizedReplayBuffer`` in shared memory behind a reader-writer lock."""
