"""A terminal progress bar for the steps between two logging points."""

from __future__ import annotations

import os
import sys
import time
from numbers import Real
from typing import TextIO

from rlpyt.utils.logging import logger

__all__ = ["ProgBarCounter"]

_BAR_WIDTH = 30
_MIN_REDRAW_S = 0.1  # Redrawing on every update would cost more than the work.


class ProgBarCounter:
    """Progress of a count towards ``total_count``, redrawn in place on a terminal.

    Shows a bar, the percentage, ``count/total``, the rate per second and the ETA.
    It is silent (prints nothing at all) when the stream is not a TTY (log files,
    pipes, pytest capture), when the ``CI`` environment variable is set, or when
    the logger is in tabular-only mode.

    Args:
        total_count: the count at which the bar is full (positive).
        stream: where to draw; ``None`` means ``sys.stdout`` at construction time.

    ``update(count)`` takes the *current* count (not an increment); counts past
    ``total_count`` show as 100 %.  Call ``stop()`` to finish the line.
    """

    def __init__(self, total_count: int | float, stream: TextIO | None = None):
        if (
            isinstance(total_count, bool)
            or not isinstance(total_count, Real)
            or not (total_count > 0)
        ):
            raise ValueError(
                f"ProgBarCounter: total_count must be a positive number, got {total_count!r}"
            )
        self.total_count = total_count
        self.stream = sys.stdout if stream is None else stream
        self.count = 0
        self.active = _is_interactive(self.stream) and not logger.get_log_tabular_only()
        self._start = time.monotonic()
        self._last_draw = -float("inf")
        self._width = 0
        if self.active:
            self._draw(force=True)

    def update(self, count: int | float) -> None:
        """Set the current count and redraw (at most every 0.1 s)."""
        self.count = count
        if self.active:
            self._draw()

    def stop(self) -> None:
        """Draw the final state and end the line; later updates draw nothing."""
        if self.active:
            self._draw(force=True)
            self.stream.write("\n")
            self.stream.flush()
            self.active = False

    def _draw(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last_draw < _MIN_REDRAW_S:
            return
        self._last_draw = now
        text = self._render(now - self._start)
        # Pad to the longest line so far: a shorter redraw must not leave old characters.
        self._width = max(self._width, len(text))
        self.stream.write("\r" + text.ljust(self._width))
        self.stream.flush()

    def _render(self, elapsed: float) -> str:
        fraction = min(max(self.count / self.total_count, 0.0), 1.0)
        filled = int(round(fraction * _BAR_WIDTH))
        bar = "#" * filled + "-" * (_BAR_WIDTH - filled)
        rate = self.count / elapsed if elapsed > 0 else 0.0
        if rate > 0 and fraction < 1:
            eta = _format_seconds((self.total_count - self.count) / rate)
        else:
            eta = "--:--" if fraction < 1 else _format_seconds(0)
        return (
            f"[{bar}] {100 * fraction:5.1f}% {_format_count(self.count)}/"
            f"{_format_count(self.total_count)} "
            f"| {rate:,.1f}/s | elapsed {_format_seconds(elapsed)} | ETA {eta}"
        )


def _is_interactive(stream) -> bool:
    if os.environ.get("CI"):
        return False
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except (ValueError, OSError):  # Closed or detached stream.
        return False


def _format_count(count: int | float) -> str:
    return f"{int(count):,}" if float(count).is_integer() else f"{count:,.1f}"


def _format_seconds(seconds: float) -> str:
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"
