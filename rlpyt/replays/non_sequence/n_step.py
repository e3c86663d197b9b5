"""Transition replay: one-step samples ``(s_t, a_t, R_t^n, s_{t+n})`` from the n-step ring."""

from __future__ import annotations

import numpy as np

from rlpyt.agents.base import AgentInputs
from rlpyt.replays.n_step import BaseNStepReturnBuffer
from rlpyt.utils.collections import namedarraytuple

__all__ = ["NStepReturnBuffer", "SamplesFromReplay"]

SamplesFromReplay = namedarraytuple(
    "SamplesFromReplay",
    ["agent_inputs", "action", "return_", "done", "done_n", "target_inputs"],
)


class NStepReturnBuffer(BaseNStepReturnBuffer):
    """Extracts transitions with their n-step returns and target inputs.

    A sample at ring position ``(t, b)`` is ``SamplesFromReplay`` with
    ``agent_inputs = AgentInputs(observation[t], action[t - 1], reward[t - 1])``,
    ``action[t]``, ``return_[t]``, ``done[t]``, ``done_n[t]`` and
    ``target_inputs = AgentInputs(observation[t + n], action[t + n - 1],
    reward[t + n - 1])``.  Arguments as ``BaseNStepReturnBuffer``.
    """

    def _agent_inputs(self, T_idxs: np.ndarray, B_idxs: np.ndarray) -> AgentInputs:
        return AgentInputs(
            observation=self.extract_observation(T_idxs, B_idxs),
            prev_action=self._previous(self.samples.action, T_idxs, B_idxs),
            prev_reward=self._previous(self.samples.reward, T_idxs, B_idxs),
        )

    def _extract_batch(self, T_idxs: np.ndarray, B_idxs: np.ndarray):
        s = self.samples
        target_T_idxs = (T_idxs + self.n_step_return) % self.T
        return SamplesFromReplay(
            agent_inputs=self._agent_inputs(T_idxs, B_idxs),
            action=s.action[T_idxs, B_idxs],
            return_=self.samples_return_[T_idxs, B_idxs],
            done=s.done[T_idxs, B_idxs],
            done_n=self.samples_done_n[T_idxs, B_idxs],
            target_inputs=self._agent_inputs(target_T_idxs, B_idxs),
        )
