"""Evaluation spread over worker processes, with exactly the serial evaluation's outcome.

The counting rule (see ``rlpyt.samplers.eval``) is global across all eval envs: a
finished trajectory's env starts another only while fewer than ``max_steps`` env
steps have been taken *by all eval envs together* and fewer than
``max_trajectories`` have been started in total.  Every started trajectory runs to
its end and is reported, so short episodes are not favoured.

Why lockstep: if each worker asked a shared counter whether it may start another
trajectory, which envs got the last starts would depend on which worker reached the
counter first, i.e. on the machine's load (two same-seed runs would differ).
Instead every eval env steps once per *round*, in lockstep over all workers, and
the master decides after each round which ended trajectories are followed by a new
one, walking the envs in global rank order exactly as the serial loop does
(``EvalSchedule.decide``).  The outcome is therefore the serial one, whatever the
timing, the start method or the number of workers.

One round, as seen by a worker (``EvalEnvGroup``): step every active env; where a
trajectory ended, report it and mark the env ``ended`` (do not reset yet); signal
the master; wait for its decisions; reset the ended envs that go on.
"""

from __future__ import annotations

import numpy as np

from rlpyt.envs.traj_info import reads_agent_info
from rlpyt.samplers.eval import EvalSchedule

__all__ = ["EvalEnvGroup", "run_worker_evaluation"]


class EvalEnvGroup:
    """One worker's eval envs, stepped one round at a time under an ``EvalSchedule``.

    The caller provides actions; this class steps the active envs, keeps their
    trajectory statistics, and writes the next agent inputs in place.

    Args:
        envs: this worker's eval envs.
        env_ranks: their global eval ranks (contiguous).
        TrajInfoCls: per-trajectory statistics factory.
        schedule: the sampler's ``EvalSchedule``.
        observation, action, reward: ``[n]`` arrays of agent inputs, written in place.
        reset: ``[n]`` bool array: set where an env was reset, so whoever holds the
            agent clears that env's recurrent state and then clears the flag.
    """

    def __init__(self, envs, env_ranks, TrajInfoCls, schedule: EvalSchedule,
                 observation, action, reward, reset):
        self.envs = envs
        self.env_ranks = [int(r) for r in env_ranks]
        lo = self.env_ranks[0] if self.env_ranks else 0
        self.TrajInfoCls = TrajInfoCls
        self.schedule = schedule
        self.active = schedule.active[lo:lo + len(envs)]
        self.ended = schedule.ended[lo:lo + len(envs)]
        self.observation, self.action, self.reward = observation, action, reward
        self.reset_flag = reset
        self.null_action = envs[0].action_space.null_value() if envs else None
        self.traj_infos = []
        self.completed = []  # (round, global eval rank, traj info): the serial order.
        self._final = {}  # env -> (observation, reward, done) of an ended trajectory.
        self._pass_agent_info = True
        self.round = 0

    def start(self) -> None:
        """Reset every env (the master has reset the schedule)."""
        self.traj_infos = [self.TrajInfoCls() for _ in self.envs]
        self.completed, self._final, self.round = [], {}, 0
        self._pass_agent_info = bool(self.traj_infos) and reads_agent_info(self.traj_infos[0])
        for b, env in enumerate(self.envs):
            self.observation[b] = env.reset()
        if self.envs:
            self.action[:] = self.null_action
        self.reward[:] = 0
        self.reset_flag[:] = False

    def step(self, agent_info=None) -> None:
        """Step every active env once with ``self.action``; mark ended trajectories."""
        for b in np.flatnonzero(self.active):
            env = self.envs[b]
            o, r, d, env_info = env.step(self.action[b])
            info_b = agent_info[b] if agent_info is not None and self._pass_agent_info else None
            self.traj_infos[b].step(self.observation[b], self.action[b], r, d, info_b, env_info)
            if getattr(env_info, "traj_done", d):
                self.completed.append((self.round, self.env_ranks[b],
                                       self.traj_infos[b].terminate(o)))
                self.ended[b] = True
                self._final[b] = (o, r, d)  # Reset only if the master lets it go on.
                continue
            if d:  # A lost life (episodic lives): the trajectory goes on after a reset.
                o, r = self._reset(b)
            self.observation[b] = o
            self.reward[b] = r
        self.round += 1

    def finish(self) -> None:
        """After the master's decisions: ended envs that stay active start a new trajectory."""
        for b, (o, r, d) in self._final.items():
            if self.active[b]:
                self.traj_infos[b] = self.TrajInfoCls()
                if d:
                    o, r = self._reset(b)
            self.observation[b] = o
            self.reward[b] = r
            self.ended[b] = False
        self._final = {}

    def run(self, until: int, select_actions=None) -> None:
        """Many rounds in one command (``EvalEvents`` drives this): start what the
        master's latest decisions allow, then step round after round until a trajectory
        ends, no env is active, or round ``until`` is reached.  Between two trajectory
        ends nothing the master decides can change this group's envs, so the rounds it
        steps are those of the lockstep evaluation."""
        self.finish()
        while self.any_active and self.round < until:
            self.step(select_actions() if select_actions is not None else None)
            if self.ended.any():
                return

    def _reset(self, b):
        self.reset_flag[b] = True
        self.action[b] = self.null_action
        return self.envs[b].reset(), 0.0

    @property
    def any_active(self) -> bool:
        return bool(self.active.any())


def run_worker_evaluation(group: EvalEnvGroup, sync, select_actions=None) -> None:
    """A worker's side of one lockstep evaluation (the master's side is
    ``ParallelSamplerBase._serve_evaluation``).  ``eval_stopped`` ends it.

    With ``select_actions`` (CPU workers: it writes this worker's actions and returns
    their agent info), one handshake per round: wait for the master's go, start the
    trajectories the master's latest decisions allow (``finish``), select actions,
    step, signal.  Without (the master selects actions), two: wait, step, signal; wait
    for the decisions, ``finish``, signal (the master then needs the reset
    observations to select the next actions).
    """
    group.start()
    sync.signal_ready()
    while True:
        sync.wait_actions()
        if sync.eval_stopped:
            return
        if select_actions is not None:
            group.finish()
            if group.any_active:
                group.step(select_actions())
            sync.signal_ready()
            continue
        if group.any_active:
            group.step()
        sync.signal_ready()
        sync.wait_actions()
        group.finish()
        sync.signal_ready()
