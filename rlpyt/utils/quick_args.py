"""Store constructor arguments as attributes in one line.

Usage, at the top of ``__init__``::

    def __init__(self, discount=0.99, learning_rate=1e-3):
        save__init__args(locals())   # self.discount, self.learning_rate
"""

from __future__ import annotations

import inspect
from typing import Any

__all__ = ["save__init__args"]


def save__init__args(
    values: dict[str, Any],
    underscore: bool = False,
    overwrite: bool = False,
    subclass_only: bool = False,
) -> None:
    """Set ``self.<arg> = <value>`` for every ``__init__`` argument found in ``values``.

    Args:
        values: the caller's ``locals()``; must contain ``self``.
        underscore: store as ``self._<arg>`` instead of ``self.<arg>``.
        overwrite: replace attributes that already exist (by default an attribute set
            earlier, e.g. by a subclass before calling ``super().__init__``, is kept).
        subclass_only: store only the arguments of the ``__init__`` that is calling
            (the class whose ``__init__`` code is running), not those of other classes
            in the MRO.

    Arguments are the named parameters (positional and keyword-only) of the
    ``__init__`` methods in ``type(self).__mro__``; ``*args``/``**kwargs`` are not
    stored.  Only names present in ``values`` are set.
    """
    if "self" not in values:
        raise ValueError(
            "save__init__args: values has no 'self'; call it as save__init__args(locals()) "
            f"at the top of __init__ (got keys {sorted(values)[:10]})"
        )
    obj = values["self"]
    prefix = "_" if underscore else ""
    if subclass_only:
        classes = [_calling_class(type(obj), inspect.currentframe().f_back)]
    else:
        classes = type(obj).__mro__
    for cls in classes:
        init = vars(cls).get("__init__")
        if init is None or init is object.__init__:
            continue
        for arg in _named_params(init):
            attr = prefix + arg
            if arg in values and (overwrite or not hasattr(obj, attr)):
                setattr(obj, attr, values[arg])


def _named_params(init) -> list[str]:
    spec = inspect.getfullargspec(inspect.unwrap(init))
    return spec.args[1:] + spec.kwonlyargs


def _calling_class(cls: type, frame) -> type:
    """The class in ``cls.__mro__`` whose ``__init__`` owns ``frame``'s code."""
    code = frame.f_code if frame is not None else None
    for klass in cls.__mro__:
        init = vars(klass).get("__init__")
        if init is not None and getattr(inspect.unwrap(init), "__code__", None) is code:
            return klass
    # Called from outside an __init__ (e.g. a helper): fall back to the object's class.
    return cls
