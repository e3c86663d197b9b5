"""Sequence replay storing each image frame once (R2D1 on Atari)."""

from __future__ import annotations

from rlpyt.replays.async_ import AsyncPrioritizedReplayMixin, AsyncReplayBufferMixin
from rlpyt.replays.frame import FrameBufferMixin
from rlpyt.replays.prioritized import PrioritizedReplay
from rlpyt.replays.sequence.n_step import SequenceNStepReturnBuffer
from rlpyt.replays.uniform import UniformReplay

__all__ = [
    "AsyncPrioritizedSequenceReplayFrameBuffer",
    "AsyncUniformSequenceReplayFrameBuffer",
    "PrioritizedSequenceReplayFrameBuffer",
    "SequenceNStepFrameBuffer",
    "UniformSequenceReplayFrameBuffer",
]


class SequenceNStepFrameBuffer(FrameBufferMixin, SequenceNStepReturnBuffer):
    """Sequence storage with frame-by-frame observations (see ``FrameBufferMixin``);
    ``all_observation`` holds rebuilt stacks ``[L, batch_B, n_frames, H, W]``."""


class UniformSequenceReplayFrameBuffer(UniformReplay, SequenceNStepFrameBuffer):
    """``UniformSequenceReplayBuffer`` storing each frame once.

    Args:
        example: one step of samples whose ``observation`` is a frame stack
            ``[n_frames, H, W]``.
        size, B, discount=1, n_step_return=1, batch_T, rnn_state_interval,
        warmup_T=0: as ``UniformSequenceReplayBuffer``.
    """


class PrioritizedSequenceReplayFrameBuffer(PrioritizedReplay, SequenceNStepFrameBuffer):
    """``PrioritizedSequenceReplayBuffer`` storing each frame once.

    Args:
        example: as ``UniformSequenceReplayFrameBuffer``.
        other arguments: as ``PrioritizedSequenceReplayBuffer``.
    """


class AsyncUniformSequenceReplayFrameBuffer(
    AsyncReplayBufferMixin, UniformSequenceReplayFrameBuffer
):
    """``UniformSequenceReplayFrameBuffer`` in shared memory behind a reader-writer lock."""


class AsyncPrioritizedSequenceReplayFrameBuffer(
    AsyncPrioritizedReplayMixin, PrioritizedSequenceReplayFrameBuffer
):
    """``PrioritizedSequenceReplayFrameBuffer`` in shared memory behind a reader-writer lock."""
