"""Collectors for samplers whose agent lives with the envs (serial and CPU-parallel)."""

from __future__ import annotations

import numpy as np

from rlpyt.samplers.collectors import CpuCollectorMixin, DecorrelatingStartCollector
from rlpyt.samplers.eval import EvalCollector

__all__ = ["CpuEvalCollector", "CpuResetCollector", "CpuWaitResetCollector"]


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


class CpuEvalCollector(EvalCollector):
    """Evaluation in a CPU worker: the worker's agent acts for its eval envs."""
