"""Keep the memory of freed large blocks in the process for reuse (glibc's malloc).

glibc's ``malloc`` serves every block above its mmap threshold (at most 32 MiB by its
own rules) from a fresh ``mmap`` and hands it back to the kernel on ``free``.  A
training step allocates and frees many such blocks: an Atari minibatch of 256 frames is
29 MiB once converted to float32, and its activations and gradients as much again.
Every page of a fresh mapping faults on first touch and is zeroed by the kernel, so a
PPO learner on Atari spent about a quarter of its CPU time in system time, servicing
some 170,000 page faults a second (docs/notes/malloc.md).  With the thresholds raised,
freed blocks stay in the heap and the next step reuses them: the same step faults
almost never.

The cost is memory: the training process keeps, until the runner shuts down, the heap
its largest step needed, instead of handing it back between steps.  The runners turn
this on for the training process while they train and restore glibc's start values at
shutdown (``keep_freed_memory(False)`` also hands the kept memory back).  Set the
environment variable ``RLPYT_KEEP_FREED_MEMORY=0`` to leave malloc alone; a process
whose malloc the user already tuned (``MALLOC_MMAP_THRESHOLD_``,
``MALLOC_TRIM_THRESHOLD_``, or ``glibc.malloc`` tunables in ``GLIBC_TUNABLES``) is left
alone too, as is any platform without glibc (macOS, musl).
"""

from __future__ import annotations

import ctypes
import os

__all__ = ["KEEP_FREED_MEMORY_ENV", "freed_memory_kept", "keep_freed_memory", "kept_up_to"]

KEEP_FREED_MEMORY_ENV = "RLPYT_KEEP_FREED_MEMORY"

_M_TRIM_THRESHOLD = -1  # mallopt parameters, from glibc's <malloc.h>
_M_MMAP_THRESHOLD = -3
_GLIBC_START_THRESHOLD = 128 * 1024  # both thresholds' values when a process starts
# Blocks up to 1 GiB come from the heap (larger ones, a replay buffer, are mapped once and
# kept anyway).  Some glibc versions refuse a threshold over 32 MiB: then 32 MiB, which
# still covers a minibatch of Atari frames.
_KEEP_MMAP_THRESHOLDS = (1 << 30, 32 << 20)
# The most mallopt's int takes: free memory at the heap's top is not handed back.
_KEEP_TRIM_THRESHOLD = (1 << 31) - 1

_kept = False
kept_up_to = 0  # bytes: the largest block kept, while keeping


def _glibc():
    """glibc's handle, or None where malloc is not glibc's."""
    try:
        libc = ctypes.CDLL(None)
    except OSError:  # pragma: no cover - no C library handle (Windows)
        return None
    if not all(hasattr(libc, name) for name in ("gnu_get_libc_version", "mallopt",
                                                "malloc_trim")):
        return None
    return libc


def _user_tuned_malloc() -> bool:
    if any(name in os.environ for name in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")):
        return True
    return "glibc.malloc." in os.environ.get("GLIBC_TUNABLES", "")


def _switched_off() -> bool:
    value = os.environ.get(KEEP_FREED_MEMORY_ENV, "").strip().lower()
    if value in ("", "1", "true", "yes", "on"):
        return False
    if value in ("0", "false", "no", "off"):
        return True
    raise ValueError(f"environment variable {KEEP_FREED_MEMORY_ENV}={value!r} must be 1 or 0 "
                     f"(or unset: 1)")


def freed_memory_kept() -> bool:
    """Whether ``keep_freed_memory`` has this process keeping freed large blocks."""
    return _kept


def keep_freed_memory(on: bool = True) -> bool:
    """Keep freed large blocks in this process's heap for reuse (``on``), or go back to
    glibc's start values and hand kept memory back to the kernel (False).

    Returns whether it was on before, for ``keep_freed_memory(previous)`` to restore.
    Does nothing (and stays off) where malloc is not glibc's, where the user tuned
    malloc through the environment, or with ``RLPYT_KEEP_FREED_MEMORY=0``.
    """
    global _kept, kept_up_to
    before = _kept
    if on == _kept:
        return before
    libc = _glibc()
    if libc is None:
        return before
    if on:
        if _switched_off() or _user_tuned_malloc():
            return before
        accepted = next((size for size in _KEEP_MMAP_THRESHOLDS  # the first accepted
                         if libc.mallopt(_M_MMAP_THRESHOLD, size)), None)
        if accepted is None:
            return before
        kept_up_to = accepted
        libc.mallopt(_M_TRIM_THRESHOLD, _KEEP_TRIM_THRESHOLD)
    else:
        libc.mallopt(_M_MMAP_THRESHOLD, _GLIBC_START_THRESHOLD)
        libc.mallopt(_M_TRIM_THRESHOLD, _GLIBC_START_THRESHOLD)
        libc.malloc_trim(0)
        kept_up_to = 0
    _kept = on
    return before
