"""The sampler worker process: build envs and collectors, then serve the master's commands.

A worker never outlives its master, whatever the start method and however the
master dies (``SIGKILL`` included):

* ``fork``/``spawn``: the worker's parent is the master; the kernel kills the worker
  when its parent dies (Linux ``PR_SET_PDEATHSIG``, ``die_with_parent``).
* ``forkserver``: the parent is the fork server, which exits once the master is gone
  *and* no process holds the write end of its "alive" pipe.  Every child of the fork
  server inherits that end, so a worker closes it first thing
  (``release_fork_server``); the fork server then exits with the master, and the
  kernel kills the worker with the fork server.
* ``spawn``/``forkserver`` start-up: a worker unpickles its arguments (importing torch
  and the env: seconds on a busy machine) before its code runs, so the first argument
  is a ``ParentGuard`` whose unpickling does the above, and exits if the master is
  already gone, before anything heavy is imported.
* Everywhere (macOS too, and a master killed before the worker got this far): the
  supervisor's ``exit_when_parent_dies`` watches multiprocessing's parent sentinel (a
  pipe the master holds open) and, when the master is gone, ends the worker: ``SIGTERM``
  to itself (unwind, close envs), then ``SIGKILL`` to what it started and to itself
  after ``MASTER_GONE_S``.

A hung env is reported by the master (``step_timeout``); to show where it hangs, the
worker dumps its Python stack on ``SIGUSR1`` into a pipe the master reads.
"""

from __future__ import annotations

import faulthandler
import sys
import time

from rlpyt.samplers.env_group import TimedEnv, localize_agent
from rlpyt.samplers.parallel.worker_channel import Command, WorkerSpec, WorkerStopped
from rlpyt.utils.supervisor import (
    MASTER_GONE_S,
    child_setup,
    dump_stack_on_sigusr1,
    exit_when_parent_dies,
    failures_reported,
)

__all__ = ["sampling_process"]


def _enable_crash_tracebacks() -> None:
    """A crash in native env code still prints a traceback: to ``sys.stderr`` where it is
    a file, else to the process's original stderr (a notebook's or pytest's replaced
    ``sys.stderr`` has no file descriptor, and ``faulthandler.enable()`` raised there
    before the worker could report anything)."""
    for stream in (sys.stderr, sys.__stderr__):
        try:
            faulthandler.enable(file=stream)
            return
        except (AttributeError, ValueError, OSError):  # io.UnsupportedOperation is both
            continue


def sampling_process(guard, common: dict, spec: WorkerSpec, stack_writer=None) -> None:
    """Entry point of one worker (``multiprocessing.Process`` target).

    ``guard`` is a ``rlpyt.utils.supervisor.ParentGuard`` (it did its work while being
    unpickled, under ``spawn``/``forkserver``).  ``stack_writer`` (a
    ``multiprocessing`` connection) receives the worker's Python stack when the master
    sends ``SIGUSR1`` (it does so for a hung env).
    """
    # The master handles Ctrl-C and stops workers itself; SIGTERM unwinds cleanly.
    # Torch threads: set by apply_affinity below, before any torch op.
    child_setup(torch_threads=None)
    _enable_crash_tracebacks()
    dump_stack_on_sigusr1(stack_writer)
    from rlpyt.utils.process import apply_affinity
    master_alive = exit_when_parent_dies(MASTER_GONE_S)
    sync = common["control"].worker_sync(spec.rank, master_alive)
    worker = None
    try:
        with failures_reported(lambda text: sync.send_error(spec, text),
                               quiet=(WorkerStopped, SystemExit)):
            # Torch threads first, before any torch op (a forked child may hang otherwise).
            apply_affinity(spec.cpus, common["worker_torch_threads"], common["set_affinity"])
            from rlpyt.utils.seed import set_seed

            set_seed(spec.seed)
            worker = _Worker(common, spec, sync, common["control"].busy_since)
            sync.send_result("ready", None)
            worker.serve()
    finally:
        if worker is not None:
            worker.close()


class _Worker:
    """One worker's envs, collectors and command loop."""

    def __init__(self, common: dict, spec: WorkerSpec, sync, busy_since):
        from rlpyt.samplers.env_group import make_envs
        from rlpyt.samplers.workers import slice_samples

        self.sync, self.spec = sync, spec
        self.busy_since = busy_since
        with self._env_call():
            envs = make_envs(common["EnvCls"], common["env_kwargs"], spec.env_seeds)
        self.envs = [TimedEnv(env, busy_since, spec.rank) for env in envs]
        self.eval_envs = []
        lo, hi = spec.env_slice
        step = common["step_buffer_np"]
        agent = self.agent = common["agent"]
        if agent is not None:
            localize_agent(agent, common["global_B"], spec.env_ranks)
        self.collector = common["CollectorCls"](
            rank=spec.rank, envs=self.envs, samples_np=slice_samples(common["samples_np"], lo, hi),
            batch_T=common["batch_T"], TrajInfoCls=common["TrajInfoCls"], agent=agent,
            sync=sync, step_buffer_np=None if step is None else step[lo:hi],
            global_B=common["global_B"], env_ranks=spec.env_ranks, env_seeds=spec.env_seeds,
        )
        self.agent_inputs, self.traj_infos = self.collector.start_envs(
            common["max_decorrelation_steps"])
        self.collector.start_agent()
        self.eval_collector = None
        if spec.eval_env_ranks:
            self.eval_collector = self._make_eval_collector(common, spec, sync)

    def _make_eval_collector(self, common, spec, sync):
        from rlpyt.samplers.env_group import make_envs

        with self._env_call():
            envs = make_envs(common["EnvCls"], common["eval_env_kwargs"], spec.eval_env_seeds,
                             vectorize=False)
        self.eval_envs = [TimedEnv(env, self.busy_since, spec.rank) for env in envs]
        lo, hi = spec.eval_slice
        eval_step = common["eval_step_buffer_np"]
        return common["eval_CollectorCls"](
            envs=self.eval_envs, agent=self.agent, TrajInfoCls=common["TrajInfoCls"],
            max_steps=common["eval_max_steps"], max_trajectories=common["eval_max_trajectories"],
            schedule=common["eval_schedule"], env_ranks=spec.eval_env_ranks,
            step_buffer_np=None if eval_step is None else eval_step[lo:hi], sync=sync,
        )

    def _env_call(self):
        return _Busy(self.busy_since, self.spec.rank)

    def serve(self) -> None:
        sync = self.sync
        while True:
            command, itr = sync.wait_command()
            if command == Command.SAMPLE:
                if self.agent is not None:
                    self.agent.sample_mode(itr)
                self.agent_inputs, self.traj_infos, completed = self.collector.collect_batch(
                    self.agent_inputs, self.traj_infos, itr)
                self.collector.reset_if_needed(self.agent_inputs)
                sync.check_param_version()
                sync.send_result("sample", self._keyed(completed))
            elif command == Command.EVAL:
                self.eval_collector.collect_evaluation(itr)
                sync.check_param_version()
                sync.send_result("eval", self.eval_collector.completed_keyed)
            else:
                return

    def _keyed(self, completed) -> list:
        """``((t, global env rank), traj info)`` pairs, for the master's merge."""
        keys = getattr(self.collector, "completed_keys", ())
        if len(keys) != len(completed):  # A collector that does not record keys.
            keys = [(0, self.spec.env_ranks[0])] * len(completed)
        return list(zip(keys, completed))

    def close(self) -> None:
        for env in [*self.envs, *self.eval_envs]:
            try:
                env.close()
            except Exception:  # noqa: BLE001 - closing must not hide the original error
                pass


class _Busy:
    """Context manager marking the worker busy in an env call (for the master's timeout)."""

    def __init__(self, busy_since, rank: int):
        self.busy_since, self.rank = busy_since, rank

    def __enter__(self):
        self.busy_since[self.rank] = time.monotonic()

    def __exit__(self, *exc):
        self.busy_since[self.rank] = 0.0
