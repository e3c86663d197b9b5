"""Uniformly sampled transition replay."""

from __future__ import annotations

from rlpyt.replays.async_ import AsyncReplayBufferMixin
from rlpyt.replays.non_sequence.n_step import NStepReturnBuffer
from rlpyt.replays.uniform import UniformReplay

__all__ = ["AsyncUniformReplayBuffer", "UniformReplayBuffer"]


class UniformReplayBuffer(UniformReplay, NStepReturnBuffer):
    """Transition replay with uniform sampling (DQN, DDPG, SAC).

    Args:
        example: one step of the samples to store, e.g.
            ``SamplesToBuffer(observation, action, reward, done)``.
        size: transitions held (``T = size // B`` steps per env).
        B: environments appending side by side.
        discount: discount of the n-step return.  Default ``1``.
        n_step_return: steps summed into ``return_``.  Default ``1``.

    ``sample_batch(batch_B)`` returns ``SamplesFromReplay(agent_inputs, action,
    return_, done, done_n, target_inputs)`` as torch tensors.
    """


class AsyncUniformReplayBuffer(AsyncReplayBufferMixin, UniformReplayBuffer):
    """``UniformReplayBuffer`` in shared memory behind a reader-writer lock."""
