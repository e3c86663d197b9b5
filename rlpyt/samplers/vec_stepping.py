"""Worker-side use of vectorised envs (``rlpyt.envs.vec``): build them, step them into buffers.

A worker whose ``EnvCls`` is vectorised (class attribute ``vectorized = True``) builds
one env holding all its sub-envs and steps them with one call per time step;
``VecEnvStepper`` then writes that step's rewards, dones and env infos into the
``[T, B]`` buffer and keeps each sub-env's trajectory statistics.
"""

from __future__ import annotations

import numpy as np

from rlpyt.agents.base import AgentInputs

__all__ = ["VecEnvStepper"]


class VecEnvStepper:
    """Steps one vectorised env for a collector, writing into preallocated buffers.

    Args:
        env: a ``VecEnvAdapter`` (or any env with its ``step``/``reset`` batch API).
    """

    def __init__(self, env):
        self.env = env
        self.n = env.num_envs
        self.null_action = env.action_space.null_value()
        self._row_cls = None
        self.completed_envs = []  # Sub-envs whose trajectory ended in the latest step.

    def start(self, TrajInfoCls, max_decorrelation_steps: int, env_seeds):
        """Reset, then take random steps so sub-envs start out of phase.

        A vectorised env steps all sub-envs together, so they share one number of
        random steps (drawn from the first sub-env's seed); episodes ending at
        different times spread them out.  Returns ``(agent_inputs, traj_infos)``.
        """
        env, n = self.env, self.n
        traj_infos = [TrajInfoCls() for _ in range(n)]
        observation = np.array(env.reset())
        action = np.stack([self.null_action] * n)
        reward = np.zeros(n, dtype=np.float32)
        for _ in range(_decorrelation_steps(env_seeds, max_decorrelation_steps)):
            action[:] = np.stack([env.action_space.sample() for _ in range(n)])
            out = env.step(action)
            for b in range(n):
                info = self._info_row(out.env_info, b)
                traj_infos[b].step(observation[b], action[b], out.reward[b], out.done[b],
                                   None, info)
                if getattr(info, "traj_done", out.done[b]):
                    traj_infos[b] = TrajInfoCls()
            observation[:] = out.observation
            reward[:] = out.reward
            action[out.done] = self.null_action
            reward[out.done] = 0
        return AgentInputs(observation, action, reward), traj_infos

    def step(self, t, action, observation, reward, env_buf, agent_info, traj_infos, completed,
             TrajInfoCls, final_observation=None, timeout=None) -> np.ndarray:
        """Step every sub-env with ``action``; returns the ``done`` mask.

        Writes ``env_buf.reward/done/env_info[t]``; updates the agent inputs
        ``observation`` and ``reward`` in place (reset observation and zero reward
        where an episode ended; the caller nulls those actions).  Where an episode
        was truncated and ``final_observation`` is given, its last observation goes
        there and ``timeout`` is set.
        """
        out = self.env.step(action)
        done = out.done
        self.completed_envs = []
        for b in range(self.n):
            info = self._info_row(out.env_info, b)
            info_b = None if agent_info is None else agent_info[t, b]
            traj_infos[b].step(observation[b], action[b], out.reward[b], done[b], info_b, info)
            if getattr(info, "traj_done", done[b]):
                last = out.observation[b] if out.final_observation is None else \
                    out.final_observation[b]
                completed.append(traj_infos[b].terminate(last))
                self.completed_envs.append(b)
                traj_infos[b] = TrajInfoCls()
        env_buf.reward[t] = out.reward
        env_buf.done[t] = done
        if out.env_info:
            env_buf.env_info[t] = out.env_info
        truncated = getattr(out.env_info, "timeout", None)
        if final_observation is not None and truncated is not None and truncated.any():
            final_observation[truncated] = out.final_observation[truncated]
            timeout[truncated] = True
        observation[:] = out.observation
        reward[:] = out.reward
        reward[done] = 0
        return done

    def _info_row(self, env_info, b: int):
        if self._row_cls is None:
            self._row_cls = type(env_info)
        return self._row_cls(*(v[b] for v in env_info))


def _decorrelation_steps(env_seeds, max_steps: int) -> int:
    if max_steps <= 0:
        return 0
    seed = None if not env_seeds else [int(env_seeds[0]), 0x5EED]
    return int(np.random.default_rng(seed).integers(0, max_steps + 1))
