"""Numpy twins of the torch helpers in ``rlpyt.utils.tensor``."""

from __future__ import annotations

import numpy as np

__all__ = ["from_onehot", "infer_leading_dims", "select_at_indexes", "to_onehot", "valid_mean"]


def select_at_indexes(indexes: np.ndarray, array: np.ndarray) -> np.ndarray:
    """Pick ``array[..., indexes[...]]`` along the first dim after the leading dims."""
    dim = indexes.ndim
    idx = np.expand_dims(indexes.astype(np.int64), axis=dim)
    rest = array.shape[dim + 1 :]
    idx = idx.reshape(idx.shape + (1,) * len(rest))
    return np.take_along_axis(array, idx, axis=dim).squeeze(dim)


def to_onehot(indexes, num: int, dtype=np.float32) -> np.ndarray:
    indexes = np.asarray(indexes)
    onehot = np.zeros(indexes.shape + (num,), dtype=dtype)
    np.put_along_axis(onehot, indexes[..., None].astype(np.int64), 1, axis=-1)
    return onehot


def from_onehot(onehot: np.ndarray, axis: int = -1, dtype=np.int64) -> np.ndarray:
    return np.argmax(onehot, axis=axis).astype(dtype)


def valid_mean(array: np.ndarray, valid: np.ndarray | None = None, axis=None):
    if valid is None:
        return array.mean(axis=axis)
    valid = np.asarray(valid, dtype=array.dtype)
    while valid.ndim < array.ndim:
        valid = valid[..., None]
    valid = np.broadcast_to(valid, array.shape)
    return (array * valid).sum(axis=axis) / np.maximum(valid.sum(axis=axis), 1)


def infer_leading_dims(array: np.ndarray, dim: int) -> tuple[int, int, int, tuple]:
    lead_dim = array.ndim - dim
    if lead_dim not in (0, 1, 2):
        raise ValueError(
            f"infer_leading_dims: input of shape {array.shape} has {lead_dim} leading dims for a "
            f"data dim of {dim}; expected 0, 1 or 2"
        )
    T, B = (array.shape[:2] if lead_dim == 2 else (1, array.shape[0] if lead_dim else 1))
    return lead_dim, T, B, tuple(array.shape[lead_dim:])
