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

__all__ = ["EvalCollector", "EvalSchedule", "finish_evaluation", "hard_step_limit",
           "merge_completed"]


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


# ---- evaluation spread over worker processes or Ray actors -------------------------------
# Every eval env steps once per round, in lockstep over all of them, and the sampler
# decides after each round which ended trajectories are followed by a new one, walking
# the envs in global rank order as the serial loop does: the outcome is the serial one
# whatever the timing (rlpyt.samplers.parallel.worker_eval has the worker side).
def hard_step_limit(max_steps, max_trajectories, horizon, factor: float = 10) -> int:
    """Safety cap on total eval steps, as in the serial evaluation."""
    horizon = horizon or 100_000
    base = max_steps if max_steps is not None else max_trajectories * horizon
    return int(factor * base)


class EvalSchedule:
    """Which eval envs run a trajectory: flags shared with the workers, decisions by the master.

    Args:
        n_envs: number of eval envs over all workers (indexed by global eval rank).
        max_steps: trajectories start only while fewer total steps were taken (None: no cap).
        max_trajectories: at most this many trajectories start (None: no cap).
        hard_limit: total steps after which unfinished trajectories are dropped.
        ctx: multiprocessing context whose shared memory holds the flags; None keeps
            them in this process (an eval collector running on its own).
    """

    def __init__(self, n_envs: int, max_steps, max_trajectories, hard_limit: int, ctx=None):
        self.n_envs = int(n_envs)
        self.max_steps = math.inf if max_steps is None else int(max_steps)
        self.max_trajectories = math.inf if max_trajectories is None else int(max_trajectories)
        self.hard_limit = int(hard_limit)
        if ctx is None:
            self._active_raw, self._ended_raw = bytearray(self.n_envs), bytearray(self.n_envs)
        else:
            self._active_raw = ctx.RawArray("b", max(self.n_envs, 1))
            self._ended_raw = ctx.RawArray("b", max(self.n_envs, 1))
        self.steps = self.started = self.n_dropped = 0

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k not in ("_active", "_ended")}

    @property
    def active(self) -> np.ndarray:
        """``[n_envs]`` bool: the env runs a trajectory (written by the master)."""
        if "_active" not in self.__dict__:
            self._active = np.frombuffer(self._active_raw, dtype=np.bool_)[: self.n_envs]
        return self._active

    @property
    def ended(self) -> np.ndarray:
        """``[n_envs]`` bool: the env's trajectory ended this round (written by its worker)."""
        if "_ended" not in self.__dict__:
            self._ended = np.frombuffer(self._ended_raw, dtype=np.bool_)[: self.n_envs]
        return self._ended

    @property
    def n_start(self) -> int:
        """Trajectories that start at once: one on each of the first envs."""
        return int(min(self.n_envs, self.max_trajectories))

    def reset(self) -> None:
        """Start an evaluation: the first ``n_start`` envs (by global rank) are active."""
        self.steps, self.started, self.n_dropped = 0, self.n_start, 0
        self.active[:] = np.arange(self.n_envs) < self.n_start
        self.ended[:] = False

    def decide(self) -> None:
        """After a round in which every active env stepped once: keep an ended env active
        (it starts a new trajectory) only while both caps allow, in global rank order.

        Env ``b`` at position ``p`` among the envs that stepped is the serial loop's
        ``steps + p + 1``-th step, so the serial rule is applied to the same counts.
        """
        active, ended = self.active, self.ended
        stepped = np.flatnonzero(active)
        for p, b in enumerate(stepped):
            if not ended[b]:
                continue
            if self.steps + p + 1 < self.max_steps and self.started < self.max_trajectories:
                self.started += 1
            else:
                active[b] = False
        self.steps += len(stepped)
        if self.steps >= self.hard_limit and active.any():
            self.n_dropped += int(active.sum())
            active[:] = False

    @property
    def done(self) -> bool:
        return not self.active.any()


def merge_completed(results) -> list:
    """Completed traj infos of every worker, in the serial order (round, then eval rank)."""
    keyed = sorted((k for completed in results for k in completed), key=lambda k: k[:2])
    return [info for _, _, info in keyed]


def finish_evaluation(schedule: EvalSchedule, results) -> list:
    """The merged completed traj infos of an evaluation, warning when the schedule's
    hard step limit dropped unfinished trajectories."""
    if schedule.n_dropped:
        warnings.warn(
            f"evaluation stopped at the hard limit of {schedule.hard_limit} env "
            f"steps; {schedule.n_dropped} unfinished trajectories were dropped",
            stacklevel=3)
    return merge_completed(results)
