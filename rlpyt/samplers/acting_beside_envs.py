"""Collectors whose agent acts beside the envs, in the process that steps them (this
process, a CPU worker or a Ray actor): reset, wait-reset and vectorised-env collectors,
and the choice among them for an ``EnvCls`` (``collector_for_env``).  Their classic
names start with ``Cpu``; ``rlpyt.samplers.parallel.cpu.collectors`` re-exports them
(the public path)."""

from __future__ import annotations

import numpy as np

from rlpyt.agents.base import AgentInputs
from rlpyt.samplers.collector_base import (
    BaseCollector,
    CpuCollectorMixin,
    DecorrelatingStartCollector,
)
from rlpyt.samplers.env_group import is_vec_env_cls
from rlpyt.samplers.vec_stepping import VecEnvStepper
from rlpyt.utils.buffer import buffer_from_example, numpify_buffer, torchify_buffer

__all__ = ["CpuResetCollector", "CpuVecResetCollector", "CpuWaitResetCollector",
           "collector_for_env"]


class CpuResetCollector(CpuCollectorMixin, DecorrelatingStartCollector):
    """Resets an env as soon as its episode ends, mid-batch (feed-forward agents)."""

    mid_batch_reset = True


class CpuWaitResetCollector(CpuCollectorMixin, DecorrelatingStartCollector):
    """Leaves a finished env idle until the batch ends, then resets it.

    Steps after an env's ``done`` are written as ``done=True`` with zero reward and
    must be masked by the algorithm (``valid_from_done``).  Used for recurrent
    agents (each batch row is one clean sequence) and for envs with slow resets.
    """

    mid_batch_reset = False

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.need_reset = np.zeros(len(self.envs), dtype=bool)
        self.done = np.zeros(len(self.envs), dtype=bool)

    def _skip_env(self, b, t, action, reward) -> bool:
        if not self.done[b]:
            return False
        env_buf = self.samples_np.env
        env_buf.done[t, b] = True
        if env_buf.env_info is not None:
            env_buf.env_info[t, b] = 0  # else a stale ``timeout`` from an earlier batch stays
        reward[b] = 0.0
        return True

    def _on_done(self, b, env, o):
        self.done[b] = True
        self.need_reset[b] = True
        return o  # keep the final observation until the reset between batches

    def _after_done(self, done_envs, action, reward):
        """Agent state is reset between batches, with the env."""

    def reset_if_needed(self, agent_inputs):
        observation, action, reward = agent_inputs
        for b in np.flatnonzero(self.need_reset):
            observation[b] = self.envs[b].reset()
            action[b] = self.null_action
            reward[b] = 0.0
            if self.agent is not None:
                self.agent.reset_one(idx=b)
        self.need_reset[:] = False
        self.done[:] = False


class CpuVecResetCollector(BaseCollector):
    """``CpuResetCollector`` for one vectorised env (``rlpyt.envs.vec``): after the agent
    acts for all sub-envs, they are stepped in one call and reset in the same call."""

    mid_batch_reset = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.vec = VecEnvStepper(self.envs[0])
        B = self.vec.n
        if self.bootstrap:
            self.final_observation = buffer_from_example(self.null_observation(), B)
            self.timeout = np.zeros(B, dtype=bool)

    def null_observation(self):
        return self.envs[0].observation_space.null_value()

    def start_envs(self, max_decorrelation_steps=0):
        return self.vec.start(self.TrajInfoCls, max_decorrelation_steps, self.env_seeds)

    def collect_batch(self, agent_inputs, traj_infos, itr):
        agent_buf, env_buf = self.samples_np.agent, self.samples_np.env
        completed, self.completed_keys = [], []
        observation, action, reward = agent_inputs
        inputs_pyt = torchify_buffer(agent_inputs)
        final = self.final_observation if self.bootstrap else None
        if self.bootstrap:
            agent_buf.timeout_value[:] = 0
        for t in range(self.batch_T):
            env_buf.observation[t] = observation
            agent_buf.prev_action[t] = action
            env_buf.prev_reward[t] = reward
            agent_step = self.agent.step(*inputs_pyt)
            action[:] = numpify_buffer(agent_step.action)
            agent_buf.action[t] = action
            agent_info = numpify_buffer(agent_step.agent_info)
            if agent_info:
                agent_buf.agent_info[t] = agent_info
            done = self.vec.step(t, action, observation, reward, env_buf, agent_buf.agent_info,
                                 traj_infos, completed, self.TrajInfoCls, final,
                                 self.timeout if self.bootstrap else None)
            self.completed_keys += [(t, self.env_ranks[b]) for b in self.vec.completed_envs]
            if self.bootstrap and self.timeout.any():
                self._write_timeout_values(t)
            for b in np.flatnonzero(done):
                self.agent.reset_one(idx=b)
            action[done] = self.null_action
        if self.bootstrap:
            agent_buf.bootstrap_value[:] = numpify_buffer(self.agent.value(*inputs_pyt))
        return agent_inputs, traj_infos, completed

    def _write_timeout_values(self, t):
        """V(final observation) with the action and reward of step ``t``."""
        truncated = np.flatnonzero(self.timeout)
        inputs = AgentInputs(self.final_observation, self.samples_np.agent.action[t],
                             self.samples_np.env.reward[t])
        value = numpify_buffer(self.agent.value(*torchify_buffer(inputs)))
        self.samples_np.agent.timeout_value[t, truncated] = value[truncated]
        self.timeout[:] = False


def collector_for_env(EnvCls, CollectorCls: type, sampler: str) -> type:
    """The collector class ``sampler`` (its name, for errors) uses with ``EnvCls``.

    A vectorised ``EnvCls`` (``rlpyt.envs.vec``) resets finished sub-envs inside its
    step call: ``CpuResetCollector`` becomes ``CpuVecResetCollector`` (one env call per
    time step), and a wait-reset collector is refused.  Other env classes keep
    ``CollectorCls``.
    """
    if not is_vec_env_cls(EnvCls):
        return CollectorCls
    if issubclass(CollectorCls, CpuWaitResetCollector):
        raise TypeError(
            f"{sampler}: a vectorised EnvCls ({EnvCls.__name__}) resets finished sub-envs "
            "inside its step call, so it cannot wait for the batch end; use "
            "CollectorCls=CpuResetCollector")
    return CpuVecResetCollector if CollectorCls is CpuResetCollector else CollectorCls
