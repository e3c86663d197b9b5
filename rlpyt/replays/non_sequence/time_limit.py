"""Transition replay that also reports time-limit truncations (SAC, TD3, DDPG)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from rlpyt.replays.async_ import AsyncPrioritizedReplayMixin, AsyncReplayBufferMixin
from rlpyt.replays.non_sequence.n_step import NStepReturnBuffer, SamplesFromReplay
from rlpyt.replays.prioritized import PrioritizedReplay
from rlpyt.replays.uniform import UniformReplay
from rlpyt.utils.collections import namedarraytuple

__all__ = [
    "AsyncTlPrioritizedReplayBuffer",
    "AsyncTlUniformReplayBuffer",
    "NStepTimeLimitBuffer",
    "SamplesFromReplayTL",
    "TlPrioritizedReplayBuffer",
    "TlUniformReplayBuffer",
]

SamplesFromReplayTL = namedarraytuple(
    "SamplesFromReplayTL", SamplesFromReplay._fields + ("timeout", "timeout_n")
)


class NStepTimeLimitBuffer(NStepReturnBuffer):
    """n-step storage that also keeps ``timeout`` and computes ``timeout_n``.

    The example needs a ``timeout`` field (``env_info.timeout``: the episode was cut
    by a time limit, so its ``done`` is not a true end).  ``timeout_n[t]`` says
    whether the done that ended the n-step window of ``t`` was such a truncation;
    algorithms that bootstrap through time limits drop those samples from the loss,
    since the observation after a truncation was never stored.
    """

    BatchCls = SamplesFromReplayTL

    def __init__(self, example, *args, **kwargs):
        super().__init__(example, *args, **kwargs)
        if self.n_step_return > 1:
            self.samples_timeout_n = self._ring_like(example.timeout)
        else:
            self.samples_timeout_n = self.samples.timeout

    def _required_fields(self) -> tuple[str, ...]:
        return super()._required_fields() + ("timeout",)

    def _write_n_step(self, positions: np.ndarray, window: np.ndarray) -> None:
        super()._write_n_step(positions, window)
        done = self.samples.done[window].astype(bool)
        timeout = self.samples.timeout[window].astype(bool)
        length = len(positions)
        ended = np.zeros((length, self.B), dtype=bool)
        timeout_n = np.zeros((length, self.B), dtype=bool)
        for k in range(self.n_step_return):  # Short loop over n; vectorised over positions.
            timeout_n |= ~ended & done[k:k + length] & timeout[k:k + length]
            ended |= done[k:k + length]
        self.samples_timeout_n[positions] = timeout_n

    def _extra_fields(self, flat: np.ndarray, leaf: Callable) -> tuple:
        return (leaf(self._take(self.samples.timeout, flat)),
                leaf(self._take(self.samples_timeout_n, flat)))


class TlUniformReplayBuffer(UniformReplay, NStepTimeLimitBuffer):
    """``UniformReplayBuffer`` whose samples add ``timeout`` and ``timeout_n``.

    Args:
        example: one step of samples with fields ``observation, action, reward,
            done, timeout``.
        size, B, discount=1, n_step_return=1: as ``UniformReplayBuffer``.
    """


class TlPrioritizedReplayBuffer(PrioritizedReplay, NStepTimeLimitBuffer):
    """``PrioritizedReplayBuffer`` whose samples add ``timeout`` and ``timeout_n``.

    Args:
        example: as ``TlUniformReplayBuffer``.
        size, B, discount=1, n_step_return=1, alpha=0.6, beta=0.4, default_priority=1,
        input_priorities=False, input_priority_shift=0, beta_final=None,
        beta_steps=None: as ``PrioritizedReplayBuffer``.
    """


class AsyncTlUniformReplayBuffer(AsyncReplayBufferMixin, TlUniformReplayBuffer):
    """``TlUniformReplayBuffer`` in shared memory behind a reader-writer lock."""


class AsyncTlPrioritizedReplayBuffer(AsyncPrioritizedReplayMixin, TlPrioritizedReplayBuffer):
    """``TlPrioritizedReplayBuffer`` in shared memory behind a reader-writer lock."""
