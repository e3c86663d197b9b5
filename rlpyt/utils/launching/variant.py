"""Experiment variants: the settings of a grid, one nested dict per setting.

A grid is built from levels. Each ``VariantLevel`` sets a few (nested) keys to
one of several value tuples and names each choice; ``make_variants`` takes the
cross product of the levels::

    lr = VariantLevel(keys=[("algo", "learning_rate")], values=[(1e-3,), (3e-4,)],
                      dir_names=["lr_1e-3", "lr_3e-4"])
    env = VariantLevel(keys=[("env", "id")], values=[("CartPole-v1",), ("Acrobot-v1",)],
                       dir_names=["cartpole", "acrobot"])
    variants, log_dirs = make_variants(lr, env)
    # 4 variants; log_dirs like "lr_1e-3/cartpole"

A train script merges its variant into its default config with ``update_config``,
which refuses keys the default does not have (a typo must not silently run the
default setting).
"""

from __future__ import annotations

import copy
import difflib
import json
import os
from collections.abc import Sequence
from typing import Any, NamedTuple

__all__ = [
    "VARIANT_FILE",
    "ConfigKeyError",
    "VariantLevel",
    "load_variant",
    "make_variants",
    "save_variant",
    "update_config",
]

VARIANT_FILE = "variant_config.json"

KeyPath = tuple[str, ...]


class VariantLevel(NamedTuple):
    """One level of a grid: several choices for the same keys.

    Args:
        keys: key paths the level sets, e.g. ``[("algo", "learning_rate")]``; a plain
            string is a top-level key.
        values: one tuple per choice, holding a value for each key path in order.
        dir_names: one directory name per choice (default None: made from the key
            names and values, e.g. ``"learning_rate_0.001"``).
    """

    keys: Sequence[KeyPath | str]
    values: Sequence[Sequence[Any]]
    dir_names: Sequence[str] | None = None


def make_variants(*variant_levels: VariantLevel) -> tuple[list[dict], list[str]]:
    """Cross product of the levels.

    Returns:
        ``(variants, log_dirs)``: one nested dict per setting, and its directory,
        the choice names of the levels joined as a path (``"lr_1e-3/cartpole"``).
        The first level varies slowest.
    """
    variants: list[dict] = [{}]
    log_dirs: list[str] = [""]
    for index, level in enumerate(variant_levels):
        key_paths, names = _check_level(index, level)
        crossed, crossed_dirs = [], []
        for variant, log_dir in zip(variants, log_dirs):
            for choice, name in zip(level.values, names):
                new = copy.deepcopy(variant)
                for key_path, value in zip(key_paths, choice):
                    _set_path(new, key_path, value, index)
                crossed.append(new)
                crossed_dirs.append(os.path.join(log_dir, name) if log_dir else name)
        variants, log_dirs = crossed, crossed_dirs
    return variants, log_dirs


def _check_level(index: int, level: VariantLevel) -> tuple[list[KeyPath], list[str]]:
    where = f"variant level {index}"
    if not isinstance(level, VariantLevel):
        raise TypeError(f"{where} is a {type(level).__name__}; expected a VariantLevel")
    key_paths = [(k,) if isinstance(k, str) else tuple(k) for k in level.keys]
    if not key_paths or any(not path for path in key_paths):
        raise ValueError(f"{where}: keys={level.keys!r} must be a non-empty list of key paths")
    if len(set(key_paths)) != len(key_paths):
        raise ValueError(f"{where}: keys={level.keys!r} repeat a key path")
    if not level.values:
        raise ValueError(f"{where}: values is empty; give at least one choice")
    for choice in level.values:
        if isinstance(choice, (str, bytes)) or not isinstance(choice, Sequence):
            raise ValueError(
                f"{where}: each entry of values must be a tuple with one value per key "
                f"({len(key_paths)}), got {choice!r}"
            )
        if len(choice) != len(key_paths):
            raise ValueError(
                f"{where}: values entry {tuple(choice)!r} has {len(choice)} values for "
                f"{len(key_paths)} keys {key_paths}"
            )
    if level.dir_names is None:
        names = [_auto_dir_name(key_paths, choice) for choice in level.values]
    else:
        names = [str(n) for n in level.dir_names]
        if len(names) != len(level.values):
            raise ValueError(
                f"{where}: {len(names)} dir_names for {len(level.values)} values; give one "
                f"name per choice"
            )
    for name in names:
        if name in ("", ".", "..") or "/" in name or os.sep in name:
            raise ValueError(f"{where}: dir name {name!r} is not a single directory name")
    if len(set(names)) != len(names):
        raise ValueError(f"{where}: dir_names {names} are not unique")
    return key_paths, names


def _auto_dir_name(key_paths: list[KeyPath], choice: Sequence[Any]) -> str:
    parts = [f"{path[-1]}_{value}" for path, value in zip(key_paths, choice)]
    return "_".join(parts).replace("/", "-").replace(os.sep, "-").replace(" ", "")


def _set_path(variant: dict, key_path: KeyPath, value: Any, level_index: int) -> None:
    node = variant
    for depth, key in enumerate(key_path[:-1]):
        child = node.setdefault(key, {})
        if not isinstance(child, dict):
            where = ".".join(map(str, key_path[: depth + 1]))
            raise ValueError(
                f"variant level {level_index} sets {'.'.join(map(str, key_path))}, but an "
                f"earlier level set {where} to the non-dict value {child!r}"
            )
        node = child
    node[key_path[-1]] = copy.deepcopy(value)


def save_variant(variant: dict, log_dir: str) -> str:
    """Write ``variant`` as JSON to ``<log_dir>/variant_config.json``; returns the path."""
    os.makedirs(log_dir, exist_ok=True)
    path = os.path.join(log_dir, VARIANT_FILE)
    try:
        text = json.dumps(variant, indent=2, sort_keys=True)
    except TypeError as error:
        raise TypeError(
            f"variant for {log_dir!r} holds a value JSON cannot store ({error}); use "
            f"numbers, strings, booleans, None, lists and dicts"
        ) from None
    with open(path, "w") as f:
        f.write(text + "\n")
    return path


def load_variant(log_dir: str) -> dict:
    """Read the variant saved in ``log_dir`` (lists come back as lists, not tuples)."""
    path = os.path.join(log_dir, VARIANT_FILE)
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"no {VARIANT_FILE} in log_dir={log_dir!r}; the launcher writes one per setting "
            f"(save_variant)"
        )
    with open(path) as f:
        return json.load(f)


class ConfigKeyError(KeyError):
    """A variant names a key the default config does not have."""

    def __str__(self) -> str:  # KeyError would print the message in quotes.
        return str(self.args[0])


def update_config(default: dict, variant: dict) -> dict:
    """A deep copy of ``default`` with every value in ``variant`` applied.

    Nested dicts merge key by key. A key missing from ``default`` raises
    ``ConfigKeyError`` naming its full path; replacing a dict with a non-dict (or
    the reverse, unless the default is None) raises ``TypeError``.
    """
    return _update(copy.deepcopy(default), variant, ())


def _update(config: dict, variant: dict, path: KeyPath) -> dict:
    for key, value in variant.items():
        full = ".".join(map(str, (*path, key)))
        if key not in config:
            valid = sorted(map(str, config))
            close = difflib.get_close_matches(str(key), valid, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ConfigKeyError(
                f"variant key {full!r} is not in the default config{hint} (valid keys at "
                f"this level: {valid})"
            )
        current = config[key]
        if isinstance(current, dict) and isinstance(value, dict):
            _update(current, value, (*path, key))
        elif isinstance(current, dict) or (isinstance(value, dict) and current is not None):
            raise TypeError(
                f"variant key {full!r} gives a {type(value).__name__} where the default "
                f"config has a {type(current).__name__} ({current!r})"
            )
        else:
            config[key] = copy.deepcopy(value)
    return config
