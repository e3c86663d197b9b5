"""Sequence replay for recurrent agents: whole training sequences from the n-step ring."""

from __future__ import annotations

import numpy as np

from rlpyt.replays.n_step import BaseNStepReturnBuffer, _check_int
from rlpyt.utils.buffer import buffer_from_example, numpify_buffer
from rlpyt.utils.collections import namedarraytuple

__all__ = ["SamplesFromReplay", "SequenceNStepReturnBuffer"]

SamplesFromReplay = namedarraytuple(
    "SamplesFromReplay",
    ["all_observation", "all_action", "all_reward", "return_", "done", "done_n",
     "init_rnn_state"],
)


class SequenceNStepReturnBuffer(BaseNStepReturnBuffer):
    """Stores steps and, every ``rnn_state_interval`` steps, the agent's RNN state.

    Args:
        example: one step of samples: ``observation, action, reward, done`` and,
            when ``rnn_state_interval > 0``, ``prev_rnn_state`` (the recurrent state
            the agent had before acting at that step, e.g. ``RnnState(h, c)`` of
            ``[N, H]``).
        size, B, discount=1, n_step_return=1: as ``BaseNStepReturnBuffer``.
        batch_T: trained steps per sequence (keyword, required).
        rnn_state_interval: steps between stored RNN states; sequences start only
            there (at steps ``0, interval, 2 * interval, ...`` counted from the first
            step ever appended).  ``0`` stores no state (sequences start anywhere, from a
            zero state).  Appended batches may have any ``T``: the state of each step on
            that grid is stored when the step arrives (keyword, required).
        warmup_T: steps before the trained ones that only warm up the RNN state.
            Default ``0``.

    A sequence starting at ring step ``t`` gives ``SamplesFromReplay`` with
    ``all_observation`` = observations ``t .. t + L - 1`` and ``all_action`` /
    ``all_reward`` = actions / rewards ``t - 1 .. t + L - 2`` (the prev_action /
    prev_reward inputs of those steps), ``L = warmup_T + batch_T + n_step_return``;
    ``return_``, ``done``, ``done_n`` for steps ``t .. t + warmup_T + batch_T - 1``;
    ``init_rnn_state`` stored at ``t`` (``[batch_B, ...]``, or ``None``).  The
    algorithm warms up on ``all_*[:warmup_T]``, trains on
    ``all_*[warmup_T:warmup_T + batch_T]`` and runs the target network on
    ``all_*[warmup_T:]``, whose outputs ``n_step_return`` steps on bootstrap the
    n-step returns.
    """

    def __init__(
        self,
        example,
        size: int,
        B: int,
        discount: float = 1.0,
        n_step_return: int = 1,
        *,
        batch_T: int,
        rnn_state_interval: int,
        warmup_T: int = 0,
    ):
        name = type(self).__name__
        _check_int(name, "batch_T", batch_T, 1)
        _check_int(name, "rnn_state_interval", rnn_state_interval, 0)
        _check_int(name, "warmup_T", warmup_T, 0)
        self.batch_T = int(batch_T)
        self.rnn_state_interval = int(rnn_state_interval)
        self.warmup_T = int(warmup_T)
        if self.rnn_state_interval > 0 and "prev_rnn_state" not in getattr(example, "_fields", ()):
            raise ValueError(
                f"{name}: rnn_state_interval={rnn_state_interval} stores RNN states, so the "
                f"example needs a prev_rnn_state field; it has {getattr(example, '_fields', None)}")
        super().__init__(example, size, B, discount, n_step_return)
        if self.rnn_state_interval > 0:
            self.samples_prev_rnn_state = buffer_from_example(
                example.prev_rnn_state, (self.n_rows, self.B), share_memory=self.async_)
        else:
            self.samples_prev_rnn_state = None

    def _excluded_fields(self) -> tuple[str, ...]:
        return super()._excluded_fields() + ("prev_rnn_state",)

    @property
    def row_interval(self) -> int:
        return max(self.rnn_state_interval, 1)

    @property
    def sequence_length(self) -> int:
        """Steps of ``all_observation``: ``warmup_T + batch_T + n_step_return``."""
        return self.warmup_T + self.batch_T + self.n_step_return

    @property
    def off_backward(self) -> int:
        return self.sequence_length - 1

    def _check_layout(self) -> None:
        if self.T % self.row_interval:
            raise ValueError(
                f"{type(self).__name__}: steps per env T = size // B = {self.T} must be a "
                f"multiple of rnn_state_interval={self.rnn_state_interval}")
        super()._check_layout()

    def append_samples(self, samples):
        """Write a ``[T, B]`` batch, storing the RNN states of the row starts among its steps."""
        samples = numpify_buffer(samples)
        count = self.count
        T_idxs, B_idxs = super().append_samples(samples)
        if self.samples_prev_rnn_state is not None:
            steps = self.row_start_steps(count, len(T_idxs))
            rows = (steps + count) // self.row_interval % self.n_rows
            self.samples_prev_rnn_state[rows] = samples.prev_rnn_state[steps]
        return T_idxs, B_idxs

    def _extract_batch(self, T_idxs: np.ndarray, B_idxs: np.ndarray):
        if np.any(T_idxs % self.row_interval):
            raise ValueError(
                f"{type(self).__name__}.extract_batch: sequences start at multiples of "
                f"rnn_state_interval={self.rnn_state_interval}; got T_idxs "
                f"{T_idxs[T_idxs % self.row_interval != 0][:5]}")
        steps = (T_idxs + np.arange(self.sequence_length)[:, None]) % self.T  # [L, batch_B]
        trained = steps[:self.warmup_T + self.batch_T]
        B_seq = B_idxs[None, :]
        s = self.samples
        init_rnn_state = None
        if self.samples_prev_rnn_state is not None:
            init_rnn_state = self.samples_prev_rnn_state[T_idxs // self.row_interval, B_idxs]
        return SamplesFromReplay(
            all_observation=self.extract_observation(steps, B_seq),
            all_action=self._previous(s.action, steps, B_seq),
            all_reward=self._previous(s.reward, steps, B_seq),
            return_=self.samples_return_[trained, B_seq],
            done=s.done[trained, B_seq],
            done_n=self.samples_done_n[trained, B_seq],
            init_rnn_state=init_rnn_state,
        )
