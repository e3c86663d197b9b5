"""Real-valued boxes: continuous observations and actions."""

from __future__ import annotations

from typing import Any

import numpy as np

from rlpyt.spaces.base import Space, resolve_shape


class FloatBox(Space):
    """Reals in the closed box ``[low, high]`` (bounds may be infinite).

    Args:
        low: lower bound; a scalar or an array broadcastable to ``shape``; ``-inf``
            for unbounded.
        high: upper bound; a scalar or an array; ``inf`` for unbounded.
        shape: shape of one value; ``None`` (default) uses the broadcast shape of
            ``low`` and ``high``.
        null_value: fill value returned by ``null_value()``; default ``0.``.
        dtype: a float numpy dtype; default ``"float32"``.

    ``sample()`` draws uniformly where both bounds are finite, ``low + Exponential(1)``
    or ``high - Exponential(1)`` where only one is, and a standard normal where
    neither is.
    """

    def __init__(
        self,
        low: Any,
        high: Any,
        shape: tuple | int | None = None,
        null_value: Any = 0.0,
        dtype: Any = "float32",
    ) -> None:
        super().__init__()
        self._dtype = np.dtype(dtype)
        if self._dtype.kind != "f":
            raise ValueError(f"FloatBox: dtype must be a float dtype, got {dtype!r}")
        # Bounds are rounded to the space's dtype, so that every value of that dtype
        # inside them (samples included) is in the box.
        low_arr = _round_to(_as_float_array("low", low), self._dtype)
        high_arr = _round_to(_as_float_array("high", high), self._dtype)
        self._shape = resolve_shape("FloatBox", low_arr.shape, high_arr.shape, shape)
        if np.any(low_arr > high_arr):
            raise ValueError(f"FloatBox: need low <= high everywhere, got {low=!r}, {high=!r}")
        scalar_bounds = low_arr.ndim == 0 and high_arr.ndim == 0
        self.low = float(low_arr) if scalar_bounds else np.broadcast_to(low_arr, self._shape)
        self.high = float(high_arr) if scalar_bounds else np.broadcast_to(high_arr, self._shape)
        try:
            self._null = np.broadcast_to(
                _as_float_array("null_value", null_value), self._shape
            ).astype(self._dtype)
        except ValueError as e:
            raise ValueError(
                f"FloatBox: null_value {null_value!r} does not broadcast to shape {self._shape}"
            ) from e
        # Which sampling rule applies where, fixed once here.
        full_low = np.broadcast_to(low_arr, self._shape)
        full_high = np.broadcast_to(high_arr, self._shape)
        self._full_low, self._full_high = full_low, full_high
        low_finite, high_finite = np.isfinite(full_low), np.isfinite(full_high)
        self._bounded = low_finite & high_finite
        self._low_only = low_finite & ~high_finite
        self._high_only = ~low_finite & high_finite

    @property
    def shape(self) -> tuple:
        return self._shape

    @property
    def dtype(self) -> np.dtype:
        return self._dtype

    @property
    def bounds(self) -> tuple:
        """``(low, high)``, both inclusive."""
        return self.low, self.high

    def sample(self) -> np.ndarray:
        x = self._rng.standard_normal(self._shape)
        rng = self._rng
        if self._bounded.any():
            b = self._bounded
            x[b] = rng.uniform(self._full_low[b], self._full_high[b])
        if self._low_only.any():
            m = self._low_only
            x[m] = self._full_low[m] + rng.exponential(size=int(m.sum()))
        if self._high_only.any():
            m = self._high_only
            x[m] = self._full_high[m] - rng.exponential(size=int(m.sum()))
        # Rounding to a narrower dtype could step just outside the closed box.
        return np.asarray(np.clip(x.astype(self._dtype), self.low, self.high), self._dtype)

    def null_value(self) -> np.ndarray:
        return self._null.copy()

    def contains(self, x: Any) -> bool:
        x = np.asarray(x)
        if x.shape != self._shape or x.dtype.kind not in "biuf":
            return False
        return bool(np.all(x >= self.low) and np.all(x <= self.high))

    def __repr__(self) -> str:
        return (
            f"FloatBox(low={self.low!r}, high={self.high!r}, shape={self._shape}, "
            f"dtype={self._dtype.name})"
        )


def _round_to(array: np.ndarray, dtype: np.dtype) -> np.ndarray:
    with np.errstate(over="ignore"):  # Beyond the dtype's range a bound becomes infinite.
        return array.astype(dtype).astype(np.float64)


def _as_float_array(name: str, value: Any) -> np.ndarray:
    arr = np.asarray(value)
    if arr.dtype.kind not in "biuf" or np.any(np.isnan(arr.astype(np.float64))):
        raise ValueError(f"FloatBox: {name} must be real numbers (no NaN), got {value!r}")
    return arr.astype(np.float64)
