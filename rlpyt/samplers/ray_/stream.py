"""``RayStreamSampler``: a ``RaySampler`` whose actors run one slice ahead of the batch
being assembled (the wrapped sampler of ``AsyncRaySampler``).

Every actor owns its env columns for the whole run (a column's time steps must stay
continuous for n-step returns and recurrent sequences), and has at most one
``sample`` call in flight.  A batch is collected in two steps:

* ``start_batch(itr)`` sends batch ``itr``'s call to each actor that does not already
  have it, with the newest published parameters, and returns the oldest parameter
  version the batch acts with (the batch's tag for the policy-lag columns);
* ``finish_batch(itr, may_prefetch, refresh)`` waits for the slices and copies each
  into the sampler's ``[T, B]`` buffer as it arrives.  Once ``may_prefetch()`` allows
  batch ``itr + 1`` (the async throttle's credit), an actor whose slice of ``itr`` has
  arrived is sent its call for ``itr + 1`` at once, with the parameters ``refresh()``
  just loaded: the actor steps on while the rest of the batch arrives and while the
  sampler process hands the batch over.

Parameters are put into Ray's object store once per new parameter version
(``agent.param_version``, the optimizer's publish count), not once per call or actor.

Faults: a slice arrives whole or not at all (Ray returns a call's result only when the
call finished), so a batch never holds part of a dead actor's slice.  An actor lost
while its call ran is replaced (``ActorGroup.replace``: Ray restarts it, it is set up
again with fresh seeds) and the same batch's call is sent to the replacement; the
slices other actors delivered are kept.  An env that raises or hangs stops the run
(``ActorError``), as in ``RaySampler``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from rlpyt.samplers.ray_.group import ActorError
from rlpyt.samplers.ray_.sampler import RaySampler, _copy_leaves

__all__ = ["RayStreamSampler"]

POLL_S = 0.1  # How soon sampling credit that arrives during a batch starts an actor.


@dataclass
class _Call:
    """One actor's ``sample`` call in flight."""

    itr: int
    ref: object
    version: int
    restarts: int  # The actor's restart count when the call was sent.


class RayStreamSampler(RaySampler):
    """``RaySampler`` with one slice per actor in flight ahead of the batch (see the
    module docstring); keywords as ``RaySampler``.  ``obtain_samples`` still collects
    one batch at a time (nothing sent ahead), for use outside an asynchronous run."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._calls: dict[int, _Call] = {}

    # ---- parameters ------------------------------------------------------------------------
    def _publish_parameters(self) -> None:
        """Put the model's state into the object store once per parameter version.  With a
        parameter board (asynchronous runs) the version is the board's, so a batch is
        tagged with the optimizer's publish count; without one, every call publishes."""
        if getattr(self.agent, "param_board", None) is None:
            return super()._publish_parameters()
        version = self.agent.param_version
        if self._params is not None and version == self._version:
            return
        super()._publish_parameters()  # Puts the state (and counts; renumbered next).
        self._version = version

    # ---- streaming -------------------------------------------------------------------------
    def start_batch(self, itr: int) -> int:
        """Send batch ``itr``'s call to every actor that has none in flight; returns the
        oldest parameter version batch ``itr`` is collected with."""
        self._check_running()
        try:
            for i in range(self.n_actors):
                call = self._calls.get(i)
                if call is None:
                    self._send(i, itr)
                elif call.itr != itr:
                    raise RuntimeError(f"RayStreamSampler: actor {i} runs batch {call.itr} "
                                       f"while batch {itr} starts (batches go in order)")
        except BaseException:
            self.shutdown()
            raise
        return min(call.version for call in self._calls.values())

    def finish_batch(self, itr: int, may_prefetch: Callable[[], bool] = lambda: False,
                     refresh: Callable[[], object] = lambda: None) -> list:
        """Wait for every slice of batch ``itr`` (copied into ``samples_np`` as each
        arrives); returns the completed traj infos in the serial order.  An actor done
        with ``itr`` is sent ``itr + 1`` as soon as ``may_prefetch()`` is true, with the
        parameters ``refresh()`` loads into the agent."""
        self._check_running()
        try:
            keyed = self._gather(itr, may_prefetch, refresh)
        except BaseException:
            self.shutdown()
            raise
        keyed.sort(key=lambda k: k[0])  # The serial order: time step, then env rank.
        return [info for _, info in keyed]

    def obtain_samples(self, itr):
        """One batch, nothing sent ahead; returns ``(samples, completed_traj_infos)``."""
        self.start_batch(itr)
        return self.samples_pyt, self.finish_batch(itr)

    def _gather(self, itr: int, may_prefetch, refresh) -> list:
        group, keyed, arrived = self.group, [], set()
        step_timeout = self.step_timeout
        next_probe = None if step_timeout is None else time.monotonic() + step_timeout
        while len(arrived) < self.n_actors:
            waiting = {i: c.ref for i, c in self._calls.items() if c.itr == itr}
            results, lost = group.poll(waiting, POLL_S)
            for i, (version, leaves, completed) in results.items():
                call = self._calls.pop(i)
                if version != call.version:
                    raise ActorError(f"{group.specs[i].describe()} acted with parameter "
                                     f"version {version}, not {call.version}")
                _copy_leaves(leaves, self._targets[i], i)
                keyed.extend(completed)
                arrived.add(i)
            for i, (cause, _) in lost.items():
                self._resend(i, cause)
            idle = [i for i in arrived if i not in self._calls]
            if idle and may_prefetch():
                refresh()
                for i in idle:
                    self._send(i, itr + 1)
            if group.on_wait is not None:
                group.on_wait()
            if next_probe is not None and time.monotonic() > next_probe:
                group.check_hung([i for i, c in self._calls.items() if c.itr == itr])
                next_probe = time.monotonic() + max(1.0, step_timeout / 4)
        return keyed

    def _send(self, i: int, itr: int) -> None:
        self._publish_parameters()
        spec = self.group.specs[i]
        ref = spec.handle.sample.remote(itr, self._params, self._version)
        self._calls[i] = _Call(itr=itr, ref=ref, version=self._version, restarts=spec.restarts)

    def _resend(self, i: int, cause: str) -> None:
        """Actor ``i``'s call was lost with its process: replace the actor (unless an
        evaluation did since the call was sent) and send the call to the replacement."""
        call = self._calls.pop(i)
        if self.group.specs[i].restarts == call.restarts:
            self.group.replace(i, cause)
        self._send(i, call.itr)

    def shutdown(self):
        self._calls = {}
        super().shutdown()
