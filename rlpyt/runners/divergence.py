"""Divergence that stays finite: a loss, gradient norm or parameter norm that jumps by
orders of magnitude above its own recent history.

The rule (documented in docs/runners.md, "Divergence guard"): every watched series keeps
the per-iteration peaks ``max |value|`` of its last ``WINDOW`` iterations.  Once it holds
``warmup`` of them, a new peak above ``FACTOR * max(max(history), FLOOR)`` is a jump.
The running *max* (not a mean) is the scale because loss terms cross zero and dip
(a policy loss, a TD loss before the first reward): only a rise far above everything
seen lately counts.  ``FLOOR`` (an absolute 1.0) keeps a term that has been near zero
(e.g. a TD loss of 1e-6 while every reward is 0) from flagging the first real reward:
whatever the history, a peak below ``FACTOR * FLOOR`` = 1000 is never a jump.

The parameter norm starts with its value at the start of training (``warmup`` 1), so
a blow-up in the very first update (a learning rate of 1e6) is caught at once; loss
terms and gradient norms start checking after ``LOSS_WARMUP`` iterations (the first
losses of a run are not yet a scale).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable

import numpy as np
import torch

from rlpyt.runners.base import DivergenceError
from rlpyt.utils.logging import logger

__all__ = ["DIVERGENCE_MODES", "FACTOR", "FLOOR", "LOSS_WARMUP", "WINDOW", "DivergenceGuard",
           "DivergenceWatch"]

DIVERGENCE_MODES = ("stop", "warn", "off")
FACTOR = 1e3  # three orders of magnitude above the running scale
FLOOR = 1.0  # the running scale is never taken below this absolute value
WINDOW = 100  # iterations of history per series
LOSS_WARMUP = 5  # iterations seen before a loss or gradient norm is checked


class DivergenceWatch:
    """Running history of named scalar series; reports a jump above it.

    Args:
        factor: a peak above ``factor`` times the running scale is a jump. Default 1e3.
        floor: the running scale's lower bound (absolute). Default 1.0.
        window: iterations of history kept per series. Default 100.
    """

    def __init__(self, factor: float = FACTOR, floor: float = FLOOR, window: int = WINDOW):
        self.factor, self.floor, self.window = float(factor), float(floor), int(window)
        self._history: dict[str, deque] = {}

    def observe(self, name: str, peak: float, warmup: int = LOSS_WARMUP) -> str | None:
        """Add this iteration's peak ``|value|`` of ``name`` to its history; return a
        description of the jump if it is one, else None."""
        if not math.isfinite(peak):
            return None  # the non-finite guard's business
        history = self._history.setdefault(name, deque(maxlen=self.window))
        jump = None
        if len(history) >= warmup:
            scale = max(max(history), self.floor)
            if peak > self.factor * scale:
                jump = (f"{name} jumped to {peak:.4g}, {peak / scale:.3g} times its running "
                        f"scale {scale:.4g} (the largest |{name}| of its last {len(history)} "
                        f"iterations, at least {self.floor:g})")
        history.append(peak)
        return jump

    def state_dict(self) -> dict:
        return {name: list(values) for name, values in self._history.items()}

    def load_state_dict(self, state: dict) -> None:
        self._history = {name: deque(values, maxlen=self.window)
                         for name, values in state.items()}


class DivergenceGuard:
    """What a runner checks after every update: a non-finite loss or gradient norm stops
    the run (``DivergenceError``), as does a finite jump of one of them or of the
    agent's parameter norm (``DivergenceWatch``'s rule) unless ``mode`` says otherwise;
    other optimizer values above ``max_abs_value`` are warned about once each.

    Args:
        mode: ``"stop"`` (raise on a finite jump), ``"warn"`` (log it once per term) or
            ``"off"`` (no finite-jump check).
        max_abs_value: warn when an optimizer value other than a loss or gradient norm
            (Q values, TD errors, ...) exceeds this in absolute value; None: no check.
    """

    def __init__(self, mode: str = "stop", max_abs_value: float | None = None):
        if mode not in DIVERGENCE_MODES:
            raise ValueError(f"divergence={mode!r} must be one of {DIVERGENCE_MODES}")
        if max_abs_value is not None and not (isinstance(max_abs_value, (int, float))
                                              and max_abs_value > 0):
            raise ValueError(f"max_abs_value={max_abs_value!r} must be a positive number or None")
        self.mode, self.max_abs_value = mode, max_abs_value
        self.watch = DivergenceWatch()
        self.watched_updates = 0
        self._warned: set[str] = set()

    def start(self, algo, agent, itr_batch_size: int) -> None:
        """A fresh history, seeded with the parameter norm before any update."""
        self.algo, self.agent, self.itr_batch_size = algo, agent, itr_batch_size
        self.watch = DivergenceWatch()
        self.watched_updates = getattr(algo, "update_counter", 0)
        self._warned = set()
        if self.mode != "off":
            self.watch.observe("paramNorm", self._param_norm(), warmup=1)

    def update(self, optimize: Callable[[], object], itr: int, last_checkpoint: str | None):
        """Run one ``optimize()`` call of the algorithm and check its ``OptInfo``, which
        it returns.  An algorithm's own ``FloatingPointError`` (its NaN check) becomes a
        ``DivergenceError`` naming the iteration and the last good checkpoint."""
        try:
            opt_info = optimize()
        except FloatingPointError as e:
            if isinstance(e, DivergenceError):
                raise
            raise DivergenceError(self.message(str(e), itr, last_checkpoint)) from e
        self.check(itr, opt_info, last_checkpoint)
        return opt_info

    def check(self, itr: int, opt_info, last_checkpoint: str | None) -> None:
        watched = {}
        for name in getattr(opt_info, "_fields", ()):
            values = getattr(opt_info, name)
            values = np.asarray(values if isinstance(values, list) else [values],
                                dtype=np.float64).ravel()
            if values.size == 0:
                continue
            lowered = name.lower()
            if "loss" in lowered or "grad" in lowered:
                bad = values[~np.isfinite(values)]
                if bad.size:
                    raise DivergenceError(self.message(
                        f"{type(self.algo).__name__}: {name} is {bad[0]}", itr, last_checkpoint))
                watched[name] = float(np.max(np.abs(values)))
            elif self.max_abs_value is not None:
                peak = np.max(np.abs(values))
                if peak > self.max_abs_value and name not in self._warned:
                    self._warned.add(name)
                    logger.log(f"WARNING: |{name}| reached {peak:.4g} at iteration {itr}, above "
                               f"max_abs_value={self.max_abs_value:g}: value estimates may be "
                               f"diverging (lower the learning rate?)")
        if self.mode != "off":
            self._watch_jumps(itr, watched, last_checkpoint)

    def _watch_jumps(self, itr: int, peaks: dict, last_checkpoint: str | None) -> None:
        updates = self.algo.update_counter
        if updates != self.watched_updates:  # the parameters changed
            self.watched_updates = updates
            peaks = dict(peaks, paramNorm=self._param_norm())
        for name, peak in peaks.items():
            jump = self.watch.observe(name, peak,
                                      warmup=1 if name == "paramNorm" else LOSS_WARMUP)
            if jump is None:
                continue
            what = f"{type(self.algo).__name__}: {jump}"
            if self.mode == "stop":
                raise DivergenceError(self.message(what, itr, last_checkpoint)
                                      + " (divergence='warn' or 'off' skips this check)")
            if name not in self._warned:
                self._warned.add(name)
                logger.log(f"WARNING: {what} at iteration {itr}: the run may be diverging "
                           f"(lower the learning rate?)")

    def _param_norm(self) -> float:
        """L2 norm of every trained parameter of the agent."""
        with torch.no_grad():
            squares = [p.detach().float().pow(2).sum() for p in self.agent.parameters()]
        return math.sqrt(float(torch.stack(squares).sum())) if squares else 0.0

    def message(self, what: str, itr: int, last_checkpoint: str | None) -> str:
        return (f"{what} at iteration {itr} ({(itr + 1) * self.itr_batch_size} env steps): "
                f"training stopped. Last good checkpoint: {last_checkpoint or 'none yet'}. "
                f"Lower the learning rate or check rewards/observations for NaN/inf, then "
                f"resume or restart.")

    def state_dict(self) -> dict:
        """Under the keys ``divergence`` and ``watched_updates``, merged into the runner's
        diagnostics state (which checkpoints hold) beside the logging accumulators."""
        return dict(divergence=self.watch.state_dict(), watched_updates=self.watched_updates)

    def load_state_dict(self, state: dict) -> None:
        if "divergence" in state:  # a checkpoint without it resumes with a fresh history
            self.watch.load_state_dict(state["divergence"])
            self.watched_updates = state["watched_updates"]
