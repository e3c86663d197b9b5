"""Ctrl-C that waits for the end of the current step of a loop.

A training loop interrupted in the middle of an iteration leaves the agent and the
optimizer half-updated, so no exact checkpoint can be written then.  Inside
``DeferredInterrupt`` the first SIGINT only sets ``requested``; the loop checks it
between iterations, writes its checkpoint and stops.  A second SIGINT raises
``KeyboardInterrupt`` at once, as usual.
"""

from __future__ import annotations

import signal
import sys
import threading

__all__ = ["DeferredInterrupt"]


class DeferredInterrupt:
    """Context manager deferring the first SIGINT (see the module doc).

    Args:
        message: printed to stderr on the first SIGINT (what happens next).

    It changes nothing outside the main thread, or when SIGINT does not raise
    ``KeyboardInterrupt`` to begin with (Python's handler, or the command line's
    ``interrupt_on_signals``; ignored, as in background jobs, or handled by the
    caller); then ``requested`` stays False.
    """

    def __init__(self, message: str = "Ctrl-C: stopping after this iteration "
                                      "(Ctrl-C again to stop at once)"):
        self.message = message
        self.requested = False
        self._previous = None

    def __enter__(self) -> DeferredInterrupt:
        self.requested = False
        handler = signal.getsignal(signal.SIGINT)
        if (threading.current_thread() is threading.main_thread()
                and (handler is signal.default_int_handler
                     or getattr(handler, "raises_interrupt", False))):
            self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def _handle(self, signum, frame) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        print(self.message, file=sys.stderr, flush=True)

    def __exit__(self, *exc) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None
