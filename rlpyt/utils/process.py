"""CPU placement: pinning and torch threads (a child's life and death: ``rlpyt.utils.supervisor``).

Pinning uses ``psutil`` where the platform supports it (Linux, Windows) and takes
CPU ids from the set actually available to the process (containers and batch
schedulers often grant a subset such as ``{4, 5, 6, 7}``), never assuming
``0 .. n-1``.  Where pinning is unsupported (macOS) it warns once and runs unpinned.

Each process pins itself from the full CPU set its run was given (``granted_cpus``),
never from a parent's narrowed one: a parent that pinned itself before forking (the
optimizer of an async run, a sampler master) hands its children its own narrow set,
and they widen back to the granted set as they pin themselves.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable

__all__ = ["TORCHRUN_ENV", "apply_affinity", "available_cpus", "denormals_flushed",
           "flush_denormals", "granted_cpus", "launched_by_torchrun"]

TORCHRUN_ENV = ("RANK", "WORLD_SIZE", "LOCAL_RANK")
"""Set by ``torchrun`` (and any env:// launcher) in every process of a job."""

_warned_unpinned = False
_granted: tuple[int, ...] | None = None  # Recorded before this process tree's first pin.


def available_cpus() -> tuple[int, ...]:
    """Sorted ids of the CPUs this process may run on: ``os.sched_getaffinity`` (Linux),
    then ``psutil`` (Windows, FreeBSD), then ``range(os.cpu_count())`` (macOS, which has
    no per-process CPU sets)."""
    try:
        return tuple(sorted(os.sched_getaffinity(0)))
    except AttributeError:  # macOS, Windows
        pass
    try:
        import psutil

        return tuple(sorted(psutil.Process().cpu_affinity()))
    except (ImportError, AttributeError, OSError, NotImplementedError):
        return tuple(range(os.cpu_count() or 1))


def launched_by_torchrun() -> bool:
    """True in a process started by ``torchrun`` (or any env:// launcher setting
    ``RANK``, ``WORLD_SIZE`` and ``LOCAL_RANK``)."""
    return all(key in os.environ for key in TORCHRUN_ENV)


def granted_cpus() -> list[int]:
    """The CPUs this run may use: those available when rlpyt first pinned a process of it.

    Recorded at the first call (``apply_affinity`` calls it before it pins), so a child
    forked after its parent pinned itself still knows the full set; CPUs available now
    are included too (a process may have been given more since)."""
    global _granted
    if _granted is None:
        _granted = available_cpus()
    return sorted(set(_granted) | set(available_cpus()))


def _as_cpu_list(cpus) -> list[int]:
    if isinstance(cpus, int):
        return [cpus]
    if not isinstance(cpus, Iterable):
        raise TypeError(f"cpus={cpus!r} must be a CPU id or a list of CPU ids")
    return [int(c) for c in cpus]


def denormals_flushed() -> bool:
    """Whether this thread's float32 arithmetic treats denormals as zero."""
    import torch  # Lazy: utils must import without torch.

    return float(torch.tensor([1e-39], dtype=torch.float64).float().mul(1.0)[0]) == 0.0


def flush_denormals(on: bool = True) -> bool:
    """Make this thread's CPU arithmetic treat float32 values under 1.2e-38 (denormals)
    as zero (``on``; False: keep them again); returns whether they were flushed before,
    for ``flush_denormals(previous)`` to restore.

    Adam's moment estimates of a weight whose gradient stays zero (a MinAtar channel
    that rarely lights up) decay geometrically into denormals, where each operation
    costs up to a hundred times more: the optimizer step then dominates training.  No
    value RL training depends on lives down there; TensorFlow and JAX flush denormals on
    CPU by default too.  The runners flush while they train and restore the previous
    setting at shutdown, so code that runs after them in the same process (a notebook's
    numerics, a test of subnormal floats) sees the process as it was.
    """
    import torch

    before = denormals_flushed()
    torch.set_flush_denormal(on)
    return before


def apply_affinity(cpus=None, torch_threads=None, set_affinity: bool = True) -> None:
    """Pin this process to ``cpus`` and set torch's intra-op thread count.

    Args:
        cpus: a CPU id or a list of ids, all among ``granted_cpus()`` (a process pinned
            narrower by its parent widens back to them); ``None`` or empty leaves the
            process unpinned.
        torch_threads: torch intra-op threads; ``None`` uses ``len(cpus)`` when
            ``cpus`` is given and leaves torch's setting alone otherwise.
        set_affinity: False skips pinning (threads are still set).

    Raises ``ValueError`` naming the CPUs that are not available to the run.
    """
    global _warned_unpinned
    cpus = _as_cpu_list(cpus) if cpus not in (None, ()) else []
    available = set(granted_cpus())  # Recorded before the first pin, whatever happens.
    if cpus and set_affinity:
        missing = sorted(set(cpus) - available)
        if missing:
            raise ValueError(
                f"affinity CPUs {missing} are not available to this process; "
                f"available CPUs: {sorted(available)}"
            )
        try:
            import psutil

            proc = psutil.Process()
            if not hasattr(proc, "cpu_affinity"):
                raise NotImplementedError("psutil has no cpu_affinity on this platform")
            proc.cpu_affinity(cpus)
        except (ImportError, NotImplementedError, AttributeError, OSError) as e:
            if not _warned_unpinned:
                warnings.warn(f"CPU affinity not set ({e}); running unpinned", stacklevel=2)
                _warned_unpinned = True
    if torch_threads is None and cpus:
        torch_threads = len(cpus)
    if torch_threads is not None:
        if int(torch_threads) < 1:
            raise ValueError(f"torch_threads={torch_threads!r} must be a positive integer")
        import torch  # Lazy: utils must import without torch.

        torch.set_num_threads(int(torch_threads))
