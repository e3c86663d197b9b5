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

__all__ = ["DIVERGENCE_MODES", "FACTOR", "FLOOR", "LOSS_WARMUP", "WINDOW", "DivergenceWatch"]

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
