"""Runner base class and process set-up shared by all runners."""

from __future__ import annotations

import os

from rlpyt.utils.process import apply_affinity
from rlpyt.utils.quick_args import KeywordCheckedInit

__all__ = ["BaseRunner", "DivergenceError", "apply_affinity"]


def affinity_cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS
        return os.cpu_count() or 1


class BaseRunner(KeywordCheckedInit):
    """A runner wires sampler, agent and algorithm, then loops in ``train()``."""

    def train(self):
        raise NotImplementedError


class DivergenceError(FloatingPointError):
    """A loss or gradient became NaN/inf: the message names the term, the iteration
    and the last good checkpoint."""
