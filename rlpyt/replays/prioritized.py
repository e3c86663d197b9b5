"""Proportional prioritized sampling (Schaul et al. 2016) over any n-step ring buffer."""

from __future__ import annotations

import numpy as np
import torch

from rlpyt.replays.sum_tree import SumTree
from rlpyt.utils.buffer import get_leading_dims, np_mp_array, numpify_buffer
from rlpyt.utils.collections import namedarraytuple

__all__ = ["PrioritizedReplay"]

_WITH_WEIGHTS: dict[type, type] = {}  # Batch class -> the same with is_weights.


class PrioritizedReplay:
    """Mixin: samples positions with probability proportional to ``priority ** alpha``.

    Args (keywords, on top of the buffer's own):
        alpha: priority exponent; 0 is uniform.  Default ``0.6``.
        beta: importance-sampling exponent; 1 fully corrects the sampling bias.
            Default ``0.4``.
        default_priority: the priority of the first samples; after that, new
            samples get the largest priority seen so far (at least this).  ``None``
            means 1.  Default ``1``.
        input_priorities: appended batches come as
            ``PrioritiesSamplesToBuffer(priorities, samples)`` with priorities for
            the new rows (``[rows, B]``), for every step of the batch (``[T, B]``, of
            which the row starts' are used), ``[B]`` or a scalar; otherwise plain
            samples and new rows get the running max priority.  Default ``False``.
        input_priority_shift: rows back from the new ones that input priorities
            apply to (R2D1: ``warmup_T // rnn_state_interval``, the sequence whose
            trained part the new steps are).  Default ``0``.
        beta_final: if given, beta moves linearly from ``beta`` to ``beta_final``
            as ``beta_steps`` transitions (``T * B`` per append) arrive.  Default ``None``.
        beta_steps: length of that schedule in transitions.  Default ``None``.

    ``sample_batch`` adds ``is_weights = (N P(i)) ** -beta``, normalised by their max
    in the batch.  Give the new priorities of the last batch (e.g. absolute TD errors)
    to ``update_batch_priorities``.
    """

    def __init__(
        self,
        *args,
        alpha: float = 0.6,
        beta: float = 0.4,
        default_priority: float | None = 1.0,
        input_priorities: bool = False,
        input_priority_shift: int = 0,
        beta_final: float | None = None,
        beta_steps: int | None = None,
        **kwargs,
    ):
        name = type(self).__name__
        default_priority = 1.0 if default_priority is None else default_priority
        for key, value in (("alpha", alpha), ("beta", beta), ("default_priority", default_priority)):
            if not (np.isfinite(value) and value >= 0):
                raise ValueError(f"{name}: {key}={value!r} must be finite and >= 0")
        if default_priority <= 0:
            raise ValueError(f"{name}: default_priority={default_priority!r} must be > 0")
        if int(input_priority_shift) != input_priority_shift or input_priority_shift < 0:
            raise ValueError(
                f"{name}: input_priority_shift={input_priority_shift!r} must be an integer >= 0")
        if (beta_final is None) != (beta_steps is None):
            raise ValueError(f"{name}: give both beta_final and beta_steps, or neither "
                             f"(got beta_final={beta_final!r}, beta_steps={beta_steps!r})")
        if beta_steps is not None and not beta_steps > 0:
            raise ValueError(f"{name}: beta_steps={beta_steps!r} must be > 0")
        super().__init__(*args, **kwargs)
        self.alpha = float(alpha)
        self.beta = float(beta)
        self.beta_final = beta_final
        self.beta_steps = beta_steps
        self.default_priority = float(default_priority)
        self.input_priorities = bool(input_priorities)
        self.input_priority_shift = int(input_priority_shift)
        self.priority_tree = SumTree(
            T=self.n_rows,
            B=self.B,
            off_backward=self.off_backward_rows,
            off_forward=self.off_forward_rows,
            default_value=self.default_priority ** self.alpha,
            share_memory=self.async_,
        )
        self._max_priority = np_mp_array(1, np.float64) if self.async_ else np.zeros(1)
        self._max_priority[0] = self.default_priority
        self._sampled = None  # (rows, B_idxs, tree count) of the last batch, this process.

    # ----- beta -----

    def set_beta(self, beta: float) -> None:
        """Use ``beta`` from now on (stops a ``beta_final`` schedule)."""
        if not (np.isfinite(beta) and beta >= 0):
            raise ValueError(f"{type(self).__name__}.set_beta: beta={beta!r} must be >= 0")
        self.beta = float(beta)
        self.beta_final = self.beta_steps = None

    def current_beta(self) -> float:
        if self.beta_final is None:
            return self.beta
        progress = min(1.0, self.count * self.B / self.beta_steps)
        return self.beta + progress * (self.beta_final - self.beta)

    # ----- writing -----

    def append_samples(self, samples):
        priorities = None
        if getattr(samples, "_fields", None) == ("priorities", "samples"):
            priorities, samples = samples.priorities, samples.samples
        if self.input_priorities and priorities is None:
            raise ValueError(
                f"{type(self).__name__}.append_samples: built with input_priorities=True, so "
                f"samples must come as PrioritiesSamplesToBuffer(priorities, samples)")
        if priorities is not None and not self.input_priorities:
            raise ValueError(
                f"{type(self).__name__}.append_samples: got priorities with the samples, but "
                f"the buffer was built with input_priorities=False")
        count = self.count
        T_new = get_leading_dims(numpify_buffer(samples.reward), 1)[0]
        new_rows = self.rows_begun(count + T_new) - self.rows_begun(count)
        values = None
        if priorities is not None:
            values = self._input_priority_values(priorities, T_new, count, new_rows)
        previous = self.valid_row_range()
        T_idxs, B_idxs = super().append_samples(samples)
        self.priority_tree.advance(new_rows, self._max_priority[0] ** self.alpha,
                                   window=self.valid_row_range(), previous_window=previous)
        if values is not None:
            self._apply_input_priorities(values)
        return T_idxs, B_idxs

    def _input_priority_values(self, priorities, T_new: int, count: int,
                               new_rows: int) -> np.ndarray:
        """Input priorities as ``[new_rows, B]`` float64, checked before anything is written.

        Accepts one priority per new row (``[new_rows, B]``), per step of the batch
        (``[T_new, B]``: the entries of the steps that start rows are used, so the
        caller need not know where the row grid falls in the batch), per env (``[B]``)
        or a scalar.
        """
        values = np.asarray(numpify_buffer(priorities), dtype=np.float64)
        if values.size and not (np.all(np.isfinite(values)) and values.min() >= 0):
            raise ValueError(f"{type(self).__name__}.append_samples: input priorities must be "
                             f"finite and >= 0, got e.g. {values.ravel()[:5]}")
        if values.ndim == 2 and len(values) == T_new != new_rows:
            values = values[self.row_start_steps(count, T_new)]
        try:
            values = np.broadcast_to(values, (new_rows, self.B))
        except ValueError:
            raise ValueError(
                f"{type(self).__name__}.append_samples: input priorities of shape {values.shape} "
                f"do not fit [{new_rows}, {self.B}] (new rows x B) or [{T_new}, {self.B}] "
                f"(steps x B); give one of those, [B] or a scalar") from None
        return values

    def _apply_input_priorities(self, values: np.ndarray) -> None:
        new_rows = len(values)
        count = self.priority_tree.count
        rows = np.arange(count - new_rows, count) - self.input_priority_shift
        kept = rows >= max(0, count - self.n_rows)  # Rows that exist (written, not overwritten).
        rows, values = rows[kept] % self.n_rows, values[kept]
        self._note_max(values)
        self.priority_tree.update(
            np.repeat(rows, self.B), np.tile(np.arange(self.B), len(rows)),
            values.reshape(-1) ** self.alpha, window=self.valid_row_range(),
        )

    def _note_max(self, values: np.ndarray) -> None:
        if values.size and np.all(np.isfinite(values)):
            self._max_priority[0] = max(self._max_priority[0], float(values.max()))

    # ----- reading -----

    def sample_batch(self, batch_B: int):
        """``batch_B`` samples drawn by priority, with ``is_weights``, as torch tensors."""
        if isinstance(batch_B, bool) or int(batch_B) != batch_B or batch_B < 1:
            raise ValueError(f"{type(self).__name__}.sample_batch: batch_B={batch_B!r} "
                             f"must be an integer >= 1")
        (rows, B_idxs), leaf_priorities = self.priority_tree.sample(int(batch_B))
        batch = self.extract_batch(rows * self.row_interval, B_idxs)
        # w_i = (N P(i)) ** -beta / max_j (N P(j)) ** -beta; N and the total cancel.
        is_weights = (leaf_priorities / leaf_priorities.min()) ** -self.current_beta()
        self._sampled = (rows, B_idxs, self.priority_tree.count)
        return self._with_weights_cls(type(batch))(
            *batch, is_weights=torch.from_numpy(is_weights.astype(np.float32)))

    @staticmethod
    def _with_weights_cls(batch_cls):
        """``batch_cls`` plus an ``is_weights`` field (e.g. ``SamplesFromReplayPri``)."""
        cls = _WITH_WEIGHTS.get(batch_cls)
        if cls is None:  # Kept out of the instance, so that buffers pickle.
            cls = _WITH_WEIGHTS[batch_cls] = namedarraytuple(
                batch_cls.__name__ + "Pri", batch_cls._fields + ("is_weights",))
        return cls

    # ----- priority updates -----

    def update_batch_priorities(self, priorities) -> None:
        """New priorities (``[batch_B]``, e.g. |TD error|) for the last sampled batch.

        Positions overwritten by new data since that batch was drawn are skipped.
        """
        if self._sampled is None:
            raise RuntimeError(f"{type(self).__name__}.update_batch_priorities: no batch "
                               f"has been sampled in this process yet")
        rows, B_idxs, sampled_count = self._sampled
        values = self._priority_array(priorities, len(rows), "update_batch_priorities")
        count = self.priority_tree.count
        newest_write = count - 1 - (count - 1 - rows) % self.n_rows
        fresh = newest_write < sampled_count
        self._note_max(values)
        self.priority_tree.update(rows[fresh], B_idxs[fresh], values[fresh] ** self.alpha,
                                  window=self.valid_row_range())

    def update_priorities(self, T_idxs, B_idxs, priorities) -> None:
        """Set priorities at ring positions ``(T_idxs, B_idxs)`` (sample starts)."""
        T_idxs = np.asarray(T_idxs, dtype=np.int64).reshape(-1)
        if np.any(T_idxs % self.row_interval):
            raise ValueError(
                f"{type(self).__name__}.update_priorities: T_idxs must be sample starts, "
                f"multiples of {self.row_interval}; got "
                f"{T_idxs[T_idxs % self.row_interval != 0][:5]}")
        values = self._priority_array(priorities, len(T_idxs), "update_priorities")
        self._note_max(values)
        self.priority_tree.update(T_idxs // self.row_interval, B_idxs, values ** self.alpha,
                                  window=self.valid_row_range())

    def _priority_array(self, priorities, length: int, where: str) -> np.ndarray:
        values = np.asarray(numpify_buffer(priorities), dtype=np.float64).reshape(-1)
        if len(values) != length:
            raise ValueError(f"{type(self).__name__}.{where}: got {len(values)} priorities "
                             f"for {length} positions")
        return values
