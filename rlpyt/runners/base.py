"""Runner base class and process set-up shared by all runners."""

from __future__ import annotations

import os
import warnings

import torch

__all__ = ["BaseRunner", "apply_affinity"]

_warned_affinity = False


def apply_affinity(cpus=None, torch_threads=None, set_affinity=True) -> None:
    """Pin this process to ``cpus`` and set torch's thread count.

    Pinning uses psutil where the platform supports it (Linux, Windows); elsewhere it
    warns once and runs unpinned.  CPU ids must be among those available to the
    process.
    """
    global _warned_affinity
    if cpus and set_affinity:
        cpus = [int(c) for c in cpus]
        try:
            import psutil

            proc = psutil.Process()
            if not hasattr(proc, "cpu_affinity"):
                raise NotImplementedError("psutil has no cpu_affinity on this platform")
            available = set(proc.cpu_affinity())
            missing = sorted(set(cpus) - available)
            if missing:
                raise ValueError(
                    f"affinity CPUs {missing} are not available to this process; "
                    f"available: {sorted(available)}"
                )
            proc.cpu_affinity(cpus)
        except (NotImplementedError, AttributeError, OSError) as e:
            if not _warned_affinity:
                warnings.warn(f"CPU affinity not set ({e}); running unpinned", stacklevel=2)
                _warned_affinity = True
    if torch_threads is not None:
        torch.set_num_threads(int(torch_threads))
    elif cpus:
        torch.set_num_threads(max(1, len(cpus)))


def affinity_cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS
        return os.cpu_count() or 1


class BaseRunner:
    """A runner wires sampler, agent and algorithm, then loops in ``train()``."""

    def train(self):
        raise NotImplementedError
