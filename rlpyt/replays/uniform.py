"""Uniform sampling over the valid rows of any n-step ring buffer."""

from __future__ import annotations

import numpy as np

__all__ = ["UniformReplay"]


class UniformReplay:
    """Mixin: ``sample_batch`` draws every valid (row, env) position equally often.

    Works for transition and sequence buffers alike (a row is one possible sample
    start).  Uses numpy's global random state, which ``set_seed`` seeds.
    """

    def sample_batch(self, batch_B: int):
        """``batch_B`` samples drawn uniformly with replacement, as torch tensors."""
        T_idxs, B_idxs = self.sample_idxs(batch_B)
        return self.extract_batch(T_idxs, B_idxs)

    def sample_idxs(self, batch_B: int) -> tuple[np.ndarray, np.ndarray]:
        """Ring positions ``(T_idxs, B_idxs)`` of ``batch_B`` uniform draws."""
        if isinstance(batch_B, bool) or int(batch_B) != batch_B or batch_B < 1:
            raise ValueError(f"{type(self).__name__}.sample_batch: batch_B={batch_B!r} "
                             f"must be an integer >= 1")
        low, high = self.valid_row_range()
        if high <= low:
            raise RuntimeError(
                f"{type(self).__name__}.sample_batch: nothing to sample yet ({self.count} "
                f"steps per env appended; a sample needs {self.off_backward + 1} consecutive "
                f"stored steps)"
            )
        # One draw per sample over all n (row, env) pairs: floor(n * U), U uniform in
        # [0, 1) with 53 random bits (below n for any n < 2**53), a few times cheaper
        # than randint; uniform over rows and envs, as two independent draws would be.
        n_pairs = (high - low) * self.B
        draws = (np.random.random_sample(int(batch_B)) * n_pairs).astype(np.int64)
        rows, B_idxs = np.divmod(draws, self.B)
        rows += low
        rows %= self.n_rows
        return rows * self.row_interval, B_idxs
