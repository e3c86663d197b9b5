"""``RaySampler``: the envs of a synchronous run stepped by Ray actors, on one machine or many."""

from __future__ import annotations

import functools

from rlpyt.envs.traj_info import TrajInfo
from rlpyt.samplers.acting_beside_envs import (
    CpuResetCollector,
    CpuVecResetCollector,
    CpuWaitResetCollector,
    collector_for_env,
)
from rlpyt.samplers.base import BaseSampler
from rlpyt.samplers.env_group import make_example_env
from rlpyt.samplers.eval import EvalSchedule, finish_evaluation, hard_step_limit
from rlpyt.samplers.parallel.cpu.collectors import CpuEvalCollector
from rlpyt.samplers.ray_.actor import batch_leaves
from rlpyt.samplers.ray_.eval_events import EvalEvents
from rlpyt.samplers.ray_.group import (
    ActorError,
    ActorGroup,
    ActorSpec,
    Restarted,
    default_local_cpus,
)
from rlpyt.samplers.samples_buffer import build_samples_buffer
from rlpyt.samplers.workers import (
    DEFAULT_STEP_TIMEOUT_S,
    check_step_timeout,
    slice_samples,
    split_evenly,
    worker_seed,
)
from rlpyt.utils.seed import env_seeds, make_seed

__all__ = ["ActorError", "RaySampler"]

DEFAULT_RESTART_TIMEOUT_S = 120.0
MAX_EVAL_RESTARTS = 3  # Evaluations started over after actor losses, before giving up.


class RaySampler(BaseSampler):
    """Ray actors each step a slice of the ``batch_B`` envs with their own CPU copy of
    the agent; their slices are assembled into the usual ``[T, B]`` samples.

    For ``MinibatchRl``, ``MinibatchRlEval`` and ``SyncRl`` (each rank has its own
    actors; start a cluster first and pass ``ray_address="auto"``, see
    docs/distributed.md).

    Keywords as ``BaseSampler`` (defaults ``CollectorCls=CpuResetCollector``,
    ``eval_CollectorCls=CpuEvalCollector``), plus:
        n_actors: Ray actors (at most ``batch_B``); actor ``w`` steps the ``w``-th of
            ``n_actors`` contiguous slices of the envs (the first ``batch_B % n_actors``
            slices one env longer), and the ``w``-th slice of the eval envs. Default 2.
        actor_resources: Ray resources each actor asks for: ``num_cpus`` (default 1),
            ``num_gpus`` (default 0; the actor's agent still acts on CPU) and custom
            resources by name. Default None: ``{"num_cpus": 1}``.
        ray_address: where Ray runs. None: Ray's default (``ray.init()``: a running
            cluster named by ``RAY_ADDRESS`` or started on this machine by ``ray
            start``, else a private local Ray with enough logical CPUs for every actor,
            stopped when the sampler shuts down); ``"auto"`` or ``"HOST:PORT"``: join
            that cluster.  Ignored when Ray is already initialised in this process (that
            connection is used and left open).  Default None.
        max_actor_restarts: how often Ray may restart each actor that died (process
            killed, node lost) before the run stops. Default 3.
        restart_timeout: seconds to wait for an actor to be placed and set up, at start
            and after a restart; past it the run stops with ``ActorError`` naming the
            actor and its node. Default 120.
        step_timeout: seconds one env call (``step``, ``reset``, building an env) may
            take before the env counts as hung: the run stops with ``ActorError``
            showing the actor's stack. Default 60; None waits forever.
        actor_torch_threads: torch threads of each actor. Default 1.

    Reproducibility: env ``i`` (global rank) gets ``env_seeds(seed, N)[i]`` as in every
    sampler, actor ``w`` seeds its own RNGs as ``CpuSampler``'s worker ``w`` does, and
    results are merged in a fixed order (trajectories by time step and env rank), so a
    run with the same seed and ``n_actors`` gives the same numbers, and the same
    batches as ``CpuSampler`` with ``n_actors`` workers.  With a stochastic policy the
    batches differ from ``SerialSampler``'s (each actor draws actions from its own RNG
    stream, as ``CpuSampler``'s workers do); with a deterministic policy they match.

    Parameters: before every batch and evaluation the training model's state is put
    into Ray's object store once (as numpy arrays) and each actor loads it when its
    version is new.  Batches come back as numpy arrays.

    Faults (see ``rlpyt.samplers.ray_.group``): a dead actor is restarted by Ray,
    re-seeded, and its batch collected again by the replacement (``ActorRestarts`` in
    the log counts this); an env that raises or hangs stops the run with
    ``ActorError``.  ``shutdown()`` kills every actor, and stops a Ray it started.
    """

    def __init__(self, EnvCls, env_kwargs, batch_T, batch_B, CollectorCls=CpuResetCollector,
                 max_decorrelation_steps=100, TrajInfoCls=TrajInfo, eval_n_envs=0,
                 eval_CollectorCls=CpuEvalCollector, eval_env_kwargs=None, eval_max_steps=None,
                 eval_max_trajectories=None, n_actors=2, actor_resources=None,
                 ray_address=None, max_actor_restarts=3,
                 restart_timeout=DEFAULT_RESTART_TIMEOUT_S,
                 step_timeout=DEFAULT_STEP_TIMEOUT_S, actor_torch_threads=1):
        super().__init__(
            EnvCls, env_kwargs, batch_T, batch_B, CollectorCls,
            max_decorrelation_steps=max_decorrelation_steps, TrajInfoCls=TrajInfoCls,
            eval_n_envs=eval_n_envs, eval_CollectorCls=eval_CollectorCls,
            eval_env_kwargs=eval_env_kwargs, eval_max_steps=eval_max_steps,
            eval_max_trajectories=eval_max_trajectories,
        )
        self.n_actors = _check_count("n_actors", n_actors)
        if self.n_actors > batch_B:
            raise ValueError(f"n_actors={n_actors} exceeds batch_B={batch_B}: every actor "
                             f"steps at least one env")
        self.actor_resources = _check_resources(actor_resources)
        if ray_address is not None and not isinstance(ray_address, str):
            raise TypeError(f"ray_address={ray_address!r} must be None, 'auto' or "
                            f"'HOST:PORT'")
        self.ray_address = ray_address
        self.max_actor_restarts = _check_count("max_actor_restarts", max_actor_restarts,
                                               allow_zero=True)
        self.restart_timeout = check_step_timeout(restart_timeout)
        if self.restart_timeout is None:
            raise ValueError("restart_timeout=None is invalid: expected a positive number "
                             "of seconds")
        self.step_timeout = check_step_timeout(step_timeout)
        self.actor_torch_threads = _check_count("actor_torch_threads", actor_torch_threads)
        self._check_collectors()
        self.group = None
        self._closed = False
        self._version = -1
        self._params = None
        self._restarts_before = 0  # ActorRestarts of the run before a resume.

    def _check_collectors(self) -> None:
        if not issubclass(self.CollectorCls, (CpuResetCollector, CpuWaitResetCollector,
                                              CpuVecResetCollector)):
            raise TypeError(f"RaySampler: CollectorCls={self.CollectorCls.__name__} is not "
                            f"one of the collectors whose agent acts with the envs; use "
                            f"CpuResetCollector or CpuWaitResetCollector")
        if not issubclass(self.eval_CollectorCls, CpuEvalCollector):
            raise TypeError(f"RaySampler: eval_CollectorCls={self.eval_CollectorCls.__name__}"
                            f" must be CpuEvalCollector or a subclass")
        self.CollectorCls = collector_for_env(self.EnvCls, self.CollectorCls, "RaySampler")

    # ---- set-up ----------------------------------------------------------------------------
    def initialize(self, agent, affinity=None, seed=None, bootstrap_value=False,
                   traj_info_kwargs=None, rank=0, world_size=1):
        """Build the example step here, start the actors and wait until every env is
        reset and decorrelated; returns the ``examples`` dict.  ``affinity`` is not
        used (Ray places the actors)."""
        if self.group is not None:
            raise RuntimeError("RaySampler.initialize was already called")
        try:
            return self._initialize(agent, seed, bootstrap_value, traj_info_kwargs, rank,
                                    world_size)
        except BaseException:
            self.shutdown()
            raise

    def _initialize(self, agent, seed, bootstrap_value, traj_info_kwargs, rank, world_size):
        B, n = self.batch_spec.B, self.n_actors
        global_B = B * world_size
        seed = make_seed() if seed is None else int(seed)
        # Same seed layout as every sampler: training envs, the example env, eval envs.
        all_seeds = env_seeds(seed, global_B + 1 + self.eval_n_envs * world_size)
        example_env = make_example_env(self.EnvCls, self.env_kwargs)
        try:
            example_env.seed(all_seeds[global_B])
            agent.initialize(example_env.spaces, share_memory=False, global_B=global_B,
                             env_ranks=list(range(rank * B, (rank + 1) * B)))
            self.samples_pyt, self.samples_np, examples = build_samples_buffer(
                agent, example_env, self.batch_spec, bootstrap_value,
                agent_shared=False, env_shared=False)
            horizon = getattr(example_env, "horizon", None)
        finally:
            example_env.close()
        self.agent = agent
        specs = self._make_specs(seed, all_seeds, rank, global_B)
        self._targets = [batch_leaves(slice_samples(self.samples_np, *s.env_slice))
                         for s in specs]
        self.eval_schedule = None
        if self.eval_n_envs > 0:
            limit = hard_step_limit(self.eval_max_steps, self.eval_max_trajectories, horizon)
            self.eval_schedule = EvalSchedule(self.eval_n_envs, self.eval_max_steps,
                                              self.eval_max_trajectories, limit)
        common = dict(
            EnvCls=self.EnvCls, env_kwargs=self.env_kwargs, eval_env_kwargs=self.eval_env_kwargs,
            batch_T=self.batch_spec.T, global_B=global_B, CollectorCls=self.CollectorCls,
            eval_CollectorCls=self.eval_CollectorCls,
            TrajInfoCls=functools.partial(self.TrajInfoCls, **(traj_info_kwargs or {})),
            max_decorrelation_steps=self.max_decorrelation_steps, eval_n_envs=self.eval_n_envs,
            eval_max_steps=self.eval_max_steps, eval_max_trajectories=self.eval_max_trajectories,
            eval_hard_limit=self.eval_schedule.hard_limit if self.eval_schedule else 0,
            examples=examples, bootstrap_value=bootstrap_value, agent=agent,
            torch_threads=self.actor_torch_threads,
        )
        self.eval_actors = [s.index for s in specs if s.eval_env_ranks]
        cpus = self.actor_resources.get("num_cpus", 1)
        self.group = ActorGroup(specs, common, self.actor_resources, self.max_actor_restarts,
                                self.restart_timeout, self.step_timeout, self.ray_address,
                                default_local_cpus(n, cpus))
        self.group.start()
        return examples

    def _make_specs(self, seed, all_seeds, rank, global_B) -> list[ActorSpec]:
        B, n = self.batch_spec.B, self.n_actors
        eval_offset = global_B + 1 + rank * self.eval_n_envs
        specs = []
        for w, ((lo, hi), (elo, ehi)) in enumerate(
                zip(split_evenly(B, n), split_evenly(self.eval_n_envs, n))):
            env_ranks = list(range(rank * B + lo, rank * B + hi))
            specs.append(ActorSpec(
                index=w, env_ranks=env_ranks, env_slice=(lo, hi),
                env_seeds=[all_seeds[r] for r in env_ranks],
                eval_env_ranks=list(range(elo, ehi)), eval_slice=(elo, ehi),
                eval_env_seeds=[all_seeds[eval_offset + i] for i in range(elo, ehi)],
                seed=worker_seed(seed, rank * n + w),  # As CpuSampler's worker w.
            ))
        return specs

    # ---- parameters ------------------------------------------------------------------------
    def _publish_parameters(self) -> None:
        """Put the training model's state into Ray's object store, once for all actors."""
        from rlpyt.models.utils import strip_ddp_state_dict, unwrap_parallel

        state = strip_ddp_state_dict(unwrap_parallel(self.agent.model).state_dict())
        params = {k: v.detach().cpu().numpy() for k, v in state.items()}
        self._params = [self.group.ray.put(params)]
        self._version += 1

    # ---- running ---------------------------------------------------------------------------
    def obtain_samples(self, itr):
        """Collect one batch on the actors; returns ``(samples, completed_traj_infos)``."""
        self._check_running()
        try:
            self._publish_parameters()
            results = self.group.call(
                "sample", lambda i: (itr, self._params, self._version), range(self.n_actors))
            keyed = []
            for i, (version, leaves, completed) in sorted(results.items()):
                if version != self._version:
                    raise ActorError(f"{self.group.specs[i].describe()} acted with parameter "
                                     f"version {version}, not {self._version}")
                _copy_leaves(leaves, self._targets[i], i)
                keyed.extend(completed)
        except BaseException:
            self.shutdown()
            raise
        keyed.sort(key=lambda k: k[0])  # The serial order: time step, then env rank.
        return self.samples_pyt, [info for _, info in keyed]

    def evaluate_agent(self, itr):
        """One evaluation on the actors, with the serial counting rule; returns the
        completed traj infos in the serial order."""
        if self.eval_n_envs == 0:
            raise RuntimeError("evaluate_agent called on a sampler built with eval_n_envs=0")
        self._check_running()
        try:
            self._publish_parameters()
            for attempt in range(MAX_EVAL_RESTARTS + 1):
                try:
                    results = self._evaluate(itr)
                    break
                except Restarted:  # An actor was replaced: its eval envs are new.
                    if attempt == MAX_EVAL_RESTARTS:
                        raise ActorError(f"evaluation started over {MAX_EVAL_RESTARTS} times "
                                         f"after actor restarts; the run stops") from None
        except BaseException:
            self.shutdown()
            raise
        return finish_evaluation(self.eval_schedule, results)

    def _evaluate(self, itr) -> list:
        """The lockstep evaluation's outcome with about one Ray call per trajectory end:
        each actor steps until one of its trajectories ends, and ``EvalEvents``
        applies the serial counting rule at those rounds, in round order."""
        schedule, group = self.eval_schedule, self.group
        schedule.reset()
        group.call("eval_start", lambda i: (itr, self._params, self._version,
                                            schedule.active.copy()), self.eval_actors,
                   retry=False)
        events = EvalEvents(schedule, {i: group.specs[i].eval_slice for i in self.eval_actors})
        while not schedule.done:
            runnable = events.runnable()
            if runnable:
                go = (schedule.active.copy(), events.until())
                results = group.call("eval_run", lambda i, go=go: go, runnable, retry=False)
                for i, (round_, ended) in results.items():
                    events.report(i, round_, ended)
            events.advance()
        return list(group.call("eval_finish", lambda i: (), self.eval_actors,
                               retry=False).values())

    def diagnostics(self) -> dict:
        """Columns for the runner's log: ``ActorRestarts`` (cumulative, a resumed run's
        included: the runner's checkpoint keeps them, see ``load_diagnostics``)."""
        now = self.group.n_restarts if self.group is not None else 0
        return dict(ActorRestarts=self._restarts_before + now)

    def load_diagnostics(self, state: dict) -> None:
        """Continue ``diagnostics``' counts from a checkpoint's."""
        self._restarts_before = int(state.get("ActorRestarts", 0))

    def _check_running(self) -> None:
        if self._closed:
            raise RuntimeError("RaySampler was shut down")
        if self.group is None:
            raise RuntimeError("RaySampler.initialize has not been called")

    # ---- shutdown --------------------------------------------------------------------------
    def shutdown(self):
        """Kill every actor; stop Ray if this sampler started it (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._params = None
        if self.group is not None:
            self.group.shutdown()

    def __del__(self):
        try:
            self.shutdown()
        except Exception:  # noqa: BLE001 - never raise from a finalizer
            pass

    def __getstate__(self):
        """Picklable before ``initialize`` (``SyncRl`` ships the sampler to its ranks)."""
        if self.group is not None:
            raise RuntimeError("an initialized RaySampler cannot be pickled")
        return self.__dict__.copy()


def _copy_leaves(leaves, targets, i: int) -> None:
    if len(leaves) != len(targets):
        raise ActorError(f"Ray sampler actor {i} returned {len(leaves)} sample fields, "
                         f"expected {len(targets)}")
    for src, dst in zip(leaves, targets):
        dst[...] = src


def _check_count(name: str, value, allow_zero: bool = False) -> int:
    ok = isinstance(value, int) and not isinstance(value, bool) and (
        value >= 0 if allow_zero else value > 0)
    if not ok:
        valid = "a non-negative integer" if allow_zero else "a positive integer"
        raise ValueError(f"{name}={value!r} is invalid: expected {valid}")
    return value


def _check_resources(resources) -> dict:
    if resources is None:
        return {"num_cpus": 1}
    if not isinstance(resources, dict):
        raise TypeError(f"actor_resources={resources!r} must be a dict such as "
                        f"{{'num_cpus': 1, 'num_gpus': 0}}")
    for key, value in resources.items():
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0
        if not isinstance(key, str) or not ok:
            raise ValueError(f"actor_resources={resources!r}: {key!r}={value!r} is invalid; "
                             f"expected resource names with non-negative amounts")
    return {"num_cpus": 1, **resources}
