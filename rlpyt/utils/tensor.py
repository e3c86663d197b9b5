"""Torch helpers for leading dims, indexing and masked means."""

from __future__ import annotations

import torch

__all__ = [
    "from_onehot",
    "infer_leading_dims",
    "restore_leading_dims",
    "select_at_indexes",
    "to_onehot",
    "valid_mean",
]


def select_at_indexes(indexes: torch.Tensor, tensor: torch.Tensor) -> torch.Tensor:
    """Pick ``tensor[..., indexes[...]]`` along the first dim after the leading dims.

    ``indexes`` has shape ``L`` (leading dims); ``tensor`` has shape ``L + [N] + rest``.
    Returns shape ``L + rest``.
    """
    dim = indexes.dim()
    if tuple(tensor.shape[:dim]) != tuple(indexes.shape):
        raise ValueError(
            f"select_at_indexes: indexes shape {tuple(indexes.shape)} must equal the leading "
            f"dims of tensor shape {tuple(tensor.shape)}"
        )
    rest = tensor.shape[dim + 1 :]
    idx = indexes.long().reshape(indexes.shape + (1,) * (1 + len(rest)))
    idx = idx.expand(indexes.shape + (1,) + rest)
    return tensor.gather(dim, idx).squeeze(dim)


def to_onehot(indexes: torch.Tensor, num: int, dtype=None) -> torch.Tensor:
    """One-hot encode integer ``indexes`` into a new trailing dim of size ``num``."""
    dtype = torch.float32 if dtype is None else dtype
    onehot = torch.zeros(indexes.shape + (num,), dtype=dtype, device=indexes.device)
    onehot.scatter_(-1, indexes.long().unsqueeze(-1), 1)
    return onehot


def from_onehot(onehot: torch.Tensor, dim: int = -1, dtype=None) -> torch.Tensor:
    """Inverse of ``to_onehot``: argmax over ``dim``."""
    indexes = torch.argmax(onehot, dim=dim)
    return indexes if dtype is None else indexes.type(dtype)


def valid_mean(tensor: torch.Tensor, valid: torch.Tensor | None = None, dim=None) -> torch.Tensor:
    """Mean over entries where ``valid`` is nonzero (all entries if ``valid`` is None).

    ``valid`` broadcasts against ``tensor``'s leading dims (e.g. ``[T, B]`` for a
    ``[T, B]`` tensor).  With ``dim`` given, reduces only over that dim.
    """
    dim = () if dim is None else dim
    if valid is None:
        return tensor.mean(dim=dim) if dim != () else tensor.mean()
    valid = valid.type_as(tensor)
    while valid.dim() < tensor.dim():
        valid = valid.unsqueeze(-1)
    valid = valid.expand_as(tensor)
    if dim == ():
        return (tensor * valid).sum() / valid.sum().clamp(min=1)
    return (tensor * valid).sum(dim=dim) / valid.sum(dim=dim).clamp(min=1)


def infer_leading_dims(tensor: torch.Tensor, dim: int) -> tuple[int, int, int, tuple]:
    """Split ``tensor.shape`` into leading dims and a data shape of ``dim`` dims.

    Returns ``(lead_dim, T, B, shape)`` with ``lead_dim`` in {0, 1, 2} for inputs
    with leading dims ``[]``, ``[B]`` or ``[T, B]``.  Models reshape to
    ``[T * B, *shape]``, compute, then call ``restore_leading_dims``.
    """
    lead_dim = tensor.dim() - dim
    if lead_dim not in (0, 1, 2):
        raise ValueError(
            f"infer_leading_dims: input of shape {tuple(tensor.shape)} has {lead_dim} leading "
            f"dims for a data dim of {dim}; expected 0, 1 or 2 ([], [B] or [T, B])"
        )
    T, B = 1, 1
    if lead_dim == 2:
        T, B = tensor.shape[:2]
    elif lead_dim == 1:
        B = tensor.shape[0]
    return lead_dim, T, B, tuple(tensor.shape[lead_dim:])


def restore_leading_dims(tensors, lead_dim: int, T: int = 1, B: int = 1):
    """Reshape ``[T * B, ...]`` outputs back to leading dims ``[]``, ``[B]`` or ``[T, B]``.

    ``tensors`` is one tensor or a tuple/list of them (returned in the same form).
    """
    is_seq = isinstance(tensors, (tuple, list))
    tensors = tensors if is_seq else (tensors,)
    if lead_dim == 2:
        out = tuple(t.reshape((T, B) + t.shape[1:]) for t in tensors)
    elif lead_dim == 0:
        if any(t.shape[0] != 1 for t in tensors):
            raise ValueError("restore_leading_dims: lead_dim=0 needs outputs with batch size 1")
        out = tuple(t.squeeze(0) for t in tensors)
    else:
        out = tuple(tensors)
    return out if is_seq else out[0]
