"""Which sequence replay buffer ``R2D1`` builds, and what it stores.

``R2D1`` stores ``SamplesToBufferRnn`` (observation, action, reward, done and the
agent's ``prev_rnn_state``; plus ``timeout`` when bootstrapping through time limits) in
a sequence replay from ``rlpyt.replays.sequence``, extended by ``R2d1SequenceMixin``
with what an exact replay of the agent's inputs needs:

* ``action``: the actions taken at the trained steps (``all_action`` holds the
  *previous* actions, the model's input);
* ``episode_start``: ``[L, batch_B]``, True where an episode ended at the step before,
  so the learner zeroes the recurrent state, the previous action and the previous
  reward there, as the sampler did;
* ``timeout_n`` (with ``timeout`` stored): the first episode end within a trained step's
  n-step window is a time-limit truncation (its bootstrap observation was never stored,
  so the step is left out of the loss).

The rule (``r2d1_replay_buffer_class``): frame storage for ``uint8`` frame stacks,
prioritized or uniform, and the ``Async...`` twin for asynchronous runners.
"""

from __future__ import annotations

import numpy as np
import torch

from rlpyt.algos.dqn.replay import is_frame_stack
from rlpyt.replays.sequence.frame import (
    AsyncPrioritizedSequenceReplayFrameBuffer,
    AsyncUniformSequenceReplayFrameBuffer,
    PrioritizedSequenceReplayFrameBuffer,
    UniformSequenceReplayFrameBuffer,
)
from rlpyt.replays.sequence.n_step import SamplesFromReplay
from rlpyt.replays.sequence.prioritized import (
    AsyncPrioritizedSequenceReplayBuffer,
    PrioritizedSequenceReplayBuffer,
)
from rlpyt.replays.sequence.uniform import (
    AsyncUniformSequenceReplayBuffer,
    UniformSequenceReplayBuffer,
)
from rlpyt.utils.collections import namedarraytuple

__all__ = [
    "R2d1SequenceMixin",
    "first_end_is_timeout",
    "SamplesFromReplayR2d1",
    "SamplesFromReplayR2d1Tl",
    "SamplesToBufferRnn",
    "SamplesToBufferRnnTl",
    "r2d1_replay_buffer_class",
]

SamplesToBufferRnn = namedarraytuple(
    "SamplesToBufferRnn", ["observation", "action", "reward", "done", "prev_rnn_state"])
SamplesToBufferRnnTl = namedarraytuple(
    "SamplesToBufferRnnTl", SamplesToBufferRnn._fields + ("timeout",))
SamplesFromReplayR2d1 = namedarraytuple(
    "SamplesFromReplayR2d1", SamplesFromReplay._fields + ("action", "episode_start"))
SamplesFromReplayR2d1Tl = namedarraytuple(
    "SamplesFromReplayR2d1Tl", SamplesFromReplayR2d1._fields + ("timeout_n",))


class R2d1SequenceMixin:
    """Put before a sequence replay class: adds ``action``, ``episode_start`` and (when
    ``timeout`` is stored) ``timeout_n`` to every sampled batch (see the module doc)."""

    def _extract_batch(self, T_idxs: np.ndarray, B_idxs: np.ndarray):
        batch = super()._extract_batch(T_idxs, B_idxs)
        trained_T = self.warmup_T + self.batch_T
        steps = (T_idxs + np.arange(self.sequence_length)[:, None]) % self.T  # [L, batch_B]
        B_seq = B_idxs[None, :]
        done = self.samples.done
        extras = dict(
            action=self.samples.action[steps[:trained_T], B_seq],
            episode_start=done[(steps - 1) % self.T, B_seq].astype(bool),
        )
        if "timeout" not in self.samples._fields:
            return SamplesFromReplayR2d1(*batch, **extras)
        window = steps[:trained_T + self.n_step_return - 1]
        extras["timeout_n"] = first_end_is_timeout(
            done[window, B_seq].astype(bool), self.samples.timeout[window, B_seq].astype(bool),
            self.n_step_return)
        return SamplesFromReplayR2d1Tl(*batch, **extras)


def first_end_is_timeout(done, timeout, n_step: int):
    """``[T - n_step + 1, B]``: whether the first ``done`` in ``t .. t + n_step - 1`` is a
    ``timeout`` (a truncation; ``timeout`` implies ``done``).  Boolean numpy arrays or
    torch tensors ``[T, B]`` in, the same kind out."""
    length = done.shape[0] - n_step + 1
    zeros_like = torch.zeros_like if isinstance(done, torch.Tensor) else np.zeros_like
    result = zeros_like(done[:length])
    ended = zeros_like(result)
    for k in range(n_step):
        result |= ~ended & timeout[k:k + length]
        ended |= done[k:k + length]
    return result


class R2d1UniformSequenceReplayBuffer(R2d1SequenceMixin, UniformSequenceReplayBuffer):
    """``UniformSequenceReplayBuffer`` with the R2D1 extras."""


class R2d1PrioritizedSequenceReplayBuffer(R2d1SequenceMixin, PrioritizedSequenceReplayBuffer):
    """``PrioritizedSequenceReplayBuffer`` with the R2D1 extras."""


class R2d1UniformSequenceReplayFrameBuffer(R2d1SequenceMixin, UniformSequenceReplayFrameBuffer):
    """``UniformSequenceReplayFrameBuffer`` with the R2D1 extras."""


class R2d1PrioritizedSequenceReplayFrameBuffer(
    R2d1SequenceMixin, PrioritizedSequenceReplayFrameBuffer
):
    """``PrioritizedSequenceReplayFrameBuffer`` with the R2D1 extras."""


class AsyncR2d1UniformSequenceReplayBuffer(R2d1SequenceMixin, AsyncUniformSequenceReplayBuffer):
    """``AsyncUniformSequenceReplayBuffer`` with the R2D1 extras."""


class AsyncR2d1PrioritizedSequenceReplayBuffer(
    R2d1SequenceMixin, AsyncPrioritizedSequenceReplayBuffer
):
    """``AsyncPrioritizedSequenceReplayBuffer`` with the R2D1 extras."""


class AsyncR2d1UniformSequenceReplayFrameBuffer(
    R2d1SequenceMixin, AsyncUniformSequenceReplayFrameBuffer
):
    """``AsyncUniformSequenceReplayFrameBuffer`` with the R2D1 extras."""


class AsyncR2d1PrioritizedSequenceReplayFrameBuffer(
    R2d1SequenceMixin, AsyncPrioritizedSequenceReplayFrameBuffer
):
    """``AsyncPrioritizedSequenceReplayFrameBuffer`` with the R2D1 extras."""


# (frames, prioritized) -> (synchronous class, asynchronous class)
_CLASSES = {
    (False, False): (R2d1UniformSequenceReplayBuffer, AsyncR2d1UniformSequenceReplayBuffer),
    (False, True): (R2d1PrioritizedSequenceReplayBuffer,
                    AsyncR2d1PrioritizedSequenceReplayBuffer),
    (True, False): (R2d1UniformSequenceReplayFrameBuffer,
                    AsyncR2d1UniformSequenceReplayFrameBuffer),
    (True, True): (R2d1PrioritizedSequenceReplayFrameBuffer,
                   AsyncR2d1PrioritizedSequenceReplayFrameBuffer),
}


def r2d1_replay_buffer_class(observation, prioritized: bool, async_: bool = False) -> type:
    """The R2D1 sequence replay class for one example ``observation`` (see the module doc)."""
    sync_cls, async_cls = _CLASSES[(is_frame_stack(observation), bool(prioritized))]
    return async_cls if async_ else sync_cls
