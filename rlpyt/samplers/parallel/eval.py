"""Evaluation spread over worker processes, with the serial evaluation's counting rule.

The rule (see ``rlpyt.samplers.eval``) is global across all eval envs: a finished
trajectory's env starts another only while fewer than ``max_steps`` env steps have
been taken *by all eval envs together* and fewer than ``max_trajectories`` have
been started in total.  Workers share those two counts through ``EvalCounter``;
every started trajectory runs to its end and is reported, so short episodes are
not favoured.
"""

from __future__ import annotations

import math

import numpy as np

from rlpyt.envs.traj_info import reads_agent_info

__all__ = ["EvalCounter", "EvalEnvGroup", "hard_step_limit"]


def hard_step_limit(max_steps, max_trajectories, horizon, factor: float = 10) -> int:
    """Safety cap on total eval steps, as in the serial evaluation."""
    horizon = horizon or 100_000
    base = max_steps if max_steps is not None else max_trajectories * horizon
    return int(factor * base)


class EvalCounter:
    """Eval step and trajectory counts shared by every process of one sampler.

    Args:
        ctx: multiprocessing context the workers are started with.
        max_steps: trajectories start only while fewer total steps were taken (None: no cap).
        max_trajectories: at most this many trajectories start (None: no cap).
        hard_limit: total steps after which unfinished trajectories are dropped.
    """

    def __init__(self, ctx, max_steps, max_trajectories, hard_limit: int):
        self._counts = ctx.RawArray("q", 3)  # [steps, started, started at once]
        self.lock = ctx.Lock()
        self.max_steps = math.inf if max_steps is None else int(max_steps)
        self.max_trajectories = math.inf if max_trajectories is None else int(max_trajectories)
        self.hard_limit = int(hard_limit)

    def reset(self, n_eval_envs: int) -> int:
        """Start an evaluation; returns how many envs start a trajectory right away."""
        n_start = int(min(n_eval_envs, self.max_trajectories))
        with self.lock:
            self._counts[0] = 0
            self._counts[1] = n_start
            self._counts[2] = n_start
        return n_start

    def add_steps(self, n: int) -> None:
        if n:
            with self.lock:
                self._counts[0] += n

    def try_start(self, pending_steps: int = 0) -> bool:
        """Count ``pending_steps``, then start a trajectory if both caps allow it."""
        with self.lock:
            self._counts[0] += pending_steps
            if self._counts[0] < self.max_steps and self._counts[1] < self.max_trajectories:
                self._counts[1] += 1
                return True
            return False

    def hard_limit_reached(self) -> bool:
        return self._counts[0] >= self.hard_limit

    @property
    def steps(self) -> int:
        return int(self._counts[0])

    @property
    def n_start(self) -> int:
        """Trajectories started at once by the latest ``reset``."""
        return int(self._counts[2])


class EvalEnvGroup:
    """One worker's eval envs, stepped under the global counting rule.

    The caller provides actions; this class steps the active envs, keeps their
    trajectory statistics, and writes the next agent inputs in place.

    Args:
        envs: this worker's eval envs.
        env_ranks: their global eval ranks (env ``i`` starts active iff ``i`` is
            below the number of trajectories that start at once).
        TrajInfoCls: per-trajectory statistics factory.
        counter: the sampler's shared ``EvalCounter``.
        observation, action, reward: ``[n]`` arrays of agent inputs, written in place.
        active: ``[n]`` bool array, written in place (shared with the master when it
            selects the actions).
        reset: ``[n]`` bool array: set where an env was reset, so whoever holds the
            agent clears that env's recurrent state and then clears the flag.
    """

    def __init__(self, envs, env_ranks, TrajInfoCls, counter: EvalCounter,
                 observation, action, reward, active, reset):
        self.envs = envs
        self.env_ranks = np.asarray(env_ranks, dtype=np.int64)
        self.TrajInfoCls = TrajInfoCls
        self.counter = counter
        self.observation, self.action, self.reward = observation, action, reward
        self.active, self.reset_flag = active, reset
        self.null_action = envs[0].action_space.null_value() if envs else None
        self.traj_infos = []
        self.completed = []
        self._pass_agent_info = True
        self.n_dropped = 0

    def start(self, n_start: int) -> None:
        """Reset every env; envs whose global rank is below ``n_start`` are active."""
        self.traj_infos = [self.TrajInfoCls() for _ in self.envs]
        self.completed, self.n_dropped = [], 0
        self._pass_agent_info = bool(self.traj_infos) and reads_agent_info(self.traj_infos[0])
        for b, env in enumerate(self.envs):
            self.observation[b] = env.reset()
        self.action[:] = self.null_action
        self.reward[:] = 0
        self.reset_flag[:] = False
        self.active[:] = self.env_ranks < n_start

    def step(self, agent_info=None) -> None:
        """Step every active env once with ``self.action``."""
        pending = 0
        for b in np.flatnonzero(self.active):
            env = self.envs[b]
            o, r, d, env_info = env.step(self.action[b])
            pending += 1
            info_b = agent_info[b] if agent_info is not None and self._pass_agent_info else None
            self.traj_infos[b].step(self.observation[b], self.action[b], r, d, info_b, env_info)
            if getattr(env_info, "traj_done", d):
                self.completed.append(self.traj_infos[b].terminate(o))
                if self.counter.try_start(pending):
                    self.traj_infos[b] = self.TrajInfoCls()
                else:
                    self.active[b] = False
                pending = 0
            if d and self.active[b]:
                o = env.reset()
                self.reset_flag[b] = True
                self.action[b] = self.null_action
                r = 0.0
            self.observation[b] = o
            self.reward[b] = r
        self.counter.add_steps(pending)
        if self.active.any() and self.counter.hard_limit_reached():
            self.n_dropped += int(self.active.sum())
            self.active[:] = False

    @property
    def done(self) -> bool:
        return not self.active.any()
