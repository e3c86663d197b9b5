"""The control block an asynchronous run's processes share: the replay-ratio throttle,
the double buffer's slots, and the messages and errors that flow to the optimizer process.

Three processes share one ``AsyncControl`` (made before they fork):

* the **sampler** process fills the double buffer's two slots in turn, each with one
  ``[T, B]`` batch, and waits for sampling *credit* before each batch;
* the **memory copier** moves each filled slot into the replay buffer (or batch
  queue) and counts the batches appended;
* the **optimizer** (the main process) takes gradient steps while the replay ratio
  allows, and publishes its progress, which gives the sampler credit.

The throttle holds the replay ratio both ways (``ThrottleSpec``): the optimizer may
take update ``u`` only once enough env steps are in the replay for ``u + 1`` updates
at ``replay_ratio``, and the sampler may start batch ``n`` only while it is fewer than
``max_ahead`` batches beyond what the optimizer's updates have consumed, or while the
optimizer's next update still needs it (so neither side can wait forever).  Every wait
polls, so a stop request or a dead parent ends it within ``POLL_S`` seconds.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass
from fractions import Fraction

__all__ = ["AsyncControl", "AsyncStopped", "ThrottleSpec"]

POLL_S = 0.2
WAKEUP_POLL_S = 0.02  # Bounds the delay of a wake-up lost to a race.


class AsyncStopped(Exception):
    """Raised inside a sampler or copier process told to stop (or orphaned): exit quietly."""


@dataclass(frozen=True)
class ThrottleSpec:
    """The replay-ratio bookkeeping of an asynchronous run (pure arithmetic, no processes).

    Args:
        replay_ratio: gradient-step samples per env step (``batch_size * updates /
            env steps``).
        samples_per_update: samples in one gradient step (the algorithm's ``batch_size``).
        itr_env_steps: env steps in one sampler batch (``batch_T * batch_B``).
        min_itr_learn: sampler batches in the replay before the first update.
        max_ahead: batches the sampler may run ahead of the optimizer's consumption.

    Update credit is exact: ``updates_per_itr`` is a fraction (the replay ratio read as
    the decimal it was written as), and the updates allowed after ``n`` learning batches
    are ``floor(n * updates_per_itr)``, so a fraction of an update per batch accumulates
    across batches instead of being floored away batch by batch.

    Neither side can wait on the other forever (``tests/test_async_rl.py`` proves it over
    every setting): the optimizer with ``u`` updates waits only for the batches its update
    ``u + 1`` needs (``itrs_for_updates(u + 1)``), and the sampler may always sample
    those, even when that is more than ``max_ahead`` batches beyond what ``u`` updates
    consumed (fewer than ``1 / max_ahead`` updates per batch).
    """

    replay_ratio: float
    samples_per_update: int
    itr_env_steps: int
    min_itr_learn: int = 0
    max_ahead: int = 2

    def __post_init__(self):
        if not self.replay_ratio > 0 or not math.isfinite(self.replay_ratio):
            raise ValueError(f"replay_ratio={self.replay_ratio!r} must be a finite number > 0")
        if self.samples_per_update < 1 or self.itr_env_steps < 1:
            raise ValueError(f"samples_per_update={self.samples_per_update!r} and "
                             f"itr_env_steps={self.itr_env_steps!r} must be >= 1")
        if self.max_ahead < 1:
            raise ValueError(f"max_ahead={self.max_ahead!r} must be >= 1")
        if self.min_itr_learn < 0:
            raise ValueError(f"min_itr_learn={self.min_itr_learn!r} must be >= 0")
        # The ratio as the decimal it was written as (0.3, not 0.29999999999999998890).
        ratio = Fraction(self.replay_ratio).limit_denominator(10 ** 9)
        upi = ratio * self.itr_env_steps / self.samples_per_update  # Updates per batch.
        # Integer numerator and denominator: exact and fast in the polling loops.
        object.__setattr__(self, "_num", upi.numerator)
        object.__setattr__(self, "_den", upi.denominator)

    @property
    def updates_per_itr(self) -> float:
        return self._num / self._den

    def allowed_updates(self, appended: int) -> int:
        """Gradient steps the replay ratio allows with ``appended`` batches stored."""
        return max(0, appended - self.min_itr_learn) * self._num // self._den

    def itrs_for_updates(self, updates: int) -> int:
        """The fewest stored batches that allow ``updates`` gradient steps."""
        if updates <= 0:
            return 0
        return self.min_itr_learn + -(-updates * self._den // self._num)

    def consumed_itrs(self, updates: int) -> float:
        """Sampler batches that ``updates`` gradient steps account for."""
        return updates * self._den / self._num

    def sampling_limit(self, updates: int) -> int:
        """How many batches the sampler may have started after ``updates`` steps: up to
        ``max_ahead`` beyond those consumed, and always those the next update needs."""
        ahead = self.min_itr_learn + self.max_ahead + -(-updates * self._den // self._num)
        return max(ahead, self.itrs_for_updates(updates + 1))

    def may_sample(self, itr: int, updates: int) -> bool:
        """Whether the sampler may start batch ``itr`` (0-based) after ``updates`` steps."""
        return itr < self.sampling_limit(updates)

    def describe(self, appended: int, updates: int) -> str:
        """Both sides' state as the throttle sees it, for error messages."""
        allowed = self.allowed_updates(appended)
        credit = max(0, appended - self.min_itr_learn) * self._num / self._den - updates
        return (f"optimizer: {updates} updates done of {allowed} allowed by {appended} batches "
                f"appended (update credit {credit:.3g}: {self.updates_per_itr:.3g} updates per "
                f"batch after the first {self.min_itr_learn}); sampler: may start batches "
                f"below {self.sampling_limit(updates)} (max_ahead={self.max_ahead})")


class AsyncControl:
    """Counters, semaphores and queues shared by the processes of one async run.

    Args:
        ctx: the multiprocessing context the sampler and copier processes start from.
        throttle: the run's ``ThrottleSpec``.

    Waits use wake-up semaphores plus polling, never a condition variable: a
    ``multiprocessing.Condition`` blocks ``notify`` forever once a waiter has been
    killed, and a kill must never freeze the optimizer.
    """

    def __init__(self, ctx, throttle: ThrottleSpec):
        self.throttle = throttle
        self.parent_pid = os.getpid()
        self.stop = ctx.RawValue("b", 0)
        self.sampled = ctx.RawValue("q", 0)  # Batches written into the double buffer.
        self.appended = ctx.RawValue("q", 0)  # Batches the copier put into the replay.
        self.updates = ctx.RawValue("q", 0)  # The optimizer's gradient steps.
        self.starving = ctx.RawValue("b", 0)  # The optimizer needs data beyond the ratio.
        self.sampler_version = ctx.RawValue("q", -1)  # Parameters the sampler acts with.
        # Parameters each double-buffer slot's batch was sampled with (read by the copier).
        self.slot_version = ctx.RawArray("q", [-1, -1])
        self.sampler_wait_s = ctx.RawValue("d", 0.0)  # Sampler time spent held back.
        self.heartbeat = ctx.RawValue("d", time.monotonic())
        self.in_eval = ctx.RawValue("b", 0)
        self.slot_free = [ctx.Semaphore(1), ctx.Semaphore(1)]
        self.slot_filled = [ctx.Semaphore(0), ctx.Semaphore(0)]
        self.sampler_waiting = ctx.RawValue("b", 0)
        self.sampler_wakeup = ctx.Semaphore(0)
        self.optimizer_waiting = ctx.RawValue("b", 0)
        self.optimizer_wakeup = ctx.Semaphore(0)
        self.messages = ctx.Queue()
        self.errors = ctx.Queue()

    # ---- every process -----------------------------------------------------------------
    def check_running(self) -> None:
        """In a child: raise ``AsyncStopped`` if told to stop or if the parent is gone."""
        if self.stop.value or os.getppid() != self.parent_pid:
            raise AsyncStopped

    def acquire(self, sem, beat: bool = False) -> None:
        """Acquire ``sem`` in a child, giving up when stopped; ``beat``: the sampler's
        waits count as progress for the watchdog."""
        while not sem.acquire(timeout=POLL_S):
            if beat:
                self.beat()
            self.check_running()
        self.check_running()

    def beat(self) -> None:
        """The sampler is alive and not stuck in a batch (read by the runner's watchdog)."""
        self.heartbeat.value = time.monotonic()

    # ---- sampler side ------------------------------------------------------------------
    def wait_sampling_credit(self, itr: int) -> None:
        """Block until the throttle lets the sampler start batch ``itr``."""
        start = time.monotonic()
        while not self._may_sample(itr):
            self.sampler_waiting.value = 1
            if self._may_sample(itr):  # Checked again after raising the flag: no lost wake-up.
                break
            self.sampler_wakeup.acquire(timeout=WAKEUP_POLL_S)
            self.beat()
            self.check_running()
        self.sampler_waiting.value = 0
        _drain(self.sampler_wakeup)
        self.sampler_wait_s.value += time.monotonic() - start
        self.check_running()

    def may_sample(self, itr: int) -> bool:
        """Whether the throttle lets the sampler start batch ``itr`` now (no waiting)."""
        return self._may_sample(itr)

    def _may_sample(self, itr: int) -> bool:
        return bool(self.starving.value) or self.throttle.may_sample(itr, self.updates.value)

    # ---- copier side -------------------------------------------------------------------
    def batch_appended(self) -> None:
        self.appended.value += 1  # Only the copier writes it.
        if self.optimizer_waiting.value:
            self.optimizer_wakeup.release()

    # ---- optimizer side ----------------------------------------------------------------
    def publish_updates(self, updates: int, starving: bool) -> None:
        self.updates.value = int(updates)  # Only the optimizer writes these two.
        self.starving.value = int(starving)
        if self.sampler_waiting.value:
            self.sampler_wakeup.release()

    def wait_appended_above(self, appended: int, timeout: float = POLL_S) -> None:
        """Wait (at most ``timeout``) for the replay to hold more than ``appended`` batches."""
        self.optimizer_waiting.value = 1
        if self.appended.value <= appended:
            self.optimizer_wakeup.acquire(timeout=timeout)
        self.optimizer_waiting.value = 0
        _drain(self.optimizer_wakeup)

    def request_stop(self) -> None:
        self.stop.value = 1
        for sem in [*self.slot_free, *self.slot_filled, self.sampler_wakeup,
                    self.optimizer_wakeup]:
            sem.release()

    def close(self) -> None:
        for q in (self.messages, self.errors):
            q.cancel_join_thread()
            q.close()


def _drain(sem) -> None:
    """Take back wake-ups that arrived after the wait ended."""
    while sem.acquire(False):
        pass
