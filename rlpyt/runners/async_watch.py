"""Watching the processes of an asynchronous run, so that no wait can last forever.

``AsyncRl``'s optimizer loop calls ``AsyncWatch.check`` between its steps and waits
(every wait there is at most ``rlpyt.samplers.async_.control_block.POLL_S``).  It raises
``AsyncRunError`` when

* **no side moves**: neither the sampler (batches sampled), the memory copier
  (batches appended) nor the optimizer (``optimize_agent`` calls, gradient steps)
  has made progress for ``progress_timeout`` seconds while the sampler was not
  evaluating and the optimizer was waiting (a long checkpoint or log row is work).  The message names both sides' state: updates done and allowed,
  batches sampled and appended, the update credit and what each side waits for.
  The throttle itself cannot cause this (``ThrottleSpec``); a hung copier, a replay
  lock or a bug can;
* **the sampler process left early**: it exited (code 0, e.g. after a ``SIGTERM``)
  without reporting that it sampled its last batch, or without the evaluation the
  optimizer still waits for (``SAMPLER_EXIT_GRACE_S`` lets its last messages arrive).

A crash, a kill and a hung batch are reported by the runner's fault checks
(``batch_timeout``, a worker's ``step_timeout``); this module covers the waits that
those leave open.
"""

from __future__ import annotations

import time

from rlpyt.utils.supervisor import SAMPLER_EXIT_S

__all__ = ["DEFAULT_PROGRESS_TIMEOUT_S", "SAMPLER_EXIT_GRACE_S", "AsyncWatch",
           "check_progress_timeout"]

DEFAULT_PROGRESS_TIMEOUT_S = 300.0
SAMPLER_EXIT_GRACE_S = SAMPLER_EXIT_S  # After the sampler exited: time for its last messages.
BUSY_GAP_S = 5.0  # Checks this far apart: the optimizer was busy (a checkpoint, a row).


def check_progress_timeout(progress_timeout) -> float | None:
    """Validate the runner keyword; returns it as a float (or None)."""
    if progress_timeout is None:
        return None
    if isinstance(progress_timeout, bool) or not isinstance(progress_timeout, (int, float)) \
            or not progress_timeout > 0:
        raise ValueError(f"progress_timeout={progress_timeout!r} must be a number of seconds "
                         f"> 0, or None (never stop a run that makes no progress)")
    return float(progress_timeout)


class AsyncWatch:
    """Progress and liveness of the sampler, copier and optimizer of one async run.

    Args:
        control: the run's ``AsyncControl`` (shared counters and flags).
        progress_timeout: seconds without progress before the run stops; None: never.
        error_cls: the exception raised (the runner's ``AsyncRunError``).
    """

    def __init__(self, control, progress_timeout: float | None, error_cls: type[Exception]):
        self.control = control
        self.progress_timeout = progress_timeout
        self.error_cls = error_cls
        self._last_counters = None
        self._last_progress = self._last_check = time.monotonic()
        self._sampler_exited_at = None

    def check_progress(self, updates: int, optimizer_calls: int) -> None:
        """Raise if nothing moved for ``progress_timeout`` seconds."""
        control, now = self.control, time.monotonic()
        counters = (control.sampled.value, control.appended.value, updates, optimizer_calls)
        busy = now - self._last_check > BUSY_GAP_S  # The optimizer worked between checks.
        self._last_check = now
        if counters != self._last_counters or control.in_eval.value or busy:
            self._last_counters, self._last_progress = counters, now
            return
        if self.progress_timeout is None or now - self._last_progress <= self.progress_timeout:
            return
        raise self.error_cls(
            f"no progress for over progress_timeout={self.progress_timeout:g}s: neither the "
            f"sampler, the memory copier nor the optimizer moved. {self.describe(updates)}")

    def describe(self, updates: int) -> str:
        """Both sides' state, in words (called from the optimizer's loop)."""
        control, throttle = self.control, self.control.throttle
        sampled, appended = control.sampled.value, control.appended.value
        if updates < throttle.allowed_updates(appended):
            optimizer = "has allowed updates to take"
        elif control.starving.value:
            optimizer = "waiting for data (starving: the replay cannot yet give a batch)"
        else:
            optimizer = "waiting for data (every allowed update done)"
        sampler = "waiting for sampling credit" if control.sampler_waiting.value else \
            "sampling a batch or waiting for a free buffer slot"
        return (f"{throttle.describe(appended, updates)}. Optimizer {optimizer}; sampler: "
                f"{sampled} batches sampled, {sampler}; memory copier: {appended} batches "
                f"appended, {sampled - appended} filled slot(s) waiting")

    def check_sampler_exit(self, process, waiting_for: str | None) -> None:
        """Raise if the sampler process exited cleanly while the optimizer still waits
        for ``waiting_for`` from it (None: nothing, the sampler has finished)."""
        if waiting_for is None or process.is_alive() or process.exitcode != 0:
            self._sampler_exited_at = None
            return
        now = time.monotonic()
        if self._sampler_exited_at is None:
            self._sampler_exited_at = now
        if now - self._sampler_exited_at > SAMPLER_EXIT_GRACE_S:
            raise self.error_cls(
                f"the sampler process (pid {process.pid}) exited (code 0) without sending "
                f"{waiting_for}; it was stopped from outside (SIGTERM?). "
                f"{self.describe(self.control.updates.value)}")
