"""Search spaces of ``rlpyt tune``: component flags whose value is a distribution.

A flag of ``rlpyt train`` written as a distribution is searched; any other value is fixed::

    --algo.learning_rate 'loguniform(1e-5, 1e-2)'   # log-uniform float in [1e-5, 1e-2]
    --algo.gae_lambda 'uniform(0.9, 1.0)'            # uniform float in [0.9, 1.0]
    --algo.epochs 'int(2, 10)'                       # integer in [2, 10], ends included
    --sampler.batch_B 'choice(8, 16, 32)'            # one of the values (Python literals)

For a space whose dimensions depend on each other, a Python file defines
``space(trial) -> dict`` of flag keys to values, drawing with Optuna's
``trial.suggest_*`` (``--space FILE``).
"""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
import math
import os
import re
from collections.abc import Callable
from typing import Any

__all__ = ["KINDS", "Dimension", "SearchSpaceError", "as_flags", "load_space_file",
           "parse_dimension", "split_search_flags", "suggest"]

KINDS = ("uniform", "loguniform", "int", "choice")
"""The distributions a flag's value may be written as."""
_CALL = re.compile(r"^\s*(?P<kind>[a-z_]+)\s*\((?P<args>.*)\)\s*$", re.DOTALL)


class SearchSpaceError(ValueError):
    """A searched flag that cannot be searched: a bad distribution, range or key."""


@dataclasses.dataclass(frozen=True)
class Dimension:
    """One searched flag: ``key`` (``algo.learning_rate``), its distribution ``kind``
    (one of ``KINDS``), ``low``/``high`` for the ranges and ``choices`` (the options'
    text, as typed) for ``choice``."""

    key: str
    kind: str
    low: float | int | None = None
    high: float | int | None = None
    choices: tuple[str, ...] = ()

    def spec(self) -> str:
        """The distribution as it is written on the command line."""
        if self.kind == "choice":
            return f"choice({', '.join(self.choices)})"
        return f"{self.kind}({self.low!r}, {self.high!r})"


def parse_dimension(key: str, text: str) -> Dimension | None:
    """The ``Dimension`` that flag ``--key text`` searches, or None when ``text`` is a
    plain value.  Raises ``SearchSpaceError`` naming the flag for a distribution that
    cannot be drawn from (an unknown kind, a reversed or non-positive range, ...)."""
    match = _CALL.match(text)
    if match is None:
        return None
    kind, body = match["kind"], match["args"]
    if "." not in key:
        raise SearchSpaceError(f"--{key} {text!r}: only component keywords (--algo.x, "
                               f"--agent.x, --sampler.x, --runner.x, --env.x) are searched")
    if kind not in KINDS:
        raise SearchSpaceError(f"--{key} {text!r}: unknown distribution {kind!r}; use one of "
                               f"{', '.join(k + '(...)' for k in KINDS)}")
    items = _split_arguments(key, text, body)
    if kind == "choice":
        if len(items) < 2:
            raise SearchSpaceError(f"--{key} {text!r}: choice(...) needs at least two values")
        if len(set(items)) != len(items):
            raise SearchSpaceError(f"--{key} {text!r}: choice(...) repeats a value")
        return Dimension(key, kind, choices=tuple(items))
    if len(items) != 2:
        raise SearchSpaceError(f"--{key} {text!r}: {kind}(low, high) takes two numbers, got "
                               f"{len(items)}")
    low, high = (_number(key, text, item, integer=kind == "int") for item in items)
    if not low < high:
        raise SearchSpaceError(f"--{key} {text!r}: low {low!r} must be below high {high!r}")
    if kind == "loguniform" and low <= 0:
        raise SearchSpaceError(f"--{key} {text!r}: loguniform needs low > 0, got {low!r}")
    return Dimension(key, kind, low, high)


def _split_arguments(key: str, text: str, body: str) -> list[str]:
    """The comma-separated arguments of ``kind(...)``, commas inside brackets kept."""
    try:
        node = ast.parse(f"f({body})", mode="eval").body
    except SyntaxError:
        raise SearchSpaceError(f"--{key} {text!r}: the arguments do not parse") from None
    if not isinstance(node, ast.Call) or node.keywords:
        raise SearchSpaceError(f"--{key} {text!r}: give the arguments by position")
    return [ast.get_source_segment(f"f({body})", arg).strip() for arg in node.args]


def _number(key: str, text: str, item: str, integer: bool) -> float | int:
    try:
        value = ast.literal_eval(item)
    except (ValueError, SyntaxError):
        value = None
    if integer and isinstance(value, float) and value.is_integer():
        value = int(value)
    wanted = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, wanted) or not math.isfinite(value):
        raise SearchSpaceError(f"--{key} {text!r}: {item!r} is not "
                               f"{'an integer' if integer else 'a finite number'}")
    return value if integer else float(value)


def split_search_flags(tokens: list[str]) -> tuple[list[str], list[Dimension]]:
    """Component flags (``--algo.x 1 --sampler.y=2 ...``) split into the fixed ones (as
    tokens) and the searched ones (``Dimension``), in order.  A key searched twice is an
    error."""
    fixed: list[str] = []
    dims: list[Dimension] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token.startswith("--") and "=" in token:
            key, text = token[2:].split("=", 1)
            step = 1
        elif token.startswith("--") and i + 1 < len(tokens) and not tokens[i + 1].startswith("--"):
            key, text = token[2:], tokens[i + 1]
            step = 2
        else:  # Not a component flag: left for train's own parser to name.
            fixed.append(token)
            i += 1
            continue
        dim = parse_dimension(key, text)
        if dim is None:
            fixed += tokens[i:i + step]
        elif any(d.key == key for d in dims):
            raise SearchSpaceError(f"--{key} is searched twice")
        else:
            dims.append(dim)
        i += step
    return fixed, dims


def suggest(trial, dim: Dimension) -> Any:
    """Draw ``dim``'s value for an Optuna ``trial`` (a choice is drawn as its text)."""
    if dim.kind == "uniform":
        return trial.suggest_float(dim.key, dim.low, dim.high)
    if dim.kind == "loguniform":
        return trial.suggest_float(dim.key, dim.low, dim.high, log=True)
    if dim.kind == "int":
        return trial.suggest_int(dim.key, dim.low, dim.high)
    return trial.suggest_categorical(dim.key, list(dim.choices))


def load_space_file(path: str) -> Callable:
    """The ``space(trial) -> dict`` function of the Python file ``path``."""
    if not os.path.isfile(path):
        raise SearchSpaceError(f"--space {path!r}: no such file")
    spec = importlib.util.spec_from_file_location("rlpyt_search_space", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        raise SearchSpaceError(f"--space {path!r}: the file fails to run: "
                               f"{type(e).__name__}: {e}") from None
    space = getattr(module, "space", None)
    if not callable(space):
        raise SearchSpaceError(f"--space {path!r} defines no function space(trial)")
    return space


def as_flags(params: dict[str, Any]) -> list[str]:
    """``{"algo.learning_rate": 3e-4, "sampler.batch_B": "16"}`` as the flags of
    ``rlpyt train``: ``["--algo.learning_rate", "0.0003", "--sampler.batch_B", "16"]``."""
    flags = []
    for key, value in params.items():
        if not isinstance(key, str) or "." not in key:
            raise SearchSpaceError(f"search key {key!r} must name a component keyword, "
                                   f"such as 'algo.learning_rate'")
        flags += [f"--{key}", value if isinstance(value, str) else repr(value)]
    return flags
