"""Evaluation episodes with step and trajectory caps that do not favour short episodes.

Counting rule (why evaluations here are unbiased): a cap decides which trajectories
may *start*, never which ones are reported.  Every env starts one trajectory; when a
trajectory ends, its env starts another only while fewer than ``max_steps`` env steps
have been taken in total and fewer than ``max_trajectories`` trajectories have been
started.  Trajectories already running when a cap is reached are run to their end,
and all started trajectories are reported.  Cutting off at the step cap instead (and
reporting only the ones that finished) would keep the short episodes of the window
and drop the long ones.  A hard limit of ``hard_limit_factor x max_steps`` env
steps guards against episodes that never end; trajectories cut there are dropped
with a warning.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from rlpyt.agents.base import AgentInputs
from rlpyt.envs.traj_info import reads_agent_info
from rlpyt.utils.buffer import buffer_from_example, numpify_buffer, torchify_buffer

__all__ = ["EvalCollector"]


class EvalCollector:
    """Runs evaluation trajectories on ``envs`` with ``agent`` in eval mode.

    Args:
        envs: evaluation envs.
        agent: the agent (acting for all ``envs`` at once).
        TrajInfoCls: per-trajectory stats factory.
        max_steps: window of total env steps in which trajectories may start.
        max_trajectories: at most this many trajectories start.
        hard_limit_factor: safety limit on total steps, as a multiple of ``max_steps``
            (or of ``max_trajectories * horizon`` without a step cap). Default 10.
    """

    def __init__(
        self,
        envs,
        agent,
        TrajInfoCls,
        max_steps=None,
        max_trajectories=None,
        hard_limit_factor=10,
        **_ignored,
    ):
        if max_steps is None and max_trajectories is None:
            raise ValueError("EvalCollector needs max_steps or max_trajectories")
        self.envs = envs
        self.agent = agent
        self.TrajInfoCls = TrajInfoCls
        self.max_steps = math.inf if max_steps is None else int(max_steps)
        self.max_trajectories = math.inf if max_trajectories is None else int(max_trajectories)
        horizon = getattr(envs[0], "horizon", None) or 100_000
        base = self.max_steps if max_steps is not None else self.max_trajectories * horizon
        self.hard_limit = int(hard_limit_factor * base)
        self.null_action = envs[0].action_space.null_value()

    def collect_evaluation(self, itr):
        """Run one evaluation; returns the completed traj infos."""
        B = len(self.envs)
        n_start = int(min(B, self.max_trajectories))
        active = np.zeros(B, dtype=bool)
        active[:n_start] = True
        n_started, n_steps = n_start, 0
        traj_infos = [self.TrajInfoCls() for _ in range(B)]
        completed = []
        observations = [env.reset() for env in self.envs]
        observation = buffer_from_example(observations[0], B)
        for b, o in enumerate(observations):
            observation[b] = o
        action = buffer_from_example(self.null_action, B)
        reward = np.zeros(B, dtype=np.float32)
        inputs_pyt = torchify_buffer(AgentInputs(observation, action, reward))
        # eval_mode first: a recurrent agent sets its sampling state aside, then reset
        # clears only the evaluation state.
        self.agent.eval_mode(itr)
        self.agent.reset()
        pass_agent_info = reads_agent_info(traj_infos[0]) if traj_infos else False
        while active.any():
            agent_step = self.agent.step(*inputs_pyt)
            action[:] = numpify_buffer(agent_step.action)
            agent_info = numpify_buffer(agent_step.agent_info) if pass_agent_info else None
            for b in np.flatnonzero(active):
                o, r, d, env_info = self.envs[b].step(action[b])
                n_steps += 1
                info_b = agent_info[b] if pass_agent_info else None
                traj_infos[b].step(observation[b], action[b], r, d, info_b, env_info)
                if getattr(env_info, "traj_done", d):
                    completed.append(traj_infos[b].terminate(o))
                    if n_steps < self.max_steps and n_started < self.max_trajectories:
                        traj_infos[b] = self.TrajInfoCls()
                        n_started += 1
                    else:
                        active[b] = False
                if d and active[b]:
                    o = self.envs[b].reset()
                    self.agent.reset_one(idx=b)
                    action[b], r = self.null_action, 0.0
                observation[b] = o
                reward[b] = r
            if n_steps >= self.hard_limit:
                warnings.warn(
                    f"evaluation stopped at the hard limit of {self.hard_limit} env steps; "
                    f"{int(active.sum())} unfinished trajectories were dropped",
                    stacklevel=2,
                )
                break
        return completed
