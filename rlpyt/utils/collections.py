"""Named tuples of arrays: the schema every rlpyt batch is written in.

``namedarraytuple`` classes behave like namedtuples whose fields are arrays (numpy
or torch) with shared leading dims.  Indexing and slice-assignment apply to every
field at once, so a ``[T, B]`` batch can be written one time step at a time::

    Samples = namedarraytuple("Samples", ["observation", "reward"])
    buf = Samples(observation=np.zeros((T, B, 4)), reward=np.zeros((T, B)))
    buf[t] = Samples(observation=obs, reward=rew)   # writes every field at t
    buf[t, b] = 0                                   # scalar broadcasts to all fields
    part = buf[:, 1:3]                              # a view of every field

Fields may be ``None`` (skipped) or nested namedarraytuples (recursed into).

All classes made here pickle *by value* (typename, fields, values), so instances
cross process boundaries under the ``spawn`` and ``forkserver`` start methods even
when their class was created at run time inside a function.
"""

from __future__ import annotations

import keyword
from collections import namedtuple as _std_namedtuple
from collections.abc import Iterable
from typing import Any

__all__ = [
    "AttrDict",
    "NamedArrayTuple",
    "NamedArrayTupleSchema",
    "NamedTuple",
    "NamedTupleSchema",
    "is_namedarraytuple",
    "is_namedarraytuple_class",
    "is_namedtuple",
    "is_namedtuple_class",
    "namedarraytuple",
    "namedarraytuple_like",
    "namedtuple",
]

# One class per (kind, typename, fields, module), so unpickled instances share a class
# with instances created normally in the same process.
_CLASS_CACHE: dict[tuple, type] = {}

RESERVED_NAMES = ("get", "items")

_tuple_new = tuple.__new__


def _normalize_fields(typename: str, field_names: str | Iterable[str]) -> tuple[str, ...]:
    if isinstance(field_names, str):
        field_names = field_names.replace(",", " ").split()
    fields = tuple(str(f) for f in field_names)
    for name in (typename, *fields):
        if not name.isidentifier() or keyword.iskeyword(name):
            raise ValueError(
                f"namedarraytuple names must be valid identifiers, got {name!r} "
                f"(typename={typename!r}, fields={fields})"
            )
    for f in fields:
        if f.startswith("_"):
            raise ValueError(f"field names cannot start with '_': {f!r} in {typename}")
        if f in RESERVED_NAMES:
            raise ValueError(f"field name {f!r} in {typename} is reserved ({RESERVED_NAMES})")
    if len(set(fields)) != len(fields):
        raise ValueError(f"duplicate field names in {typename}: {fields}")
    return fields


def _rebuild_namedtuple(typename, fields, module, values, defaults=None):
    return namedtuple(typename, fields, module=module, defaults=defaults)(*values)


def _rebuild_namedarraytuple(typename, fields, module, values):
    return namedarraytuple(typename, fields, module=module)(*values)


def namedtuple(typename: str, field_names, module: str | None = None, defaults=None) -> type:
    """A ``collections.namedtuple`` class whose instances pickle by value.

    Use it for classes created at run time (env info schemas, space composites) so
    that instances survive ``spawn``-started worker processes.
    """
    defaults = None if defaults is None else tuple(defaults)
    if isinstance(field_names, tuple):  # fast path: schemas call this on every step
        cls = _CLASS_CACHE.get(("nt", typename, field_names, module, defaults))
        if cls is not None:
            return cls
    fields = _normalize_fields(typename, field_names)
    key = ("nt", typename, fields, module, defaults)
    cls = _CLASS_CACHE.get(key)
    if cls is None:
        base = _std_namedtuple(typename, fields, defaults=defaults)

        def __reduce__(self):
            # Defaults are part of the class: rebuild the same one, not a default-less twin.
            return (_rebuild_namedtuple, (typename, fields, module, tuple(self), defaults))

        cls = type(typename, (base,), {"__slots__": (), "__reduce__": __reduce__})
        if module is not None:
            cls.__module__ = module
        _CLASS_CACHE[key] = cls
    return cls


def namedarraytuple(
    typename: str,
    field_names,
    return_namedtuple_cls: bool = False,
    classname_suffix: bool = False,
    module: str | None = None,
) -> type:
    """Create a namedtuple class whose indexing applies to every (array) field.

    Args:
        typename: class name.
        field_names: iterable of field names, or one string separated by spaces/commas.
        return_namedtuple_cls: also return a plain namedtuple class with the same fields.
        classname_suffix: append ``"_nat"`` to the class name (classic rlpyt option).
        module: value for ``__module__`` (for nicer reprs; pickling does not need it).
    """
    nat_name = typename + "_nat" if classname_suffix else typename
    cls = None
    if isinstance(field_names, tuple):  # fast path: hashable, maybe already normalized
        cls = _CLASS_CACHE.get(("nat", nat_name, field_names, module))
    if cls is not None and not return_namedtuple_cls:
        return cls
    fields = _normalize_fields(nat_name, field_names)
    key = ("nat", nat_name, fields, module)
    cls = _CLASS_CACHE.get(key)
    if cls is None:
        base = _std_namedtuple(nat_name, fields)
        cls = type(
            nat_name, (_NamedArrayTupleMixin, base), {"__slots__": (), "_nat_module": module}
        )
        if module is not None:
            cls.__module__ = module
        _CLASS_CACHE[key] = cls
    if return_namedtuple_cls:
        return cls, namedtuple(typename, fields, module=module)
    return cls


class _NamedArrayTupleMixin:
    """Indexing behaviour shared by all namedarraytuple classes."""

    __slots__ = ()
    _fields: tuple[str, ...]
    _nat_module: str | None = None

    def __getitem__(self, loc):
        """Index every non-None field with ``loc``; returns the same class."""
        try:
            # tuple.__new__ with a list: the namedtuple __new__ would repack the args.
            return _tuple_new(type(self), [None if v is None else v[loc] for v in self])
        except (IndexError, TypeError, KeyError) as e:
            for field, value in zip(self._fields, self):
                if value is None:
                    continue
                try:
                    _ = value[loc]
                except Exception as inner:
                    raise type(e)(
                        f"{type(self).__name__}: indexing field {field!r} "
                        f"(type {type(value).__name__}, shape {getattr(value, 'shape', None)}) "
                        f"with {loc!r} failed: {inner}"
                    ) from e
            raise

    def __setitem__(self, loc, value):
        """Write ``value`` at ``loc`` in every field.

        ``value`` is either a tuple with the same fields (None entries skipped,
        nested tuples recursed) or anything that broadcasts into every field.
        """
        if isinstance(value, tuple):
            fields = getattr(value, "_fields", None)
            if fields is not self._fields and fields != self._fields:
                self._check_tuple_value(value)
            # zip iterates the tuple itself: indexing a namedarraytuple value would
            # index its arrays.
            values = value
        else:
            values = (value,) * len(self)
        for field, dest, v in zip(self._fields, self, values):
            if dest is None or v is None:
                continue
            try:
                dest[loc] = v
            except Exception as e:
                raise type(e)(
                    f"{type(self).__name__}: writing field {field!r} at {loc!r} failed "
                    f"(destination shape {getattr(dest, 'shape', None)}, value shape "
                    f"{getattr(v, 'shape', None)}): {e}"
                ) from e

    def _check_tuple_value(self, value: tuple) -> None:
        if is_namedtuple(value):
            raise ValueError(
                f"{type(self).__name__}: cannot assign a {type(value).__name__} with fields "
                f"{value._fields}; expected fields {self._fields}"
            )
        if len(value) != len(self):
            raise ValueError(
                f"{type(self).__name__}: cannot assign a tuple of length {len(value)} "
                f"to {len(self)} fields {self._fields}"
            )

    def __contains__(self, key):
        return key in self._fields

    def get(self, index):
        """Field by position (plain tuple indexing is taken by array indexing)."""
        return tuple.__getitem__(self, index)

    def items(self):
        yield from zip(self._fields, self)

    def __reduce__(self):
        return (
            _rebuild_namedarraytuple,
            (type(self).__name__, self._fields, self._nat_module, tuple(self)),
        )


def namedarraytuple_like(namedtuple_or_class, classname_suffix: bool = False) -> type:
    """The namedarraytuple class with the same name and fields as a (named)tuple or class."""
    example = namedtuple_or_class
    if is_namedarraytuple(example) or is_namedarraytuple_class(example):
        return example if isinstance(example, type) else type(example)
    if is_namedtuple(example) or is_namedtuple_class(example):
        cls = example if isinstance(example, type) else type(example)
        return namedarraytuple(cls.__name__, cls._fields, classname_suffix=classname_suffix)
    if isinstance(example, (NamedTupleSchema, NamedArrayTupleSchema)):
        return namedarraytuple(example._typename, example._fields)
    raise TypeError(
        f"namedarraytuple_like expects a namedtuple or namedarraytuple (instance or class), "
        f"got {type(example).__name__}"
    )


def is_namedtuple_class(obj) -> bool:
    """True for namedtuple classes (including namedarraytuple classes)."""
    return isinstance(obj, type) and issubclass(obj, tuple) and hasattr(obj, "_fields")


def is_namedarraytuple_class(obj) -> bool:
    return isinstance(obj, type) and issubclass(obj, _NamedArrayTupleMixin)


def is_namedtuple(obj) -> bool:
    """True for namedtuple instances (including namedarraytuple instances)."""
    return isinstance(obj, tuple) and hasattr(obj, "_fields")


def is_namedarraytuple(obj) -> bool:
    return isinstance(obj, _NamedArrayTupleMixin)


class NamedTupleSchema:
    """A picklable handle for a namedtuple type: call it to build instances.

    Useful where a *type* must be sent to a spawned process (for example an env
    info schema discovered at run time).  Instances are ``NamedTuple`` objects.
    """

    __slots__ = ("_typename", "_fields")
    _kind = "nt"

    def __init__(self, typename: str, fields):
        self._typename = typename
        self._fields = _normalize_fields(typename, fields)

    @property
    def cls(self) -> type:
        return namedtuple(self._typename, self._fields)

    def __call__(self, *args, **kwargs):
        return self.cls(*args, **kwargs)

    def _make(self, iterable):
        return self.cls._make(iterable)

    def __eq__(self, other):
        return (
            type(self) is type(other)
            and self._typename == other._typename
            and self._fields == other._fields
        )

    def __hash__(self):
        return hash((type(self), self._typename, self._fields))

    def __getstate__(self):
        return (self._typename, self._fields)

    def __setstate__(self, state):
        self._typename, self._fields = state

    def __repr__(self):
        return f"{type(self).__name__}({self._typename!r}, {self._fields})"


class NamedArrayTupleSchema(NamedTupleSchema):
    """Like ``NamedTupleSchema`` but builds namedarraytuple instances."""

    __slots__ = ()

    @property
    def cls(self) -> type:
        return namedarraytuple(self._typename, self._fields)


def NamedTuple(typename: str, fields, values) -> tuple:
    """Build one picklable namedtuple instance from a name, fields and values."""
    return NamedTupleSchema(typename, fields)(*values)


def NamedArrayTuple(typename: str, fields, values) -> tuple:
    """Build one picklable namedarraytuple instance from a name, fields and values."""
    return NamedArrayTupleSchema(typename, fields)(*values)


class AttrDict(dict):
    """A dict whose keys are also attributes (``d.key`` == ``d["key"]``)."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.__dict__ = self

    def copy(self) -> AttrDict:
        return type(self)(self)

    def __getstate__(self):
        return dict(self)

    def __setstate__(self, state):
        self.update(state)
        self.__dict__ = self
