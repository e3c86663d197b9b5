"""Nearest-neighbour downsampling of a fixed screen buffer as a few strided copies.

``cv2.resize(..., interpolation=cv2.INTER_NEAREST)`` picks, for every output pixel,
one input pixel chosen from the coordinates alone.  For Atari screens (210x160 ->
104x80) the picked rows form two evenly spaced runs and the columns one, so the
resize equals two strided numpy copies between views made once — several times
cheaper per call than ``cv2.resize`` on such small images.  The plan is derived
from ``cv2.resize`` itself (on an image of pixel indices), so it always agrees with
it; frame sizes whose pattern needs many runs (84x84, for one) get no plan, and
callers gather the same pixels with ``nearest_index`` instead (one ``ndarray.take``,
about half the time of ``cv2.resize`` there).
"""

from __future__ import annotations

import cv2
import numpy as np

MAX_RUNS = 4  # Beyond this many strided copies cv2.resize is as cheap.


def nearest_index(src_shape: tuple[int, int], dst_shape: tuple[int, int]) -> np.ndarray:
    """Flat indices into a ``src_shape`` image of the pixels that
    ``cv2.resize(..., interpolation=cv2.INTER_NEAREST)`` to ``dst_shape`` (H x W) picks:
    ``src.reshape(-1).take(index)`` is that resize."""
    h, w = src_shape
    index = np.arange(h * w, dtype=np.int32).reshape(h, w)
    picked = cv2.resize(index, (dst_shape[1], dst_shape[0]), interpolation=cv2.INTER_NEAREST)
    return picked.astype(np.intp)


def nearest_copy_plan(src: np.ndarray, dst: np.ndarray) -> list[tuple] | None:
    """``(dst_view, src_view)`` pairs whose copies equal
    ``cv2.resize(src, dst.shape[::-1], dst=dst, interpolation=cv2.INTER_NEAREST)``.

    Args:
        src: the 2-D input buffer (reused every call: the views alias it).
        dst: the 2-D output buffer.

    Returns ``None`` when the picked pixels do not form at most ``MAX_RUNS`` evenly
    spaced row runs over one evenly spaced set of columns.
    """
    w = src.shape[1]
    picked = nearest_index(src.shape, dst.shape)
    rows, cols = picked[:, 0] // w, picked[0] % w
    if not np.array_equal(picked, rows[:, None] * w + cols[None, :]):
        return None
    col_slice = _even_slice(cols)
    if col_slice is None:
        return None
    runs = _even_runs(rows)
    if len(runs) > MAX_RUNS:
        return None
    return [(dst[a:b], src[_even_slice(rows[a:b]), col_slice]) for a, b in runs]


def _even_runs(indices: np.ndarray) -> list[tuple[int, int]]:
    """Split ``indices`` greedily into ``[a, b)`` pieces of constant positive step."""
    runs, start, n = [], 0, len(indices)
    while start < n:
        stop = start + 1
        if stop < n:
            step = indices[stop] - indices[start]
            while stop < n and indices[stop] - indices[stop - 1] == step and step > 0:
                stop += 1
        runs.append((start, stop))
        start = stop
    return runs


def _even_slice(indices: np.ndarray) -> slice | None:
    """The slice selecting exactly ``indices`` (constant positive step), else None."""
    if len(indices) == 1:
        return slice(int(indices[0]), int(indices[0]) + 1)
    steps = np.diff(indices)
    if steps[0] <= 0 or np.any(steps != steps[0]):
        return None
    return slice(int(indices[0]), int(indices[-1]) + 1, int(steps[0]))
