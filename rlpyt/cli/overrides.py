"""Command-line overrides of component keywords: ``--algo.learning_rate 3e-4``."""

from __future__ import annotations

import ast
import copy
import difflib
from typing import Any

__all__ = ["ConfigError", "apply_overrides", "parse_override_args", "parse_value"]


class ConfigError(ValueError):
    """A command-line override names an unknown component or keyword."""


def parse_value(text: str) -> Any:
    """Python literal if it parses (numbers, lists, dicts, True/None), else the string."""
    lowered = {"true": True, "false": False, "none": None, "null": None}
    if text.lower() in lowered:
        return lowered[text.lower()]
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def parse_override_args(tokens: list[str]) -> list[tuple[str, Any]]:
    """``["--algo.lr", "3e-4", "--x.y=1"]`` -> ``[("algo.lr", 3e-4), ("x.y", 1)]``."""
    pairs, i = [], 0
    while i < len(tokens):
        token = tokens[i]
        if not token.startswith("--") or "." not in token:
            raise ConfigError(
                f"unrecognised argument {token!r}: component keywords look like "
                f"--algo.learning_rate 3e-4 or --sampler.batch_B=16"
            )
        key = token[2:]
        if "=" in key:
            key, text = key.split("=", 1)
            i += 1
        else:
            if i + 1 >= len(tokens):
                raise ConfigError(f"{token} needs a value")
            text = tokens[i + 1]
            i += 2
        pairs.append((key, _flag_value(key, text)))
    return pairs


# What an unparsable value that opens like a literal was meant to be, and an example.
_LITERALS = {"[": ("list", "[64, 64]"), "(": ("tuple", "(64, 64)"),
             "{": ("dict", "{'key': 1}")}
# Keywords that take layer widths: None, a positive int or a list of positive ints.
_SIZE_KEYWORDS = {"hidden_sizes"}


def _flag_value(key: str, text: str) -> Any:
    """``parse_value(text)``, refusing what would only fail later, inside the run: a
    list, tuple or dict that does not parse, or layer widths that are not positive ints."""
    value = parse_value(text)
    opener = text.strip()[:1]
    if isinstance(value, str) and opener in _LITERALS:
        kind, example = _LITERALS[opener]
        raise ConfigError(
            f"--{key} {text!r}: not a valid {kind}; write it as a Python literal whose "
            f"items are numbers, quoted strings, True, False or None, e.g. {example}")
    if key.rsplit(".", 1)[-1] in _SIZE_KEYWORDS and not _is_sizes(value):
        raise ConfigError(
            f"--{key} {text!r}: not layer widths; give a list of positive ints (e.g. "
            f"[64, 64]), one positive int, or None")
    return value


def _is_sizes(value: Any) -> bool:
    def positive_int(x):
        return isinstance(x, int) and not isinstance(x, bool) and x > 0

    if value is None or positive_int(value):
        return True
    return isinstance(value, (list, tuple)) and all(positive_int(x) for x in value)


def _check_type(dotted: str, value: Any, default: Any) -> None:
    """A keyword whose default is a number (or bool) takes a number (or bool)."""
    if default is None or value is None:
        return
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise ConfigError(f"--{dotted} {value!r}: not a boolean (true/false); the "
                              f"default is {default!r}")
    elif isinstance(default, (int, float)):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"--{dotted} {value!r}: not a number; the default is "
                              f"{default!r}")


def apply_overrides(config: dict, pairs: list[tuple[str, Any]], valid_keys: dict,
                    defaults: dict | None = None) -> dict:
    """Deep-set each dotted key in a copy of ``config``.

    ``valid_keys`` maps a component name to the keywords its class accepts; the first
    key after the component must be one of them (deeper keys go inside dict values,
    e.g. ``agent.model_kwargs.hidden_sizes``).  Unknown names raise ``ConfigError``
    listing the valid ones.  ``defaults`` (component -> {keyword: default}) lets a
    keyword whose default is a number refuse a value that is not one
    (``--algo.learning_rate abc``).
    """
    config = copy.deepcopy(config)
    for dotted, value in pairs:
        parts = dotted.split(".")
        component, keyword, rest = parts[0], parts[1], parts[2:]
        if component not in valid_keys:
            raise ConfigError(
                f"unknown component {component!r} in --{dotted}; valid components: "
                f"{sorted(valid_keys)}"
            )
        allowed = valid_keys[component]
        if allowed is not None and keyword not in allowed:
            close = difflib.get_close_matches(keyword, allowed, n=3)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            raise ConfigError(
                f"unknown keyword {keyword!r} for {component} in --{dotted}{hint}; valid "
                f"keywords: {sorted(allowed)}"
            )
        if not rest:
            _check_type(dotted, value, (defaults or {}).get(component, {}).get(keyword))
        node = config.setdefault(component, {})
        path = [keyword, *rest]
        for key in path[:-1]:
            child = node.get(key)
            if child is None:
                child = node[key] = {}
            elif not isinstance(child, dict):
                raise ConfigError(f"--{dotted}: {key!r} holds {child!r}, not a dict of keywords")
            node = child
        node[path[-1]] = value
    return config
