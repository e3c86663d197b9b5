"""``AsyncRaySampler``: Ray actors feeding an asynchronous run (``AsyncRl``, ``AsyncRlEval``)."""

from __future__ import annotations

import multiprocessing as mp
import sys

from rlpyt.samplers.async_.base import AsyncSamplerBase, SamplerLoop
from rlpyt.samplers.async_.control_block import AsyncControl
from rlpyt.samplers.ray_.stream import RayStreamSampler

__all__ = ["AsyncRaySampler"]


class AsyncRaySampler(AsyncSamplerBase):
    """Ray actors step the envs of an asynchronous run; the sampler process only
    assembles their slices into the double buffer.

    The sampler process of ``AsyncRl`` runs a ``RayStreamSampler`` (a ``RaySampler``):
    ``n_actors`` actors, each owning a fixed contiguous slice of the ``batch_B`` env
    columns for the whole run (so n-step returns and recurrent sequences, which run along
    a column, stay continuous).  The actors run free: once an actor has returned its
    slice of batch ``itr`` and the replay-ratio throttle allows batch ``itr + 1``, it is
    sent its next slice at once, with the newest parameters, while the sampler process
    waits for the other slices, copies the batch into the double buffer and waits for
    a free slot.  Batches go into the learner's replay (DQN, R2D1/R2D2, DDPG/TD3/SAC) or
    batch queue (``Impala``) in order, whole.

    * **Throttle and policy lag** work as with the local async samplers: a slice of
      batch ``itr`` starts only when the throttle allows ``itr``; each slice carries the
      parameter version it acted with, and the batch is tagged with its oldest, which
      feeds ``PolicyLagAverage`` / ``PolicyLagMax``.
    * **Parameters** go into Ray's object store once per new parameter version (one
      ``ray.put`` for all actors); an actor loads them when its next call carries a new
      version.  Batches come back as numpy arrays.
    * **Evaluation** (``AsyncRlEval``) runs on the actors' eval envs, between batches,
      as ``RaySampler.evaluate_agent`` does.
    * **Lost actors**: Ray restarts a dead actor, it is set up again with seeds derived
      from the run seed, and it collects its slice of the current batch anew; the other
      actors' slices of that batch are kept.  Meanwhile the learner goes on training from
      what is in its replay, as far as the replay ratio allows (up to ``max_ahead``
      batches), and the batch waits for the replacement's slice up to
      ``restart_timeout``.  A batch never holds part of a dead actor's slice (a Ray
      call's result arrives whole or not at all).  ``ActorRestarts`` (cumulative, kept
      across a resume by the runner's checkpoint) counts restarts.
    * **Bugs stop the run**: an env that raises (its traceback) or hangs past
      ``step_timeout`` (the actor's stack) stops the run with ``AsyncRunError``.

    Keywords as ``RaySampler`` (defaults ``CollectorCls=CpuResetCollector``,
    ``eval_CollectorCls=CpuEvalCollector``), with ``AsyncSamplerBase``'s ``batch_timeout``:
        n_actors: actors (at most ``batch_B``). Default 2.
        actor_resources: Ray resources per actor (``num_cpus``, ``num_gpus``, custom).
            Default None: ``{"num_cpus": 1}``.
        ray_address: the Ray the *sampler process* connects to: None (``ray.init()``: a
            cluster named by ``RAY_ADDRESS`` or started by ``ray start``, else a private
            local Ray, stopped with the sampler process), ``"auto"`` or ``"HOST:PORT"``.
            The process that calls ``train`` must not be connected to Ray itself (it
            forks the sampler process; ``async_initialize`` says so). Default None.
        max_actor_restarts: restarts Ray may make of each actor before the run stops.
            Default 3.
        restart_timeout: seconds to wait for an actor to be placed and set up (start and
            replacement). Default 120.
        step_timeout: seconds one env call may take before the env counts as hung.
            Default 60; None: no limit.
        actor_torch_threads: torch threads per actor. Default 1.
        batch_timeout: seconds the sampler process may go without progress before the
            run stops with its stack.  The sampler process counts waiting on actors as
            progress (hung envs are caught by ``step_timeout``, missing replacements by
            ``restart_timeout``), so this catches a sampler process that is itself
            stuck. Default 120; None: no limit.

    Results depend on timing (which parameters act on which slice), as with every
    async sampler; the envs and actors are seeded from the run seed as in ``RaySampler``.
    """

    SamplerCls = RayStreamSampler

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._restarts = None  # Shared counter written by the sampler process.
        self._restarts_before = 0  # ActorRestarts of the run before a resume.

    def async_initialize(self, agent, bootstrap_value: bool = False, seed: int | None = None
                         ) -> dict:
        """As ``AsyncSamplerBase.async_initialize``; refuses a process connected to Ray."""
        ray = sys.modules.get("ray")
        if ray is not None and ray.is_initialized():
            raise RuntimeError(
                "AsyncRaySampler: this process is connected to Ray (ray.init was called). "
                "The runner forks its sampler process, which connects to Ray itself "
                "(ray_address), and a fork of a Ray driver can neither use nor safely "
                "inherit that connection: call ray.shutdown() before train(), or train in "
                "a process that has not called ray.init")
        self._restarts = mp.get_context("fork").RawValue("q", 0)
        return super().async_initialize(agent, bootstrap_value=bootstrap_value, seed=seed)

    def make_loop(self, inner, agent, control: AsyncControl) -> SamplerLoop:
        return _StreamLoop(inner, self.double_buffer_np, agent, control, self._restarts)

    def diagnostics(self) -> dict:
        """``ActorRestarts``: restarts of the run so far (before a resume included)."""
        now = self._restarts.value if self._restarts is not None else 0
        return dict(ActorRestarts=self._restarts_before + now)

    def load_diagnostics(self, state: dict) -> None:
        """Continue ``diagnostics``' counts from a checkpoint's."""
        self._restarts_before = int(state.get("ActorRestarts", 0))


class _StreamLoop(SamplerLoop):
    """The sampler process's loop with ``RayStreamSampler``: an actor done with its
    slice starts the next one once the throttle allows the next batch."""

    def __init__(self, inner: RayStreamSampler, double_buffer_np, agent, control, restarts):
        super().__init__(inner, double_buffer_np, agent, control)
        self.restarts = restarts
        self.n_itr = 0
        inner.group.on_wait = self._tick

    def run(self, start_itr, n_itr, eval_itrs) -> None:
        self.n_itr = n_itr
        super().run(start_itr, n_itr, eval_itrs)

    def _tick(self) -> None:
        """While waiting on actors: alive, restarts counted, and stopping when told."""
        self.control.beat()
        self.restarts.value = self.inner.group.n_restarts
        self.control.check_running()

    def _may_prefetch(self, itr: int) -> bool:
        return itr + 1 < self.n_itr and self.control.may_sample(itr + 1)

    def collect(self, itr: int):
        inner, control = self.inner, self.control
        control.sampler_version.value = inner.start_batch(itr)
        traj_infos = inner.finish_batch(itr, lambda: self._may_prefetch(itr),
                                        self.agent.recv_shared_memory)
        self._tick()
        return inner.samples_np, traj_infos
