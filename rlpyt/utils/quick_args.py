"""Store constructor arguments as attributes in one line.

Usage, at the top of ``__init__``::

    def __init__(self, discount=0.99, learning_rate=1e-3):
        save__init__args(locals())   # self.discount, self.learning_rate
"""

from __future__ import annotations

import difflib
import functools
import inspect
from typing import Any

__all__ = ["KeywordCheckedInit", "accepted_keywords", "check_keywords", "save__init__args"]


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


def accepted_keywords(cls) -> set[str] | None:
    """Keyword names ``cls(...)`` accepts, following ``**kwargs`` up the MRO; None when the
    chain stays open to the end (anything is accepted)."""
    names: set[str] = set()
    for klass in inspect.getmro(cls):
        init = klass.__dict__.get("__init__")
        if init is None or klass is object:
            continue
        params = inspect.signature(init).parameters.values()
        names.update(p.name for p in params if p.name != "self" and p.kind in (
            inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY))
        if not any(p.kind == inspect.Parameter.VAR_KEYWORD for p in params):
            forwarded = getattr(cls, "forwards_keywords_to", None)
            if forwarded is not None:  # e.g. an async sampler builds the sampler it wraps
                names |= accepted_keywords(getattr(cls, forwarded)) or set()
            return names
    return None


def check_keywords(cls, kwargs: dict) -> None:
    """Raise ``TypeError`` naming each keyword ``cls`` does not take, the nearest valid one
    and the valid ones (Python's own message names neither)."""
    valid = accepted_keywords(cls)
    if valid is None:
        return
    for key in kwargs:
        if key not in valid:
            close = difflib.get_close_matches(key, sorted(valid), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise TypeError(f"{cls.__name__} got an unexpected keyword argument {key!r}{hint} "
                            f"Valid keywords: {sorted(valid)}")


class KeywordCheckedInit:
    """Base of the components launch scripts build with keywords (algorithms, agents,
    samplers, runners): a mistyped keyword raises ``TypeError`` that suggests the nearest
    valid one.  The check runs once per construction, in the most derived ``__init__``;
    a class whose ``__init__`` hands its ``**kwargs`` to another class than its parent
    names that class's attribute in ``forwards_keywords_to``."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        init = cls.__init__  # Its own, or one inherited from a mixin earlier in the MRO.
        if getattr(init, "_checks_keywords", False):
            return  # Inherited from a checked class: it checks type(self).

        @functools.wraps(init)
        def checked_init(self, *args, **kw):
            if type(self).__init__ is checked_init:
                check_keywords(type(self), kw)
                # What built it, so a saved run can be rebuilt (rlpyt evaluate).
                self._init_keywords = (len(args), dict(kw))
            init(self, *args, **kw)

        checked_init._checks_keywords = True
        cls.__init__ = checked_init
