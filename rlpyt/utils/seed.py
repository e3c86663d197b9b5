"""Seeding: one global seed for python/numpy/torch, and per-env seeds from one SeedSequence.

Per-env seeds depend only on ``(seed, global env rank)``: env ``i`` gets the first
32-bit word of ``numpy.random.SeedSequence(seed).spawn(...)[i]``.  A parallel worker
holding envs with global ranks ``offset .. offset + n - 1`` computes
``env_seeds(seed, n, offset)`` and gets exactly the numbers a serial run would give
those envs, so results do not depend on how envs are spread over workers.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterable

import numpy as np

__all__ = ["env_seeds", "get_seed", "make_seed", "set_envs_seeds", "set_seed"]

_MAX_SEED = 2**32 - 1
_seed: int | None = None


def set_seed(seed: int) -> None:
    """Seed python ``random``, numpy's global state and torch (CPU and all GPUs).

    Args:
        seed: integer in ``[0, 2**32 - 1]``; remembered for ``get_seed()``.
    """
    global _seed
    seed = _check_seed(seed)
    _seed = seed
    random.seed(seed)
    np.random.seed(seed)
    import torch  # Lazy: the utils layer must not require torch at import time.

    torch.manual_seed(seed)  # Also seeds every CUDA device.


def get_seed() -> int | None:
    """The seed last given to ``set_seed`` in this process (``None`` if never set)."""
    return _seed


def make_seed() -> int:
    """A fresh seed in ``[0, 2**32 - 1]`` from operating-system entropy."""
    return int.from_bytes(os.urandom(4), "little")


def env_seeds(seed: int, n: int, offset: int = 0) -> list[int]:
    """Seeds for the envs with global ranks ``offset, ..., offset + n - 1``.

    ``env_seeds(seed, n, offset) == env_seeds(seed, offset + n)[offset:]`` always.

    Args:
        seed: the run's env seed, integer in ``[0, 2**32 - 1]``.
        n: number of envs (>= 0).
        offset: global rank of the first env (>= 0).
    """
    seed = _check_seed(seed)
    n = _check_count("n", n)
    offset = _check_count("offset", offset)
    # SeedSequence.spawn gives child i the spawn_key (i,); building those children
    # directly makes a worker's cost independent of its offset.
    return [
        int(np.random.SeedSequence(seed, spawn_key=(rank,)).generate_state(1)[0])
        for rank in range(offset, offset + n)
    ]


def set_envs_seeds(envs: Iterable, seed: int | None, offset: int = 0) -> list[int] | None:
    """Call ``env.seed(s)`` on every env with its own seed from ``env_seeds``.

    Args:
        envs: env objects with a ``seed(seed)`` method.
        seed: the run's env seed; ``None`` leaves the envs unseeded.
        offset: global rank of ``envs[0]`` (for workers holding a slice of all envs).

    Returns:
        The seeds given, or ``None`` when ``seed`` is ``None``.
    """
    if seed is None:
        return None
    envs = list(envs)
    for i, env in enumerate(envs):
        if not callable(getattr(env, "seed", None)):
            raise TypeError(
                f"set_envs_seeds: envs[{i}] ({type(env).__name__}) has no seed(seed) method"
            )
    seeds = env_seeds(seed, len(envs), offset)
    for env, s in zip(envs, seeds):
        env.seed(s)
    return seeds


def _check_seed(seed) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an integer, got {seed!r} ({type(seed).__name__})")
    if not 0 <= seed <= _MAX_SEED:
        raise ValueError(f"seed must lie in [0, 2**32 - 1], got {seed}")
    return int(seed)


def _check_count(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"env_seeds: {name} must be a non-negative integer, got {value!r}")
    return int(value)
