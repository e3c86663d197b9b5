"""The CPUs this process may run on, their hyperthread siblings, and pinning.

Affinities name *logical core indices* ``0..n-1``; this module maps them onto the
CPU ids the operating system actually gives the process (which need not be
``0..n-1``: containers, cgroups, ``taskset`` and macOS all differ).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Sequence

from rlpyt.utils.process import available_cpus

__all__ = [
    "LAUNCHER_CPUS_ENV",
    "available_cpus",
    "layout_cpus",
    "can_pin",
    "detect_hyperthread_offset",
    "pin_process",
]

# A launcher pins each run to its slot's CPUs, so inside a run the process sees only
# those; the launcher passes the CPU list it laid the whole grid over in this variable,
# so the run resolves its slot code against the same list.
LAUNCHER_CPUS_ENV = "RLPYT_LAUNCHER_CPUS"

_warned_no_pinning = False


def layout_cpus() -> tuple[int, ...]:
    """CPU ids that affinity codes are laid over: the launcher's (``RLPYT_LAUNCHER_CPUS``)
    when this process was started by ``run_experiments``, else ``available_cpus()``."""
    text = os.environ.get(LAUNCHER_CPUS_ENV, "").strip()
    if not text:
        return available_cpus()
    try:
        return tuple(int(c) for c in text.split(","))
    except ValueError:
        raise ValueError(
            f"{LAUNCHER_CPUS_ENV}={text!r} is invalid: expected comma-separated CPU ids"
        ) from None


def can_pin() -> bool:
    """Whether this platform lets a process restrict itself to chosen CPUs."""
    if hasattr(os, "sched_setaffinity"):
        return True
    try:
        import psutil

        return hasattr(psutil.Process(), "cpu_affinity")
    except ImportError:
        return False


def pin_process(cpus: Iterable[int], pid: int = 0) -> bool:
    """Restrict process ``pid`` (0: this one) to ``cpus``.

    Returns False, after one warning per process, where the platform cannot pin
    (macOS); the process then runs on any CPU, which is slower but correct.
    """
    global _warned_no_pinning
    cpus = sorted(set(int(c) for c in cpus))
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(pid, cpus)
        return True
    try:
        import psutil

        psutil.Process(pid or os.getpid()).cpu_affinity(cpus)
        return True
    except (ImportError, AttributeError, NotImplementedError):
        if not _warned_no_pinning:
            warnings.warn(
                "This platform cannot pin processes to CPUs; runs will share all CPUs.",
                RuntimeWarning,
                stacklevel=2,
            )
            _warned_no_pinning = True
        return False


def _thread_siblings(cpu: int) -> set[int] | None:
    """Hyperthread siblings of ``cpu`` (itself included) from Linux sysfs, or None."""
    path = f"/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list"
    try:
        with open(path) as f:
            text = f.read().strip()
    except OSError:
        return None
    siblings: set[int] = set()
    for part in text.split(","):
        low, _, high = part.partition("-")
        siblings.update(range(int(low), int(high or low) + 1))
    return siblings


def detect_hyperthread_offset(cpus: Sequence[int] | None = None) -> int | None:
    """The offset ``h`` such that CPU index ``i`` and ``i + h`` share a physical core.

    Looks at the indices of ``cpus`` (default: ``available_cpus()``). Returns
    ``len(cpus) // 2`` when the second half of the list holds exactly the hyperthread
    siblings of the first half (the usual Linux numbering), else None (no
    hyperthreads, or a numbering this layout cannot express).
    """
    cpus = tuple(available_cpus() if cpus is None else cpus)
    half = len(cpus) // 2
    if half == 0 or len(cpus) % 2:
        return None
    for i in range(half):
        siblings = _thread_siblings(cpus[i])
        if siblings is None or cpus[i + half] not in siblings or len(siblings) != 2:
            return None
    return half
