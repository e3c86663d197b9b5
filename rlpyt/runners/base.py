"""Runner base class and process set-up shared by all runners."""

from __future__ import annotations

import os

from rlpyt.utils.process import apply_affinity
from rlpyt.utils.quick_args import KeywordCheckedInit

__all__ = ["BaseRunner", "DivergenceError", "apply_affinity", "training_torch_threads"]

# Torch threads of the training process when the affinity names neither threads nor
# CPUs: one, as ``rlpyt train`` uses.  Torch's own default (one per core) makes the
# small models of RL many times slower on a busy machine and oversubscribes the cores
# that sampler workers run on.
DEFAULT_TORCH_THREADS = 1


def affinity_cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS
        return os.cpu_count() or 1


def training_torch_threads(threads: int | None, cpus=None) -> tuple[int, str]:
    """``(threads, why)``: the torch thread count of a training process whose affinity
    gives ``threads`` (its ``master_torch_threads``) and ``cpus`` (its ``master_cpus``).

    Given threads win; else one per pinned CPU; else ``DEFAULT_TORCH_THREADS``.
    """
    if threads is not None:
        return int(threads), "the affinity's torch threads"
    if cpus not in (None, ()):
        n = 1 if isinstance(cpus, int) else len(list(cpus))
        return n, "one per CPU of the affinity"
    return DEFAULT_TORCH_THREADS, "the default without an affinity's torch threads"


class BaseRunner(KeywordCheckedInit):
    """A runner wires sampler, agent and algorithm, then loops in ``train()``."""

    def train(self):
        raise NotImplementedError


class DivergenceError(FloatingPointError):
    """A loss or gradient became NaN/inf: the message names the term, the iteration
    and the last good checkpoint."""
