"""The sampler worker process: build envs and collectors, then serve the master's commands."""

from __future__ import annotations

import faulthandler
import os
import signal
import sys
import traceback

from rlpyt.samplers.parallel.control import Command, WorkerSpec, WorkerStopped

__all__ = ["sampling_process"]


def _exit_on_sigterm(signum, frame):
    raise SystemExit(0)  # Unwind: close envs, stop anything the envs started.


def sampling_process(common: dict, spec: WorkerSpec) -> None:
    """Entry point of one worker (``multiprocessing.Process`` target)."""
    # The master handles Ctrl-C and stops workers itself; SIGTERM unwinds cleanly.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    faulthandler.enable()  # A crash in native env code still prints a traceback.
    from rlpyt.utils.process import apply_affinity, die_with_parent

    die_with_parent()
    # The parent is the master (fork, spawn) or the fork server, which exits with it.
    sync = common["control"].worker_sync(spec.rank, os.getppid())
    worker = None
    try:
        # Torch threads first, before any torch op (a forked child may hang otherwise).
        apply_affinity(spec.cpus, common["worker_torch_threads"], common["set_affinity"])
        from rlpyt.utils.seed import set_seed

        set_seed(spec.seed)
        worker = _Worker(common, spec, sync)
        sync.send_result("ready", None)
        worker.serve()
    except (WorkerStopped, SystemExit):
        pass
    except BaseException:  # noqa: BLE001 - everything reaches the master
        sync.send_error(spec, traceback.format_exc())
        sys.exit(1)
    finally:
        if worker is not None:
            worker.close()


class _Worker:
    """One worker's envs, collectors and command loop."""

    def __init__(self, common: dict, spec: WorkerSpec, sync):
        from rlpyt.samplers.parallel.gpu.action_server import slice_samples
        from rlpyt.samplers.parallel.vec_stepping import make_envs

        self.sync, self.spec = sync, spec
        self.envs = make_envs(common["EnvCls"], common["env_kwargs"], spec.env_seeds)
        self.eval_envs = []
        lo, hi = spec.env_slice
        step = common["step_buffer_np"]
        agent = self.agent = common["agent"]
        if agent is not None:
            _localize_agent(agent, common["global_B"], spec.env_ranks)
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
        from rlpyt.samplers.parallel.vec_stepping import make_envs

        self.eval_envs = make_envs(common["EnvCls"], common["eval_env_kwargs"],
                                   spec.eval_env_seeds, vectorize=False)
        lo, hi = spec.eval_slice
        eval_step = common["eval_step_buffer_np"]
        return common["eval_CollectorCls"](
            envs=self.eval_envs, agent=self.agent, TrajInfoCls=common["TrajInfoCls"],
            max_steps=common["eval_max_steps"], max_trajectories=common["eval_max_trajectories"],
            schedule=common["eval_schedule"], env_ranks=spec.eval_env_ranks,
            step_buffer_np=None if eval_step is None else eval_step[lo:hi], sync=sync,
        )

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
                sync.send_result("sample", completed)
            elif command == Command.EVAL:
                self.eval_collector.collect_evaluation(itr)
                sync.send_result("eval", self.eval_collector.completed_keyed)
            else:
                return

    def close(self) -> None:
        for env in [*self.envs, *self.eval_envs]:
            try:
                env.close()
            except Exception:  # noqa: BLE001 - closing must not hide the original error
                pass


def _localize_agent(agent, global_B: int, env_ranks) -> None:
    """Tell a worker's copy of the agent which envs it steps (per-env schedules)."""
    if hasattr(agent, "collector_initialize"):
        agent.collector_initialize(global_B=global_B, env_ranks=list(env_ranks))
    elif hasattr(agent, "env_ranks"):
        agent.env_ranks = list(env_ranks)
