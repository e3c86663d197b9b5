"""Transition replay storing each image frame once (Atari), with or without time-limit flags."""

from __future__ import annotations

from rlpyt.replays.async_ import AsyncPrioritizedReplayMixin, AsyncReplayBufferMixin
from rlpyt.replays.frame import FrameBufferMixin
from rlpyt.replays.non_sequence.n_step import NStepReturnBuffer
from rlpyt.replays.non_sequence.time_limit import NStepTimeLimitBuffer
from rlpyt.replays.prioritized import PrioritizedReplay
from rlpyt.replays.uniform import UniformReplay

__all__ = [
    "AsyncPrioritizedReplayFrameBuffer",
    "AsyncTlPrioritizedReplayFrameBuffer",
    "AsyncTlUniformReplayFrameBuffer",
    "AsyncUniformReplayFrameBuffer",
    "NStepFrameBuffer",
    "NStepTimeLimitFrameBuffer",
    "PrioritizedReplayFrameBuffer",
    "TlPrioritizedReplayFrameBuffer",
    "TlUniformReplayFrameBuffer",
    "UniformReplayFrameBuffer",
]


class NStepFrameBuffer(FrameBufferMixin, NStepReturnBuffer):
    """n-step transition storage with frame-by-frame observations (see ``FrameBufferMixin``).

    1M Pong transitions (104x80 uint8 frames, 4 per stack) take 8.33 GB (8.34 GB with
    ``n_step_return > 1``): 1.002 x one frame per transition.  A buffer of full stacks
    would take 33.3 GB.
    """


class UniformReplayFrameBuffer(UniformReplay, NStepFrameBuffer):
    """``UniformReplayBuffer`` storing each frame once.

    Args:
        example: one step of samples whose ``observation`` is a frame stack
            ``[n_frames, H, W]``; ``n_frames`` is read from it.
        size, B, discount=1, n_step_return=1: as ``UniformReplayBuffer``.
    """


class PrioritizedReplayFrameBuffer(PrioritizedReplay, NStepFrameBuffer):
    """``PrioritizedReplayBuffer`` storing each frame once.

    Args:
        example: as ``UniformReplayFrameBuffer``.
        size, B, discount=1, n_step_return=1, alpha=0.6, beta=0.4, default_priority=1,
        input_priorities=False, input_priority_shift=0, beta_final=None,
        beta_steps=None: as ``PrioritizedReplayBuffer``.
    """


class AsyncUniformReplayFrameBuffer(AsyncReplayBufferMixin, UniformReplayFrameBuffer):
    """``UniformReplayFrameBuffer`` in shared memory behind a reader-writer lock."""


class AsyncPrioritizedReplayFrameBuffer(AsyncPrioritizedReplayMixin, PrioritizedReplayFrameBuffer):
    """``PrioritizedReplayFrameBuffer`` in shared memory behind a reader-writer lock."""


# ----- with time-limit flags (``timeout``, ``timeout_n``): Atari with time limits -----


class NStepTimeLimitFrameBuffer(FrameBufferMixin, NStepTimeLimitBuffer):
    """``NStepTimeLimitBuffer`` (samples add ``timeout`` and ``timeout_n``) storing each
    frame once (see ``FrameBufferMixin``)."""


class TlUniformReplayFrameBuffer(UniformReplay, NStepTimeLimitFrameBuffer):
    """``TlUniformReplayBuffer`` storing each image frame once.

    Args:
        example: one step of samples with fields ``observation, action, reward, done,
            timeout``, whose ``observation`` is a frame stack ``[n_frames, H, W]``.
        size, B, discount=1, n_step_return=1: as ``UniformReplayBuffer``.
    """


class TlPrioritizedReplayFrameBuffer(PrioritizedReplay, NStepTimeLimitFrameBuffer):
    """``TlPrioritizedReplayBuffer`` storing each image frame once.

    Args:
        example: as ``TlUniformReplayFrameBuffer``.
        size, B, discount=1, n_step_return=1, alpha=0.6, beta=0.4, default_priority=1,
        input_priorities=False, input_priority_shift=0, beta_final=None,
        beta_steps=None: as ``PrioritizedReplayBuffer``.
    """


class AsyncTlUniformReplayFrameBuffer(AsyncReplayBufferMixin, TlUniformReplayFrameBuffer):
    """``TlUniformReplayFrameBuffer`` in shared memory behind a reader-writer lock."""


class AsyncTlPrioritizedReplayFrameBuffer(
    AsyncPrioritizedReplayMixin, TlPrioritizedReplayFrameBuffer
):
    """``TlPrioritizedReplayFrameBuffer`` in shared memory behind a reader-writer lock."""
