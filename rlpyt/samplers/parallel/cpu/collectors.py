"""Collectors of CPU-parallel samplers: the worker-side evaluation collector; the
training collectors (shared with the serial and Ray samplers) live in
``rlpyt.samplers.acting_beside_envs`` and are importable from here too, their public
path."""

from __future__ import annotations

import warnings

import numpy as np

from rlpyt.agents.base import AgentInputs
from rlpyt.samplers.acting_beside_envs import (
    CpuResetCollector,
    CpuVecResetCollector,
    CpuWaitResetCollector,
    collector_for_env,
)
from rlpyt.samplers.eval import EvalCollector, EvalSchedule
from rlpyt.samplers.parallel.worker_eval import EvalEnvGroup, run_worker_evaluation
from rlpyt.utils.buffer import buffer_from_example, numpify_buffer, torchify_buffer

__all__ = [
    "CpuEvalCollector",
    "CpuResetCollector",
    "CpuVecResetCollector",
    "CpuWaitResetCollector",
    "collector_for_env",
]


class CpuEvalCollector(EvalCollector):
    """Evaluation in a CPU worker: the worker's agent acts for its eval envs.

    Keywords as ``EvalCollector`` plus:
        schedule: the sampler's ``EvalSchedule``: the master decides, after each round
            in which every eval env of every worker stepped once, which trajectories
            start (the serial counting rule over all eval envs, see
            ``rlpyt.samplers.parallel.worker_eval``).  ``None`` makes a private one (the
            collector then evaluates on its own, exactly like ``SerialEvalCollector``).
        env_ranks: global eval ranks of ``envs`` (default ``0 .. len(envs) - 1``).
        sync: the worker's ``WorkerSync`` (required with a shared ``schedule``).

    After ``collect_evaluation``, ``completed_keyed`` holds ``(round, eval rank, traj
    info)`` of every completed trajectory, so the master can merge workers' results
    in the serial order.
    """

    def __init__(self, envs, agent, TrajInfoCls, max_steps=None, max_trajectories=None,
                 hard_limit_factor=10, schedule=None, env_ranks=None, sync=None, **_ignored):
        super().__init__(envs, agent, TrajInfoCls, max_steps=max_steps,
                         max_trajectories=max_trajectories, hard_limit_factor=hard_limit_factor)
        self._owns_schedule = schedule is None
        if schedule is None:
            schedule = EvalSchedule(len(envs), max_steps, max_trajectories, self.hard_limit)
        elif sync is None:
            raise ValueError("CpuEvalCollector with a shared schedule runs in a sampler "
                             "worker: it needs sync=")
        self.sync = sync
        B = len(envs)
        observation = buffer_from_example(envs[0].observation_space.null_value(), B)
        action = buffer_from_example(self.null_action, B)
        reward = np.zeros(B, dtype=np.float32)
        self.reset_flags = np.zeros(B, dtype=bool)
        self.group = EvalEnvGroup(
            envs, range(B) if env_ranks is None else env_ranks, TrajInfoCls, schedule,
            observation, action, reward, reset=self.reset_flags,
        )
        self.inputs_pyt = torchify_buffer(AgentInputs(observation, action, reward))
        self.completed_keyed = []
        self.n_dropped = 0

    def _select_actions(self):
        """The agent acts for every eval env of this collector; returns its agent info."""
        agent = self.agent
        for b in np.flatnonzero(self.reset_flags):
            agent.reset_one(idx=b)
        self.reset_flags[:] = False
        agent_step = agent.step(*self.inputs_pyt)
        self.group.action[:] = numpify_buffer(agent_step.action)
        return numpify_buffer(agent_step.agent_info)

    def collect_evaluation(self, itr):
        group, schedule = self.group, self.group.schedule
        # eval_mode before reset: a recurrent agent keeps its sampling state aside first.
        self.agent.eval_mode(itr)
        self.agent.reset()
        if self._owns_schedule:
            schedule.reset()
            group.start()
            while not schedule.done:
                group.step(self._select_actions())
                schedule.decide()
                group.finish()
        else:
            run_worker_evaluation(group, self.sync, self._select_actions)
        self.completed_keyed = group.completed
        self.n_dropped = schedule.n_dropped if self._owns_schedule else 0
        if self._owns_schedule and self.n_dropped:
            warnings.warn(
                f"evaluation stopped at the hard limit of {schedule.hard_limit} env "
                f"steps; {self.n_dropped} unfinished trajectories were dropped",
                stacklevel=2,
            )
        return [info for _, _, info in group.completed]
