"""Small array helpers: minibatch indexes, ring-buffer sequence windows, zeros/empty.

These work on numpy arrays, torch tensors, and (nested) namedarraytuples of them.
torch is never imported here: a tensor can only reach these functions if the
caller already imported torch, so ``sys.modules`` tells us whether to look for it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import numpy as np

from rlpyt.utils.buffer import buffer_func, get_leading_dims

__all__ = ["empty", "extract_sequences", "iterate_mb_idxs", "zeros"]


def iterate_mb_idxs(
    data_length: int,
    minibatch_size: int,
    shuffle: bool = False,
    rng: np.random.Generator | None = None,
) -> Iterator[slice | np.ndarray]:
    """Yield the indexes of consecutive minibatches over ``data_length`` items.

    Without shuffling each minibatch is a ``slice``; with shuffling it is an integer
    array taken from one random permutation of ``range(data_length)``, so every item
    appears at most once per pass.

    As in classic rlpyt, a final partial minibatch is **dropped**: only
    ``data_length // minibatch_size`` minibatches are yielded, each of exactly
    ``minibatch_size`` items (the remaining ``data_length % minibatch_size`` items are
    skipped this pass; with shuffling, different items are skipped each pass).

    Args:
        data_length: number of items to cover (must be >= ``minibatch_size``).
        minibatch_size: items per minibatch (positive).
        shuffle: draw a random permutation first.
        rng: generator used for the permutation; ``None`` uses the global
            ``np.random`` state (seeded by ``rlpyt.utils.seed.set_seed``).
    """
    data_length = _check_int("data_length", data_length, minimum=0)
    minibatch_size = _check_int("minibatch_size", minibatch_size, minimum=1)
    if minibatch_size > data_length:
        # A silent zero-update pass would hide a misconfigured batch size.
        raise ValueError(
            f"iterate_mb_idxs: minibatch_size={minibatch_size} is larger than "
            f"data_length={data_length}; no full minibatch fits (use minibatch_size <= "
            f"{data_length})"
        )
    if shuffle:
        order = (
            rng.permutation(data_length) if rng is not None else np.random.permutation(data_length)
        )
    for start in range(0, data_length - minibatch_size + 1, minibatch_size):
        batch = slice(start, start + minibatch_size)
        yield order[batch] if shuffle else batch


def extract_sequences(array_or_buffer: Any, T_idxs, B_idxs, T: int):
    """Cut ``[T, len(B_idxs)]`` windows out of a ``[T_total, B_total, ...]`` ring buffer.

    Window ``i`` is ``array[(T_idxs[i] + t) % T_total, B_idxs[i]]`` for ``t in range(T)``:
    a window running past the end of the ring wraps around to its start, as in a
    circular replay buffer.  Fully vectorised (one advanced-indexing gather per leaf).

    Args:
        array_or_buffer: numpy array, torch tensor, or (nested) namedarraytuple of them,
            every leaf with leading dims ``[T_total, B_total]`` (``None`` fields are kept).
        T_idxs: start time of each window, integers in ``[0, T_total)``.
        B_idxs: batch column of each window, integers in ``[0, B_total)``, same length.
        T: window length, ``1 <= T <= T_total``.

    Returns:
        The same structure with leaves of shape ``[T, len(B_idxs), ...]`` (new memory).
    """
    T_total, B_total = get_leading_dims(array_or_buffer, n_dim=2)
    T = _check_int("T", T, minimum=1)
    if T > T_total:
        raise ValueError(f"extract_sequences: T={T} exceeds the ring length T_total={T_total}")
    T_idxs = _as_index_vector("T_idxs", T_idxs, T_total)
    B_idxs = _as_index_vector("B_idxs", B_idxs, B_total)
    if len(T_idxs) != len(B_idxs):
        raise ValueError(
            f"extract_sequences: T_idxs has {len(T_idxs)} entries but B_idxs has "
            f"{len(B_idxs)}; they must match"
        )
    time_idxs = (T_idxs[None, :] + np.arange(T)[:, None]) % T_total  # [T, n]
    batch_idxs = B_idxs[None, :]  # [1, n], broadcast against time_idxs by the indexing
    return buffer_func(array_or_buffer, _gather, time_idxs, batch_idxs)


def _gather(leaf, time_idxs: np.ndarray, batch_idxs: np.ndarray):
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(leaf, torch.Tensor):
        device = leaf.device
        return leaf[
            torch.as_tensor(time_idxs, device=device), torch.as_tensor(batch_idxs, device=device)
        ]
    return leaf[time_idxs, batch_idxs]


def zeros(shape, dtype):
    """Zeros of ``shape``: a torch tensor for a ``torch.dtype``, else a numpy array."""
    return _allocate("zeros", shape, dtype)


def empty(shape, dtype):
    """Uninitialised array of ``shape``: torch for a ``torch.dtype``, else numpy."""
    return _allocate("empty", shape, dtype)


def _allocate(kind: str, shape, dtype):
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(dtype, torch.dtype):
        return getattr(torch, kind)(shape, dtype=dtype)
    try:
        np_dtype = np.dtype(dtype)
    except TypeError as e:
        raise TypeError(
            f"{kind}: dtype={dtype!r} is neither a numpy dtype nor a torch.dtype"
        ) from e
    return getattr(np, kind)(shape, dtype=np_dtype)


def _check_int(name: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {value!r} ({type(value).__name__})")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def _as_index_vector(name: str, idxs, upper: int) -> np.ndarray:
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(idxs, torch.Tensor):
        idxs = idxs.detach().cpu().numpy()
    arr = np.asarray(idxs)
    if arr.ndim != 1:
        raise ValueError(f"extract_sequences: {name} must be 1-D, got shape {arr.shape}")
    if arr.size == 0:
        return arr.astype(np.int64)
    if not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"extract_sequences: {name} must hold integers, got dtype {arr.dtype}")
    bad = (arr < 0) | (arr >= upper)
    if bad.any():
        raise ValueError(
            f"extract_sequences: {name} must lie in [0, {upper}), got {arr[bad][:5].tolist()}"
        )
    return arr.astype(np.int64)
