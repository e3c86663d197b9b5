"""Gymnasium spaces seen as rlpyt spaces, with value conversion both ways.

=====================  ======================================================
Gymnasium space        rlpyt space (``GymSpaceWrapper(...).space``)
=====================  ======================================================
``Box`` (float)        ``FloatBox``; float64 becomes float32 when ``force_float32``
``Box`` (integer)      ``IntBox(low, high + 1)`` (rlpyt's ``high`` is exclusive)
``Discrete(n, start)`` ``IntBox(0, n)``; values are shifted by ``start`` both ways
``MultiDiscrete``      ``IntBox(0, nvec, shape=nvec.shape)``; shifted by ``start``
``MultiBinary``        ``IntBox(0, 2, shape)``
``Dict``               ``Composite`` of a namedtuple with one field per key
``Tuple``              ``Composite`` of a namedtuple with fields ``f0, f1, ...``
=====================  ======================================================

Discrete spaces always start at 0 on the rlpyt side so that agents can treat an
``IntBox`` of actions as ``range(n)``.  ``Dict`` keys that are not valid field
names are made valid by ``to_field_names``.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
from gymnasium import spaces as gym_spaces

from rlpyt.spaces.base import Space
from rlpyt.spaces.composite import Composite
from rlpyt.spaces.float_box import FloatBox
from rlpyt.spaces.int_box import IntBox
from rlpyt.utils.collections import NamedTupleSchema

# Names a namedtuple field may not take in rlpyt (namedarraytuple methods).
_RESERVED_FIELDS = ("get", "items")


def to_field_name(key: Any) -> str:
    """A valid namedtuple field name made from ``key``.

    Characters outside ``[A-Za-z0-9_]`` become ``_``; leading underscores are
    stripped (rlpyt fields may not start with one); a name that would start with a
    digit or be empty gets an ``f`` prefix; Python keywords and the reserved names
    ``get``/``items`` get a trailing ``_``.  Examples: ``"TimeLimit.truncated"`` ->
    ``"TimeLimit_truncated"``, ``"_x"`` -> ``"x"``, ``"1st"`` -> ``"f1st"``,
    ``"class"`` -> ``"class_"``.
    """
    name = re.sub(r"[^0-9A-Za-z_]", "_", str(key)).lstrip("_")
    if not name or name[0].isdigit():
        name = "f" + name
    if keyword.iskeyword(name) or name in _RESERVED_FIELDS:
        name += "_"
    return name


def to_field_names(keys: Iterable[Any]) -> list[str]:
    """``to_field_name`` for each key, with ``_2``, ``_3``, ... appended to repeats."""
    names: list[str] = []
    taken: set[str] = set()
    for key in keys:
        base = name = to_field_name(key)
        suffix = 2
        while name in taken:
            name = f"{base}_{suffix}"
            suffix += 1
        taken.add(name)
        names.append(name)
    return names


class GymSpaceWrapper:
    """Wrap a Gymnasium space: an rlpyt ``space`` plus conversion of values.

    Args:
        space: a Gymnasium space (``Box``, ``Discrete``, ``MultiDiscrete``,
            ``MultiBinary``, ``Dict`` or ``Tuple``, nested freely).
        null_value: fill value for ``null_value()`` of every leaf space; default 0.
            Integer leaves whose range excludes it use their lowest value instead.
        name: typename of the namedtuple built for a ``Dict``/``Tuple`` space
            (nested ones are named ``<name>_<field>``); default ``"obs"``.
        force_float32: store float64 ``Box`` spaces as float32; default True.

    Attributes:
        space: the rlpyt space (``IntBox``, ``FloatBox`` or ``Composite``).
        gym_space: the wrapped Gymnasium space.

    ``convert`` turns a Gymnasium value into an rlpyt value (arrays of the rlpyt
    dtype; dicts and tuples into namedtuples); ``revert`` goes back.  Other
    attributes (``n``, ``shape``, ``dtype``, ``low``, ...) are read from ``space``.
    """

    def __init__(
        self,
        space: gym_spaces.Space,
        null_value: Any = 0,
        name: str = "obs",
        force_float32: bool = True,
    ) -> None:
        self.gym_space = space
        self._name = to_field_name(name)
        self._children: tuple[GymSpaceWrapper, ...] = ()
        self._keys: tuple = ()
        self._offset: Any = None  # Discrete/MultiDiscrete ``start`` when nonzero.
        if isinstance(space, gym_spaces.Dict):
            self._keys = tuple(space.spaces.keys())
            self._build_composite(list(space.spaces.values()), to_field_names(self._keys),
                                  null_value, force_float32)
            self._convert, self._revert = self._convert_dict, self._revert_dict
        elif isinstance(space, gym_spaces.Tuple):
            fields = [f"f{i}" for i in range(len(space.spaces))]
            self._build_composite(list(space.spaces), fields, null_value, force_float32)
            self._convert, self._revert = self._convert_tuple, self._revert_tuple
        else:
            self.space = _leaf_space(space, null_value, force_float32)
            self._gym_dtype = space.dtype
            if isinstance(space, (gym_spaces.Discrete, gym_spaces.MultiDiscrete)):
                if np.any(space.start != 0):
                    self._offset = np.asarray(space.start, dtype=np.int64)
            if isinstance(space, gym_spaces.Discrete):
                self._revert = self._revert_discrete
            else:
                self._revert = self._revert_array
            self._convert = self._convert_array

    def _build_composite(
        self, gym_subspaces: list, fields: list[str], null_value: Any, force_float32: bool
    ) -> None:
        self._children = tuple(
            GymSpaceWrapper(s, null_value, name=f"{self._name}_{f}", force_float32=force_float32)
            for s, f in zip(gym_subspaces, fields)
        )
        # A schema (not a class) so that the space itself pickles under ``spawn``.
        schema = NamedTupleSchema(self._name, fields)
        self.space = Composite([c.space for c in self._children], schema)

    # ----- Values -----------------------------------------------------------

    def convert(self, value: Any) -> Any:
        """Gymnasium value -> rlpyt value."""
        return self._convert(value)

    def revert(self, value: Any) -> Any:
        """rlpyt value -> Gymnasium value."""
        return self._revert(value)

    def _convert_array(self, value: Any) -> np.ndarray:
        value = np.asarray(value, dtype=self.space.dtype)
        if self._offset is not None:
            value = np.asarray(value - self._offset, dtype=self.space.dtype)
        return value

    def _revert_array(self, value: Any) -> np.ndarray:
        value = np.asarray(value)
        if self._offset is not None:
            value = value + self._offset
        return value.astype(self._gym_dtype, copy=False)

    def _revert_discrete(self, value: Any) -> int:
        value = np.asarray(value)
        if value.size != 1:
            raise ValueError(
                f"GymSpaceWrapper({self._name}): a Discrete value must be one integer, got "
                f"an array of shape {value.shape}"
            )
        action = int(value.reshape(()))
        return action if self._offset is None else action + int(self._offset)

    def _convert_dict(self, value: dict) -> tuple:
        cls = self.space.NamedTupleCls
        return cls(*(c.convert(value[k]) for c, k in zip(self._children, self._keys)))

    def _revert_dict(self, value: tuple) -> dict:
        return {k: c.revert(v) for k, c, v in zip(self._keys, self._children, value)}

    def _convert_tuple(self, value: tuple) -> tuple:
        cls = self.space.NamedTupleCls
        return cls(*(c.convert(v) for c, v in zip(self._children, value)))

    def _revert_tuple(self, value: tuple) -> tuple:
        return tuple(c.revert(v) for c, v in zip(self._children, value))

    # ----- Space interface (rlpyt form) -----------------------------------

    def sample(self) -> Any:
        """A random rlpyt value from ``space`` (seed it with ``seed``)."""
        return self.space.sample()

    def null_value(self) -> Any:
        return self.space.null_value()

    def contains(self, x: Any) -> bool:
        return self.space.contains(x)

    def seed(self, seed: int | None = None) -> None:
        self.space.seed(seed)

    def __getattr__(self, name: str) -> Any:
        # Only reached for attributes missing on the wrapper; guard against recursion
        # while unpickling (before ``space`` is set).
        if name.startswith("_") or name == "space":
            raise AttributeError(name)
        return getattr(self.space, name)

    def __repr__(self) -> str:
        return f"GymSpaceWrapper({self.gym_space!r} -> {self.space!r})"


def _leaf_space(space: gym_spaces.Space, null_value: Any, force_float32: bool) -> Space:
    builder = _LEAF_BUILDERS.get(type(space))
    if builder is None:
        for gym_cls, candidate in _LEAF_BUILDERS.items():
            if isinstance(space, gym_cls):
                builder = candidate
                break
    if builder is None:
        valid = ", ".join(c.__name__ for c in (*_LEAF_BUILDERS, gym_spaces.Dict, gym_spaces.Tuple))
        raise TypeError(f"GymSpaceWrapper: unsupported space {space!r}; supported: {valid}")
    return builder(space, null_value, force_float32)


def _box(space: gym_spaces.Box, null_value: Any, force_float32: bool) -> Space:
    if np.issubdtype(space.dtype, np.floating):
        dtype = np.float32 if (force_float32 and space.dtype == np.float64) else space.dtype
        return FloatBox(_uniform_to_scalar(space.low), _uniform_to_scalar(space.high),
                        shape=space.shape, null_value=null_value, dtype=dtype)
    low = _uniform_to_scalar(np.asarray(space.low).astype(np.int64))
    high = _uniform_to_scalar(np.asarray(space.high).astype(np.int64) + 1)  # Exclusive.
    return _int_box(low, high, space.shape, space.dtype, null_value)


def _uniform_to_scalar(bound: np.ndarray) -> np.ndarray:
    """A 0-d bound when all entries are equal (``IntBox(0, 256)`` for images)."""
    bound = np.asarray(bound)
    if bound.size > 0 and np.all(bound == bound.flat[0]):
        return bound.reshape(-1)[:1].reshape(())
    return bound


def _discrete(space: gym_spaces.Discrete, null_value: Any, force_float32: bool) -> Space:
    return _int_box(np.int64(0), np.int64(space.n), (), space.dtype, null_value)


def _multi_discrete(space: gym_spaces.MultiDiscrete, null_value: Any, force_float32: bool):
    nvec = np.asarray(space.nvec, dtype=np.int64)
    return _int_box(np.zeros_like(nvec), nvec, nvec.shape, space.dtype, null_value)


def _multi_binary(space: gym_spaces.MultiBinary, null_value: Any, force_float32: bool):
    return _int_box(np.int64(0), np.int64(2), space.shape, space.dtype, null_value)


def _int_box(low, high, shape, dtype, null_value) -> IntBox:
    # A null value outside the range (e.g. 0 for a Box in [1, 5]) would be an invalid
    # action; use the lowest valid value there instead.
    null = np.clip(np.asarray(null_value, dtype=np.float64), low, high - 1).astype(np.int64)
    return IntBox(low, high, shape=shape, dtype=dtype, null_value=null)


_LEAF_BUILDERS: dict[type, Callable[..., Space]] = {
    gym_spaces.Box: _box,
    gym_spaces.Discrete: _discrete,
    gym_spaces.MultiDiscrete: _multi_discrete,
    gym_spaces.MultiBinary: _multi_binary,
}
