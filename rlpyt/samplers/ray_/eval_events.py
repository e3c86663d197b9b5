"""The lockstep evaluation's outcome with one message per trajectory end, not per round.

The lockstep rule (``rlpyt.samplers.parallel.worker_eval``) needs the master only where a
trajectory ends: every other round, each active env simply steps once.  So a group
(a worker or a Ray actor) may step ahead on its own until one of its trajectories
ends (``EvalEnvGroup.run``), and the master replays the rounds in order: it takes
the earliest round any live group stopped at, counts the rounds before it (every
active env stepped in each), applies ``EvalSchedule.decide`` to that round's ends,
and lets the groups that stopped there go on.  A group that ran further waits, its
rounds already stepped.  The outcome is the lockstep one, trajectory for trajectory;
the messages drop from one per round to about one per trajectory end, which matters
where a message is a network round trip (the Ray samplers).

The hard step limit is kept exactly: groups are never sent past the round at which
the schedule's step count reaches it (``until``), a round that can only move later as
envs stop, so no group steps a round the lockstep evaluation would not have.
"""

from __future__ import annotations

import numpy as np

from rlpyt.samplers.eval import EvalSchedule

__all__ = ["EvalEvents"]


class EvalEvents:
    """The master's side of an evaluation whose groups run until their next trajectory end.

    Args:
        schedule: the evaluation's ``EvalSchedule`` (already ``reset``).
        slices: group key -> ``(lo, hi)``, the global eval ranks of that group's envs.

    Use: while ``not schedule.done``: send each key of ``runnable()`` its go with
    ``until()`` (the group calls ``EvalEnvGroup.run(until, ...)``), ``report`` what
    each returns (its round and ``ended`` flags), then ``advance()``.
    """

    def __init__(self, schedule: EvalSchedule, slices: dict):
        self.schedule, self.slices = schedule, dict(slices)
        self.round = 0  # Rounds decided so far.
        self.at = dict.fromkeys(self.slices, 0)  # Rounds each group has stepped.
        self.pending = {}  # key -> ended flags of the round the group stopped at.

    def _live(self) -> list:
        active = self.schedule.active
        return [k for k, (lo, hi) in self.slices.items() if active[lo:hi].any()]

    def runnable(self) -> list:
        """Groups with active envs that stand at the decided round (the others are ahead)."""
        return [k for k in self._live() if self.at[k] == self.round]

    def until(self) -> int:
        """The round at which the schedule's steps reach its hard limit, if every env
        now active stays active (fewer active envs only move it later)."""
        schedule = self.schedule
        n_active = int(schedule.active.sum())
        remaining = schedule.hard_limit - schedule.steps
        return self.round + max(1, -(-remaining // max(n_active, 1)))

    def report(self, key, round_: int, ended: np.ndarray) -> None:
        """A group stopped after ``round_`` rounds, with these ``ended`` flags."""
        if round_ < self.at[key]:
            raise RuntimeError(f"eval group {key!r} went back from round {self.at[key]} "
                               f"to {round_}")
        self.at[key] = int(round_)
        if np.any(ended):
            self.pending[key] = np.asarray(ended, dtype=bool).copy()

    def advance(self) -> None:
        """Decide the earliest round any live group stopped at: count the quiet rounds
        before it, then apply the serial rule to its trajectory ends."""
        schedule, live = self.schedule, self._live()
        if not live:
            return
        t = min(self.at[k] for k in live)
        if t <= self.round:
            raise RuntimeError(f"eval groups {[k for k in live if self.at[k] <= self.round]} "
                               f"did not step past round {self.round}")
        schedule.steps += int(schedule.active.sum()) * (t - self.round - 1)
        schedule.ended[:] = False
        for k in live:
            if self.at[k] == t and k in self.pending:
                lo, hi = self.slices[k]
                schedule.ended[lo:hi] = self.pending.pop(k)
        schedule.decide()
        self.round = t
