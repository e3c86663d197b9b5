"""Master side of samplers whose master selects actions: one batched ``agent.step`` per group.

Workers are split into groups (one group for ``GpuSampler``, two for the
alternating samplers).  For each time step and group, the master

1. waits until the group's workers have written their observations;
2. finishes the group's previous step: ``timeout_value`` for truncated episodes
   (computed before the recurrent state is cleared, as in the serial collectors)
   and ``agent.reset_one`` for envs the workers reset;
3. computes the group's actions in one ``agent.step`` and writes them;
4. releases the group's workers to step their envs.

With two groups the master computes one group's actions while the other group
steps its envs.  ``overlap=False`` additionally waits for the other group to
finish stepping before releasing a group, so the two groups never step at the
same time (useful when both groups share the same CPU cores).
"""

from __future__ import annotations

import numpy as np

from rlpyt.agents.base import AgentInputs
from rlpyt.samplers.workers import slice_samples
from rlpyt.utils.buffer import buffer_func, numpify_buffer, torchify_buffer

__all__ = ["ActionServer"]


class _Group:
    """The master's views of one worker group's envs."""

    def __init__(self, index, workers, start, stop, samples_np, step_np):
        self.index = index
        self.workers = list(workers)
        self.start, self.stop = start, stop
        self.samples = slice_samples(samples_np, start, stop)
        self.step = step_np[start:stop]
        self.inputs_pyt = torchify_buffer(
            AgentInputs(self.step.observation, self.step.action, self.step.reward))
        self.stepping = False  # Released and not yet awaited.
        # Scratch inputs for timeout values: final observations where truncated.
        if step_np.final_observation is not None:
            self.final_inputs = buffer_func(
                AgentInputs(self.step.observation, self.step.action, self.step.reward),
                np.copy)
            self.final_inputs_pyt = torchify_buffer(self.final_inputs)


class ActionServer:
    """Mixin for ``ParallelSamplerBase`` subclasses whose master holds the agent.

    Subclasses call ``build_groups`` once the buffers exist; ``serve_actions(itr)``
    runs the master's half of one batch, and the ``_eval_*`` hooks choose the eval
    envs' actions during ``ParallelSamplerBase._serve_evaluation``.
    """

    overlap = True
    alternating_agent_steps = False  # Two groups stepped by an alternating recurrent agent.

    def build_groups(self, group_workers: list[list[int]]) -> None:
        self.groups = []
        for g, workers in enumerate(group_workers):
            start = self.worker_specs[workers[0]].env_slice[0]
            stop = self.worker_specs[workers[-1]].env_slice[1]
            self.groups.append(
                _Group(g, workers, start, stop, self.samples_np, self.step_buffer_np))
        if self.eval_step_buffer_np is not None:
            s = self.eval_step_buffer_np
            self.eval_inputs_pyt = torchify_buffer(AgentInputs(s.observation, s.action, s.reward))

    # ---- sampling ----------------------------------------------------------------------
    def serve_actions(self, itr: int) -> None:
        """Master's half of one batch (workers were told to sample)."""
        for group in self.groups:
            group.stepping = True  # Writing their first observations.
            if getattr(group.samples.agent, "timeout_value", None) is not None:
                group.samples.agent.timeout_value[:] = 0
        for t in range(self.batch_spec.T):
            for group in self.groups:
                self._await(group)
                self._finish_step(group, t - 1)
                self._select_actions(group, t)
                if not self.overlap:
                    for other in self.groups:
                        self._await(other)
                self._release(group)
        for group in self.groups:
            self._await(group)
            self._finish_step(group, self.batch_spec.T - 1)
            if getattr(group.samples.agent, "bootstrap_value", None) is not None:
                value = self.agent.value(*group.inputs_pyt)
                group.samples.agent.bootstrap_value[:] = numpify_buffer(value)
            if self.alternating_agent_steps:
                self.agent.toggle_alt()  # Bootstrap the other group with its own state.
        self._act_on_envs(None)

    def _act_on_envs(self, envs: slice | None) -> None:
        act_on_envs = getattr(getattr(self, "agent", None), "act_on_envs", None)  # (Doubles.)
        if act_on_envs is not None:
            act_on_envs(envs)

    def _await(self, group) -> None:
        if group.stepping:
            self.monitor.await_ready(group.workers)
            group.stepping = False

    def _release(self, group) -> None:
        group.stepping = True
        self.monitor.release_act(group.workers)

    def _select_actions(self, group, t: int) -> None:
        agent_buf, step = group.samples.agent, group.step
        agent_buf.prev_action[t] = step.action
        if len(self.groups) > 1:  # The agent acts on this group's envs only.
            self._act_on_envs(slice(group.start, group.stop))
        agent_step = self.agent.step(*group.inputs_pyt)
        step.action[:] = numpify_buffer(agent_step.action)
        agent_buf.action[t] = step.action
        agent_info = numpify_buffer(agent_step.agent_info)
        if agent_info:
            agent_buf.agent_info[t] = agent_info

    def _finish_step(self, group, t: int) -> None:
        """Timeout values of step ``t``, then clear the state of envs that were reset."""
        step = group.step
        if t >= 0 and step.final_observation is not None and step.timeout.any():
            self._write_timeout_values(group, t)
        if step.reset.any():
            for b in np.flatnonzero(step.reset):
                self.agent.reset_one(idx=group.start + b)
            step.reset[:] = False

    def _write_timeout_values(self, group, t: int) -> None:
        step, inputs = group.step, group.final_inputs
        truncated = np.flatnonzero(step.timeout)
        inputs.observation[:] = step.observation
        inputs.observation[truncated] = step.final_observation[truncated]
        inputs.prev_action[:] = group.samples.agent.action[t]  # The actions just taken.
        inputs.prev_reward[:] = group.samples.env.reward[t]
        value = numpify_buffer(self.agent.value(*group.final_inputs_pyt))
        group.samples.agent.timeout_value[t, truncated] = value[truncated]
        step.timeout[:] = False

    # ---- evaluation (hooks of ``ParallelSamplerBase._serve_evaluation``) ------------------
    def _eval_begin(self, itr) -> None:
        self._act_on_envs(None)
        self.agent.reset()

    def _eval_reset_states(self) -> None:
        s = self.eval_step_buffer_np
        if s.reset.any():
            for b in np.flatnonzero(s.reset):
                self.agent.reset_one(idx=b)
            s.reset[:] = False

    def _eval_select_actions(self) -> None:
        agent_step = self.agent.step(*self.eval_inputs_pyt)
        self.eval_step_buffer_np.action[:] = numpify_buffer(agent_step.action)
