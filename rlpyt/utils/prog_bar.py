"""A terminal progress bar for the steps between two logging points (tqdm underneath)."""

from __future__ import annotations

import os
import sys
from numbers import Real
from typing import TextIO

from tqdm import tqdm

from rlpyt.utils.logging import logger

__all__ = ["ProgBarCounter"]

_MIN_REDRAW_S = 0.1  # Redrawing on every update would cost more than the work.


class ProgBarCounter:
    """Progress of a count towards ``total_count``, redrawn in place on a terminal.

    A ``tqdm`` bar: percentage, ``count/total``, rate per second, elapsed time and ETA.
    It is silent (prints nothing at all) when the stream is not a TTY (log files,
    pipes, pytest capture), when the ``CI`` environment variable is set, or when the
    logger is in tabular-only mode.

    Args:
        total_count: the count at which the bar is full (positive).
        stream: where to draw; ``None`` means ``sys.stdout`` at construction time.
        initial: the count the bar starts from (a resumed run); rates and the ETA
            count only what comes after it. Default 0.
        unit: what is counted, shown in the rate (``step/s``). Default ``"step"``.

    While the bar draws, the logger's terminal lines are written above it
    (``logger.set_terminal_writer``), so log lines do not break it.

    ``update(count)`` takes the *current* count (not an increment); counts past
    ``total_count`` show a full bar.  Call ``stop()`` to finish the line.
    """

    def __init__(self, total_count: int | float, stream: TextIO | None = None,
                 initial: int | float = 0, unit: str = "step"):
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
        self.count = initial
        self.active = _is_interactive(self.stream) and not logger.get_log_tabular_only()
        self._bar = None
        if self.active:
            self._bar = tqdm(total=total_count, file=self.stream, mininterval=_MIN_REDRAW_S,
                             dynamic_ncols=True, leave=True, unit=unit, unit_scale=False,
                             initial=min(max(initial, 0), total_count))
            logger.set_terminal_writer(self._write)

    def _write(self, line: str) -> None:
        tqdm.write(line, file=self.stream)

    def update(self, count: int | float) -> None:
        """Set the current count and redraw (at most every 0.1 s)."""
        self.count = count
        if self.active:
            shown = min(max(count, 0), self.total_count)  # A full bar past the total.
            self._bar.update(shown - self._bar.n)

    def stop(self) -> None:
        """Draw the final state and end the line; later updates draw nothing."""
        if self.active:
            self._bar.close()
            self.active = False
            logger.set_terminal_writer(None)


def _is_interactive(stream) -> bool:
    if os.environ.get("CI"):
        return False
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except (ValueError, OSError):  # Closed or detached stream.
        return False
