"""The interface every rlpyt space implements.

A space describes the numpy values an env produces or accepts: their ``shape``,
``dtype``, a ``null_value()`` used to fill buffers at episode boundaries, and a
``sample()`` drawn from the space's own random generator (see ``seed``).
"""

from __future__ import annotations

from typing import Any

import numpy as np


class Space:
    """Base class of rlpyt spaces.

    Subclasses implement ``sample``, ``null_value``, ``contains``, ``shape`` and
    ``dtype``.  Each space owns a ``numpy.random.Generator`` so that ``seed(seed)``
    makes its samples reproducible without touching numpy's global state.
    """

    def __init__(self) -> None:
        self._rng = np.random.default_rng()

    def seed(self, seed: int | None = None) -> None:
        """Reset the space's random generator (``None`` draws fresh OS entropy)."""
        self._rng = np.random.default_rng(seed)

    def sample(self) -> Any:
        """A random value from the space."""
        raise NotImplementedError(f"{type(self).__name__} does not implement sample()")

    def null_value(self) -> Any:
        """The value that stands for "nothing" (for example the action before an episode)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement null_value()")

    def contains(self, x: Any) -> bool:
        """Whether ``x`` is a valid value of the space (shape, kind of dtype and bounds)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement contains()")

    def __contains__(self, x: Any) -> bool:
        return self.contains(x)

    @property
    def shape(self) -> tuple:
        raise NotImplementedError

    @property
    def dtype(self):
        raise NotImplementedError


def resolve_shape(space_name: str, low_shape: tuple, high_shape: tuple, shape: Any) -> tuple:
    """The shape of a box: ``shape`` if given (bounds must broadcast to it), else the
    broadcast shape of its bounds."""
    try:
        bounds_shape = np.broadcast_shapes(low_shape, high_shape)
    except ValueError as e:
        raise ValueError(
            f"{space_name}: low (shape {low_shape}) and high (shape {high_shape}) do not "
            "broadcast together"
        ) from e
    if shape is None:
        return tuple(bounds_shape)
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    else:
        try:
            shape = tuple(int(s) for s in shape)
        except TypeError as e:
            raise ValueError(f"{space_name}: shape must be a tuple of ints, got {shape!r}") from e
    if any(s < 0 for s in shape):
        raise ValueError(f"{space_name}: shape must be non-negative, got {shape}")
    try:
        fits = np.broadcast_shapes(bounds_shape, shape) == shape
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(f"{space_name}: bounds of shape {bounds_shape} do not broadcast to {shape=}")
    return shape
