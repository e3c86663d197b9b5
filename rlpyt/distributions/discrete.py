"""Shared pieces of distributions over a finite set of actions."""

from __future__ import annotations

import torch

from rlpyt.utils.tensor import from_onehot, to_onehot


class DiscreteMixin:
    """Action count, action dtype and one-hot conversion for discrete distributions.

    Args:
        dim: number of actions.
        dtype: dtype of sampled action indexes (default ``torch.long``).
        onehot_dtype: dtype of one-hot encodings (default ``torch.float``).
    """

    def __init__(
        self, dim: int, dtype: torch.dtype = torch.long, onehot_dtype: torch.dtype = torch.float
    ):
        if not isinstance(dim, int) or isinstance(dim, bool) or dim < 1:
            raise ValueError(f"dim (number of actions) must be a positive int, got {dim!r}")
        self._dim = dim
        self.dtype = dtype
        self.onehot_dtype = onehot_dtype

    @property
    def dim(self) -> int:
        return self._dim

    def to_onehot(self, indexes: torch.Tensor, dtype: torch.dtype | None = None) -> torch.Tensor:
        """``[...]`` action indexes -> ``[..., dim]`` one-hot (``onehot_dtype`` by default)."""
        return to_onehot(indexes, self._dim, dtype=dtype or self.onehot_dtype)

    def from_onehot(self, onehot: torch.Tensor, dtype: torch.dtype | None = None) -> torch.Tensor:
        """``[..., dim]`` one-hot -> ``[...]`` action indexes (``dtype`` by default)."""
        return from_onehot(onehot, dtype=dtype or self.dtype)
