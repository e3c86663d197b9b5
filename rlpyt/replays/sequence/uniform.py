"""Uniformly sampled sequence replay (R2D1 without prioritization)."""

from __future__ import annotations

from rlpyt.replays.async_ import AsyncReplayBufferMixin
from rlpyt.replays.sequence.n_step import SequenceNStepReturnBuffer
from rlpyt.replays.uniform import UniformReplay

__all__ = ["AsyncUniformSequenceReplayBuffer", "UniformSequenceReplayBuffer"]


class UniformSequenceReplayBuffer(UniformReplay, SequenceNStepReturnBuffer):
    """Sequence replay drawing every valid sequence start equally often.

    Args:
        example: one step of ``observation, action, reward, done[, prev_rnn_state]``.
        size: steps held (``T = size // B`` per env, a multiple of rnn_state_interval).
        B: environments appending side by side.
        discount: discount of the n-step return.  Default ``1``.
        n_step_return: steps summed into ``return_``.  Default ``1``.
        batch_T: trained steps per sequence (keyword, required).
        rnn_state_interval: steps between stored RNN states and sequence starts;
            ``0`` stores none (keyword, required).
        warmup_T: RNN warm-up steps before the trained ones.  Default ``0``.

    ``sample_batch(batch_B)`` returns the ``SamplesFromReplay`` described in
    ``SequenceNStepReturnBuffer``, as torch tensors.
    """


class AsyncUniformSequenceReplayBuffer(AsyncReplayBufferMixin, UniformSequenceReplayBuffer):
    """``UniformSequenceReplayBuffer`` in shared memory behind a reader-writer lock."""
