"""Parallel sampler base: shared buffers, worker processes, fault handling, clean shutdown.

The main process builds everything workers share (the ``[T, B]`` sample buffer in
anonymous shared memory, control primitives, evaluation counters), computes the
example step in-process (never in a subprocess: a probe through a multiprocessing
manager can hang), then starts one process per worker.  Workers
write straight into their slice of the buffer.

Faults: a worker that raises sends its traceback and exits; one that dies (killed
by a signal) is noticed by its exit code.  Either way the master raises
``WorkerError`` naming the worker and its env ranks within about a second, after
stopping every other worker.  ``shutdown()`` is idempotent and also runs from
``__del__``, at interpreter exit, and on any exception (including Ctrl-C) inside
the sampler.  Workers ignore SIGINT (the master decides), die with their parent
(Linux ``PR_SET_PDEATHSIG`` plus a parent check in every wait), and any process a
worker started itself is killed with it.
"""

from __future__ import annotations

import atexit
import functools
import multiprocessing as mp
import multiprocessing.util  # noqa: F401  (its exit hook must be registered before ours)
import os
import sys
import warnings
import weakref

from rlpyt.envs.traj_info import TrajInfo
from rlpyt.samplers.base import BaseSampler
from rlpyt.samplers.env_group import make_example_env
from rlpyt.samplers.eval import EvalSchedule, finish_evaluation, hard_step_limit
from rlpyt.samplers.parallel.worker import sampling_process
from rlpyt.samplers.parallel.worker_channel import (
    Command,
    SamplerControl,
    WorkerMonitor,
    WorkerSpec,
    unlink_semaphore_names,
)
from rlpyt.samplers.samples_buffer import build_samples_buffer
from rlpyt.samplers.workers import (
    DEFAULT_STEP_TIMEOUT_S,
    check_step_timeout,
    split_evenly,
    worker_seed,
)
from rlpyt.utils.process import available_cpus
from rlpyt.utils.seed import env_seeds, make_seed
from rlpyt.utils.supervisor import (
    SAMPLER_WORKERS,
    ParentGuard,
    guarded_target,
    stack_pipe,
    start_process,
    stop_processes,
)

__all__ = ["ParallelSamplerBase", "split_evenly"]  # (split_evenly: rlpyt.samplers.workers)

START_METHODS = ("fork", "forkserver", "spawn")
_LIVE_SAMPLERS: weakref.WeakSet = weakref.WeakSet()


def _shutdown_live_samplers() -> None:
    for sampler in list(_LIVE_SAMPLERS):
        sampler.shutdown()


# Registered after multiprocessing's own exit hook, so it runs first (atexit is LIFO):
# workers are stopped before multiprocessing joins its non-daemonic children.
atexit.register(_shutdown_live_samplers)


def default_start_method() -> str:
    """``fork`` on Linux (fast start, no pickling); ``spawn`` elsewhere (fork is unsafe
    there).  A process that runs a Ray driver gets ``forkserver``: the driver's gRPC
    threads are not fork-safe, and a forked worker can die in ``malloc``."""
    if not sys.platform.startswith("linux"):
        return "spawn"
    return "forkserver" if _ray_driver_running() else "fork"


def _ray_driver_running() -> bool:
    ray = sys.modules.get("ray")  # Only looked up: importing Ray here would cost seconds.
    return ray is not None and bool(getattr(ray, "is_initialized", lambda: False)())


class ParallelSamplerBase(BaseSampler):
    """Steps envs in worker processes that write into one shared ``[T, B]`` buffer.

    Keywords as ``BaseSampler``, plus:
        start_method: ``"fork"`` (default on Linux, but ``"forkserver"`` in a process
            that runs a Ray driver), ``"forkserver"`` or ``"spawn"`` (default
            elsewhere).  Under ``forkserver``/``spawn`` the env class, the
            collector classes and the agent must be importable by the workers.
        step_timeout: seconds one env call in a worker (``step``, ``reset``, or
            building the worker's envs) may take before the env counts as hung: the
            sampler then stops every worker and raises ``WorkerError`` naming the
            worker, its env ranks, the timeout and the worker's Python stack.
            Default 60 (far above an Atari reset with no-op starts or a MuJoCo model
            compile); ``None`` waits forever.

    ``initialize(agent, affinity, ...)`` reads from ``affinity`` (a dict):
        workers_cpus: one entry per worker, a CPU id or a list of ids to pin it to
            (ids from ``rlpyt.utils.process.available_cpus()``).  Default: one
            unpinned worker per available CPU (at most ``batch_B``).
        n_workers: number of unpinned workers, when ``workers_cpus`` is not given.
        worker_torch_threads: torch threads per worker, set before any torch op
            (default 1: forked workers may hang in a parallel region otherwise).
        set_affinity: False disables pinning. Default True.
        cuda_idx: GPU of the master's agent (the runner moves it). Default None.

    Env ``i`` (global rank) gets ``env_seeds(seed, N)[i]`` exactly as in
    ``SerialSampler``, so the same seed gives the same envs on any sampler.  Nothing
    depends on timing: results are merged in a fixed order (trajectories by time step
    and env rank), evaluation runs in lockstep with the master deciding which
    trajectories start (``rlpyt.samplers.parallel.worker_eval``), and workers' RNGs are seeded
    from the run seed and their index.

    Shutdown: ``shutdown()`` (also on any error, Ctrl-C, ``__del__`` and interpreter
    exit) stops every worker and anything it started.  If the main process itself is
    killed, under any start method, the workers, the fork server and the resource
    tracker end within seconds and nothing is left in /dev/shm (see
    ``rlpyt.samplers.parallel.worker``).
    """

    agent_in_workers = True  # CpuSampler: each worker holds the agent.

    def __init__(self, EnvCls, env_kwargs, batch_T, batch_B, CollectorCls,
                 max_decorrelation_steps=100, TrajInfoCls=TrajInfo, eval_n_envs=0,
                 eval_CollectorCls=None, eval_env_kwargs=None, eval_max_steps=None,
                 eval_max_trajectories=None, start_method=None,
                 step_timeout=DEFAULT_STEP_TIMEOUT_S):
        super().__init__(
            EnvCls, env_kwargs, batch_T, batch_B, CollectorCls,
            max_decorrelation_steps=max_decorrelation_steps, TrajInfoCls=TrajInfoCls,
            eval_n_envs=eval_n_envs, eval_CollectorCls=eval_CollectorCls,
            eval_env_kwargs=eval_env_kwargs, eval_max_steps=eval_max_steps,
            eval_max_trajectories=eval_max_trajectories,
        )
        start_method = default_start_method() if start_method is None else start_method
        if start_method not in START_METHODS or start_method not in mp.get_all_start_methods():
            valid = [m for m in START_METHODS if m in mp.get_all_start_methods()]
            raise ValueError(f"start_method={start_method!r} is invalid here; valid: {valid}")
        self.start_method = start_method
        self.step_timeout = check_step_timeout(step_timeout)
        self._check_collectors()
        self.processes, self.worker_specs = [], []
        self.control = self.monitor = self.eval_schedule = None
        self._closed = False

    # ---- hooks for subclasses -------------------------------------------------------------
    def _check_collectors(self) -> None:
        """Raise if the collector classes do not fit this sampler."""

    def _check_agent(self, agent) -> None:
        """Raise if the agent does not fit this sampler."""

    def _worker_env_slices(self, n_workers: int) -> list[tuple[int, int]]:
        return split_evenly(self.batch_spec.B, n_workers)

    def _build_master_buffers(self, examples: dict, bootstrap_value: bool) -> None:
        self.step_buffer_np = self.eval_step_buffer_np = None

    def _after_workers_started(self, agent) -> None:
        """Set-up that needs running workers (e.g. the master's agent state)."""

    # ---- set-up ------------------------------------------------------------------------
    def initialize(self, agent, affinity=None, seed=None, bootstrap_value=False,
                   traj_info_kwargs=None, rank=0, world_size=1):
        """Build buffers, start workers and wait until every env is reset and decorrelated.

        Returns the ``examples`` dict (one example of every sample field).
        """
        if self.processes:
            raise RuntimeError(f"{type(self).__name__}.initialize was already called")
        try:
            return self._initialize(agent, dict(affinity or {}), seed, bootstrap_value,
                                    traj_info_kwargs, rank, world_size)
        except BaseException:
            self.shutdown()
            raise

    def _initialize(self, agent, affinity, seed, bootstrap_value, traj_info_kwargs, rank,
                    world_size):
        global_B = self.batch_spec.B * world_size
        seed = make_seed() if seed is None else int(seed)
        # Same seed layout as SerialSampler: training envs, the example env, eval envs.
        all_seeds = env_seeds(seed, global_B + 1 + self.eval_n_envs * world_size)
        self.worker_specs = self._make_specs(self._worker_cpus(affinity), seed, all_seeds,
                                             rank, global_B)
        examples, horizon = self._build_buffers(agent, all_seeds[global_B], bootstrap_value,
                                                rank, global_B)
        ctx = mp.get_context(self.start_method)
        if self.start_method == "forkserver":
            # Import the heavy modules once in the fork server, not in every worker.
            ctx.set_forkserver_preload(["rlpyt.samplers.parallel.worker", "torch"])
        self._build_control(ctx, horizon)
        self._start_workers(ctx, dict(
            EnvCls=self.EnvCls, env_kwargs=self.env_kwargs, eval_env_kwargs=self.eval_env_kwargs,
            batch_T=self.batch_spec.T, global_B=global_B,
            CollectorCls=self.CollectorCls, eval_CollectorCls=self.eval_CollectorCls,
            TrajInfoCls=functools.partial(self.TrajInfoCls, **(traj_info_kwargs or {})),
            max_decorrelation_steps=self.max_decorrelation_steps,
            eval_max_steps=self.eval_max_steps, eval_max_trajectories=self.eval_max_trajectories,
            samples_np=self.samples_np, step_buffer_np=self.step_buffer_np,
            eval_step_buffer_np=self.eval_step_buffer_np,
            agent=agent if self.agent_in_workers else None,
            control=self.control, eval_schedule=self.eval_schedule,
            worker_torch_threads=affinity.get("worker_torch_threads", 1),
            set_affinity=affinity.get("set_affinity", True),
        ))
        self._after_workers_started(agent)
        return examples

    def _build_buffers(self, agent, example_seed, bootstrap_value, rank, global_B):
        """Initialize the agent and allocate the shared buffers from one example step
        taken here, in the main process.  Returns ``(examples, env horizon)``."""
        B = self.batch_spec.B
        example_env = make_example_env(self.EnvCls, self.env_kwargs)
        try:
            example_env.seed(example_seed)
            agent.initialize(example_env.spaces, share_memory=self.agent_in_workers,
                             global_B=global_B, env_ranks=list(range(rank * B, (rank + 1) * B)))
            self._check_agent(agent)
            self.samples_pyt, self.samples_np, examples = build_samples_buffer(
                agent, example_env, self.batch_spec, bootstrap_value,
                agent_shared=True, env_shared=True,
            )
            horizon = getattr(example_env, "horizon", None)
        finally:
            example_env.close()
        self.agent = agent
        self._build_master_buffers(examples, bootstrap_value)
        return examples, horizon

    def _build_control(self, ctx, horizon) -> None:
        self.control = SamplerControl(ctx, len(self.worker_specs))
        self.eval_schedule = None
        if self.eval_n_envs > 0:
            limit = hard_step_limit(self.eval_max_steps, self.eval_max_trajectories, horizon)
            self.eval_schedule = EvalSchedule(self.eval_n_envs, self.eval_max_steps,
                                              self.eval_max_trajectories, limit, ctx=ctx)
        self.eval_workers = [s.rank for s in self.worker_specs if s.eval_env_ranks]

    def _start_workers(self, ctx, common: dict) -> None:
        """Start one process per worker and wait until all have reset their envs."""
        _LIVE_SAMPLERS.add(self)
        # One pipe per worker for its Python stack, should an env hang.
        self._stack_pipes = [stack_pipe(ctx) for _ in self.worker_specs]
        for spec, (_, writer) in zip(self.worker_specs, self._stack_pipes):
            proc = ctx.Process(target=guarded_target,
                               args=(ParentGuard(os.getpid()), sampling_process, common, spec,
                                     writer),
                               name=f"rlpyt-{type(self).__name__}-worker-{spec.rank}")
            start_process(proc, self.processes)
        for _, writer in self._stack_pipes:
            writer.close()  # The worker holds its own copy.
        self.monitor = WorkerMonitor(self.control, self.processes, self.worker_specs,
                                     step_timeout=self.step_timeout,
                                     stack_readers=[reader for reader, _ in self._stack_pipes])
        self.monitor.gather("ready", range(len(self.processes)))
        unlink_semaphore_names(self.control.semaphores())  # Every worker has them open now.

    def _worker_cpus(self, affinity: dict) -> list[list[int]]:
        workers_cpus = affinity.get("workers_cpus")
        n_workers = affinity.get("n_workers")
        if workers_cpus is not None:
            cpus = [[int(c)] if isinstance(c, int) else [int(x) for x in c]
                    for c in workers_cpus]
            if n_workers is not None and n_workers != len(cpus):
                raise ValueError(f"affinity n_workers={n_workers} disagrees with "
                                 f"workers_cpus={workers_cpus} ({len(cpus)} workers)")
            missing = sorted({c for cs in cpus for c in cs} - set(available_cpus()))
            if missing and affinity.get("set_affinity", True):
                raise ValueError(f"affinity workers_cpus={workers_cpus} names CPUs {missing} "
                                 f"that are not available to this process; available CPUs: "
                                 f"{available_cpus()}")
        else:
            n = len(available_cpus()) if n_workers is None else n_workers
            if not isinstance(n, int) or n < 1:
                raise ValueError(f"affinity n_workers={n_workers!r} must be a positive integer")
            cpus = [[] for _ in range(n)]
        if not cpus:
            raise ValueError(f"affinity workers_cpus={workers_cpus!r} gives no workers")
        if len(cpus) > self.batch_spec.B:
            warnings.warn(f"{len(cpus)} workers for batch_B={self.batch_spec.B} envs: "
                          f"using {self.batch_spec.B} workers (one env each)", stacklevel=4)
            cpus = cpus[: self.batch_spec.B]
        return cpus

    def _make_specs(self, cpus, seed, all_seeds, rank, global_B) -> list[WorkerSpec]:
        B, n_workers = self.batch_spec.B, len(cpus)
        eval_offset = global_B + 1 + rank * self.eval_n_envs
        eval_slices = split_evenly(self.eval_n_envs, n_workers)
        specs = []
        for w, ((lo, hi), (elo, ehi)) in enumerate(
                zip(self._worker_env_slices(n_workers), eval_slices)):
            env_ranks = list(range(rank * B + lo, rank * B + hi))
            specs.append(WorkerSpec(
                rank=w, env_ranks=env_ranks, env_slice=(lo, hi),
                env_seeds=[all_seeds[r] for r in env_ranks],
                eval_env_ranks=list(range(elo, ehi)), eval_slice=(elo, ehi),
                eval_env_seeds=[all_seeds[eval_offset + i] for i in range(elo, ehi)],
                cpus=cpus[w], seed=worker_seed(seed, rank * n_workers + w),
            ))
        return specs

    # ---- running -------------------------------------------------------------------------
    def obtain_samples(self, itr):
        """Collect one batch; returns ``(samples, completed_traj_infos)``."""
        self._check_running()
        try:
            completed = self._obtain_samples(itr)
        except BaseException:
            self.shutdown()
            raise
        # The serial sampler's order (time step, then env rank); the sort is stable.
        keyed = sorted((k for infos in completed for k in infos), key=lambda k: k[0])
        return self.samples_pyt, [info for _, info in keyed]

    def evaluate_agent(self, itr):
        """Run one evaluation in the workers; returns the completed traj infos."""
        if self.eval_n_envs == 0:
            raise RuntimeError("evaluate_agent called on a sampler built with eval_n_envs=0")
        self._check_running()
        try:
            results = self._serve_evaluation(itr)
        except BaseException:
            self.shutdown()
            raise
        return finish_evaluation(self.eval_schedule, results)

    def _obtain_samples(self, itr) -> list:
        raise NotImplementedError

    def _serve_evaluation(self, itr) -> list:
        """The master's side of one lockstep evaluation (``rlpyt.samplers.parallel.worker_eval``):
        per round, release the eval workers to step, then apply the schedule's decisions.
        Workers that select their own actions start the next trajectories when released
        for the next round; otherwise the master releases them once more to do so (it
        needs the reset observations to select actions).  Returns each worker's result."""
        schedule, control, monitor = self.eval_schedule, self.control, self.monitor
        workers = self.eval_workers
        schedule.reset()
        control.eval_stop.value = 0
        self._eval_begin(itr)
        control.announce(Command.EVAL, itr, workers)
        monitor.await_ready(workers)  # Envs reset, first inputs written.
        while True:
            self._eval_reset_states()
            if schedule.done:
                break
            self._eval_select_actions()
            monitor.release_act(workers)
            monitor.await_ready(workers)  # Every active env stepped once.
            schedule.decide()
            if self.agent_in_workers:
                continue  # Workers start the next trajectories when next released.
            monitor.release_act(workers)
            monitor.await_ready(workers)  # The next trajectories started.
        control.eval_stop.value = 1
        monitor.release_act(workers)
        return monitor.gather("eval", workers)

    def _eval_begin(self, itr) -> None:
        """Before the workers are told to evaluate (e.g. sync the workers' parameters)."""

    def _eval_reset_states(self) -> None:
        """Clear the master agent's state of eval envs the workers reset (GPU samplers)."""

    def _eval_select_actions(self) -> None:
        """Write the eval envs' actions (GPU samplers; CPU workers choose their own)."""

    def _check_running(self) -> None:
        if self._closed:
            raise RuntimeError(f"{type(self).__name__} was shut down")
        if not self.processes:
            raise RuntimeError(f"{type(self).__name__}.initialize has not been called")

    # ---- shutdown ------------------------------------------------------------------------
    def shutdown(self):
        """Stop every worker (and anything it started); idempotent."""
        if self._closed:
            return
        self._closed = True
        _LIVE_SAMPLERS.discard(self)
        # A worker stuck in an env call will not see the request: SIGTERM at once (it
        # unwinds and closes its envs).
        stuck = self.monitor.stuck_workers() if self.monitor is not None else ()
        stop_processes(self.processes, SAMPLER_WORKERS, request_stop=self._request_stop,
                       hung=[self.processes[w] for w in stuck])
        if self.control is not None:
            self.control.close_queues()
        for reader, writer in getattr(self, "_stack_pipes", ()):
            reader.close()
            writer.close()
        self._stack_pipes = []
        # Drop the primitives: named semaphores (spawn/forkserver) are unlinked when freed.
        self.control = self.monitor = self.eval_schedule = None

    def _request_stop(self) -> None:
        if self.control is not None:
            self.control.stop.value = 1
            self.control.command.value = int(Command.STOP)
            self.control.wake_all()

    def __del__(self):
        try:
            self.shutdown()
        except Exception:  # noqa: BLE001 - never raise from a finalizer
            pass
