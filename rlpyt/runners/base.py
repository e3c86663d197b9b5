"""Runner base class and process set-up shared by all runners."""

from __future__ import annotations

import os

from rlpyt.utils.process import apply_affinity
from rlpyt.utils.quick_args import KeywordCheckedInit

__all__ = ["MAX_STEPS_ENV", "BaseRunner", "DivergenceError", "apply_affinity", "capped_n_steps",
           "training_torch_threads"]

# Smoke runs: with this environment variable set to N, every runner trains at most N env
# steps (tests/test_docs_commands.py runs the README's and docs' commands this way).
MAX_STEPS_ENV = "RLPYT_MAX_STEPS"

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


def capped_n_steps(n_steps: int, algo=None, sampler=None) -> tuple[int, str | None]:
    """``(n_steps, note)``: ``n_steps`` capped by the ``RLPYT_MAX_STEPS`` environment
    variable, and a note saying so (None when nothing changed).

    The cap never goes below ``algo.min_steps_learn`` plus one sampler batch, so a
    replay algorithm still makes updates in a shrunk run.
    """
    text = os.environ.get(MAX_STEPS_ENV, "").strip()
    if not text:
        return n_steps, None
    try:
        cap = int(float(text))
    except ValueError:
        cap = 0
    if cap <= 0:
        raise ValueError(f"environment variable {MAX_STEPS_ENV}={text!r} must be a positive "
                         f"number of env steps (or unset)")
    min_learn = getattr(algo, "min_steps_learn", None) or 0
    if min_learn:
        batch = getattr(getattr(sampler, "batch_spec", None), "size", 1)
        cap = max(cap, int(min_learn) + int(batch))
    if n_steps <= cap:
        return n_steps, None
    return cap, (f"{MAX_STEPS_ENV}={text}: training {cap} env steps instead of n_steps="
                 f"{n_steps} (a shrunk smoke run; unset {MAX_STEPS_ENV} for the real one)")


class BaseRunner(KeywordCheckedInit):
    """A runner wires sampler, agent and algorithm, then loops in ``train()``."""

    def train(self):
        raise NotImplementedError


class DivergenceError(FloatingPointError):
    """A loss or gradient became NaN/inf: the message names the term, the iteration
    and the last good checkpoint."""
