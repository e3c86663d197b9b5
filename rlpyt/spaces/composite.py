"""A namedtuple of spaces: structured observations such as Gymnasium ``Dict``/``Tuple``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from rlpyt.spaces.base import Space
from rlpyt.utils.collections import NamedTupleSchema, is_namedtuple, is_namedtuple_class


class Composite(Space):
    """Several spaces side by side; values are namedtuples with one field per space.

    Args:
        spaces: the sub-spaces, in field order (they may be ``Composite`` themselves).
        NamedTupleCls: the namedtuple class (or ``NamedTupleSchema``) whose fields name
            the sub-spaces; its number of fields must equal ``len(spaces)``.

    ``sample()``, ``null_value()``, ``shape`` and ``dtype`` return ``NamedTupleCls``
    instances holding the sub-spaces' results.
    """

    def __init__(self, spaces: Sequence[Space], NamedTupleCls: Any) -> None:
        super().__init__()
        if not (is_namedtuple_class(NamedTupleCls) or isinstance(NamedTupleCls, NamedTupleSchema)):
            raise TypeError(
                "Composite: NamedTupleCls must be a namedtuple class or NamedTupleSchema, "
                f"got {NamedTupleCls!r}"
            )
        spaces = tuple(spaces)
        for i, space in enumerate(spaces):
            if not isinstance(space, Space):
                raise TypeError(f"Composite: spaces[{i}] is not an rlpyt Space: {space!r}")
        if len(spaces) != len(NamedTupleCls._fields):
            raise ValueError(
                f"Composite: {len(spaces)} spaces but NamedTupleCls has fields "
                f"{NamedTupleCls._fields}"
            )
        self._spaces = spaces
        self._NamedTupleCls = NamedTupleCls

    @property
    def spaces(self) -> tuple:
        return self._spaces

    @property
    def names(self) -> tuple:
        """Field names, one per sub-space."""
        return tuple(self._NamedTupleCls._fields)

    @property
    def NamedTupleCls(self) -> Any:
        return self._NamedTupleCls

    def seed(self, seed: int | None = None) -> None:
        """Seed every sub-space with its own child of ``SeedSequence(seed)``."""
        children = np.random.SeedSequence(seed).spawn(len(self._spaces))
        for space, child in zip(self._spaces, children):
            space.seed(int(child.generate_state(1)[0]))

    def sample(self) -> tuple:
        return self._NamedTupleCls(*(s.sample() for s in self._spaces))

    def null_value(self) -> tuple:
        return self._NamedTupleCls(*(s.null_value() for s in self._spaces))

    def contains(self, x: Any) -> bool:
        if not is_namedtuple(x) or tuple(x._fields) != self.names:
            return False
        return all(s.contains(v) for s, v in zip(self._spaces, x))

    @property
    def shape(self) -> tuple:
        return self._NamedTupleCls(*(s.shape for s in self._spaces))

    @property
    def dtype(self) -> tuple:
        return self._NamedTupleCls(*(s.dtype for s in self._spaces))

    def __repr__(self) -> str:
        inner = ", ".join(f"{n}={s!r}" for n, s in zip(self.names, self._spaces))
        return f"Composite({inner})"
