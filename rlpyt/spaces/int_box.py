"""Integer-valued boxes: discrete actions, multi-discrete vectors and uint8 images."""

from __future__ import annotations

from typing import Any

import numpy as np

from rlpyt.spaces.base import Space, resolve_shape


class IntBox(Space):
    """Integers in ``[low, high)`` (``high`` is exclusive), of a given shape and dtype.

    Args:
        low: smallest valid value; a scalar or an array broadcastable to ``shape``.
        high: one past the largest valid value; a scalar or an array.
        shape: shape of one value; ``None`` (default) uses the broadcast shape of
            ``low`` and ``high`` (``()`` for scalars).
        dtype: an integer (or bool) numpy dtype able to hold ``low .. high - 1``;
            default ``"int32"``.
        null_value: the fill value returned by ``null_value()``; default ``None``
            means ``low``.  Must be representable in ``dtype``.

    ``n = high - low`` is the number of values per element (a scalar when the bounds
    are scalars), e.g. the number of actions of a discrete action space.
    """

    def __init__(
        self,
        low: Any,
        high: Any,
        shape: tuple | int | None = None,
        dtype: Any = "int32",
        null_value: Any = None,
    ) -> None:
        super().__init__()
        self._dtype = np.dtype(dtype)
        if self._dtype.kind not in "biu":
            raise ValueError(f"IntBox: dtype must be an integer or bool dtype, got {dtype!r}")
        low_arr = _as_int_array("low", low)
        high_arr = _as_int_array("high", high)
        self._shape = resolve_shape("IntBox", low_arr.shape, high_arr.shape, shape)
        if np.any(low_arr >= high_arr):
            raise ValueError(
                f"IntBox: need low < high everywhere (high is exclusive), got low={low!r}, "
                f"high={high!r}"
            )
        _check_representable("low", low_arr, self._dtype)
        _check_representable("high - 1", high_arr - 1, self._dtype)
        scalar_bounds = low_arr.ndim == 0 and high_arr.ndim == 0
        # Scalar bounds stay Python ints so that ``n`` reads as a plain number.
        self.low = int(low_arr) if scalar_bounds else np.broadcast_to(low_arr, self._shape)
        self.high = int(high_arr) if scalar_bounds else np.broadcast_to(high_arr, self._shape)
        if null_value is None:
            null_value = self.low
        null_arr = _as_int_array("null_value", null_value)
        _check_representable("null_value", null_arr, self._dtype)
        try:
            self._null = np.broadcast_to(null_arr, self._shape).astype(self._dtype)
        except ValueError as e:
            raise ValueError(
                f"IntBox: null_value {null_value!r} does not broadcast to shape {self._shape}"
            ) from e

    @property
    def n(self) -> Any:
        """Number of valid values per element, ``high - low``."""
        return self.high - self.low

    @property
    def shape(self) -> tuple:
        return self._shape

    @property
    def dtype(self) -> np.dtype:
        return self._dtype

    @property
    def bounds(self) -> tuple:
        """``(low, high)`` with ``high`` exclusive."""
        return self.low, self.high

    def sample(self) -> np.ndarray:
        """Uniform integers in ``[low, high)``; an array of ``shape`` (0-d for scalars)."""
        return self._rng.integers(self.low, self.high, size=self._shape, dtype=self._dtype)

    def null_value(self) -> np.ndarray:
        return self._null.copy()

    def contains(self, x: Any) -> bool:
        x = np.asarray(x)
        if x.shape != self._shape or x.dtype.kind not in "biu":
            return False
        return bool(np.all(x >= self.low) and np.all(x < self.high))

    def __repr__(self) -> str:
        return (
            f"IntBox(low={self.low!r}, high={self.high!r}, shape={self._shape}, "
            f"dtype={self._dtype.name})"
        )


def _as_int_array(name: str, value: Any) -> np.ndarray:
    arr = np.asarray(value)
    if arr.dtype.kind not in "biu":
        if arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
            return arr.astype(np.int64)
        raise ValueError(f"IntBox: {name} must hold integers, got {value!r}")
    return arr.astype(np.int64)


def _check_representable(name: str, values: np.ndarray, dtype: np.dtype) -> None:
    info = np.iinfo(dtype) if dtype.kind != "b" else None
    lo, hi = (0, 1) if info is None else (info.min, info.max)
    if np.any(values < lo) or np.any(values > hi):
        raise ValueError(
            f"IntBox: {name}={values.tolist()!r} does not fit dtype {dtype.name} "
            f"(valid range {lo}..{hi})"
        )
