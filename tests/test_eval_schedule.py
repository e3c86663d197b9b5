"""The lockstep evaluation of the parallel samplers against the serial evaluation loop.

``EvalSchedule`` (the master's decisions) with the eval envs split into any number of
``EvalEnvGroup``s (one per worker), stepped round by round in one process, must
report exactly the serial ``SerialEvalCollector``'s trajectories, in its order, and
leave every env after the same number of episodes.  The same holds when the groups
run ahead to their next trajectory end (``EvalEvents``, the Ray samplers' way).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_serial_sampler import FakeEnv, eval_agent

from rlpyt.envs.traj_info import TrajInfo
from rlpyt.samplers.eval import EvalSchedule, hard_step_limit, merge_completed
from rlpyt.samplers.parallel.base import split_evenly
from rlpyt.samplers.parallel.worker_eval import EvalEnvGroup
from rlpyt.samplers.ray_.eval_events import EvalEvents
from rlpyt.samplers.serial.collectors import SerialEvalCollector


def _groups(envs, n_groups, max_steps, max_trajectories, hard_limit):
    schedule = EvalSchedule(len(envs), max_steps, max_trajectories, hard_limit)
    groups = []
    for lo, hi in split_evenly(len(envs), n_groups):
        n = hi - lo
        groups.append(EvalEnvGroup(
            envs[lo:hi], range(lo, hi), TrajInfo, schedule,
            observation=np.zeros((n, 2), np.float32), action=np.zeros(n, np.int64),
            reward=np.zeros(n, np.float32), reset=np.zeros(n, bool)))
    schedule.reset()
    for group in groups:
        group.start()
    return groups, schedule


def lockstep_evaluation(envs, n_groups, max_steps, max_trajectories, hard_limit):
    groups, schedule = _groups(envs, n_groups, max_steps, max_trajectories, hard_limit)
    # Worker order within a round must not matter: step the groups last to first.
    while not schedule.done:
        for group in reversed(groups):
            if group.any_active:
                group.step()
        schedule.decide()
        for group in reversed(groups):
            group.finish()
    return merge_completed([g.completed for g in groups]), schedule


def event_evaluation(envs, n_groups, max_steps, max_trajectories, hard_limit):
    """Groups run until their next trajectory end; the master replays the rounds."""
    groups, schedule = _groups(envs, n_groups, max_steps, max_trajectories, hard_limit)
    slices = {k: (g.env_ranks[0], g.env_ranks[-1] + 1) for k, g in enumerate(groups)}
    events = EvalEvents(schedule, slices)
    while not schedule.done:
        until = events.until()
        for k in reversed(events.runnable()):
            groups[k].run(until)
            events.report(k, groups[k].round, groups[k].ended)
        events.advance()
    for group in groups:
        group.finish()
    return merge_completed([g.completed for g in groups]), schedule


@settings(max_examples=80, deadline=None)
@given(
    lengths=st.lists(st.lists(st.integers(1, 25), min_size=1, max_size=4), min_size=1,
                     max_size=6),
    max_steps=st.one_of(st.none(), st.integers(1, 80)),
    max_trajectories=st.one_of(st.none(), st.integers(1, 9)),
    n_groups=st.integers(1, 6),
    evaluation=st.sampled_from([lockstep_evaluation, event_evaluation]),
)
def test_lockstep_groups_give_the_serial_evaluation(lengths, max_steps, max_trajectories,
                                                    n_groups, evaluation):
    if max_steps is None and max_trajectories is None:
        max_trajectories = 3
    n_groups = min(n_groups, len(lengths))
    serial_envs = [FakeEnv(ls, name=i) for i, ls in enumerate(lengths)]
    serial = SerialEvalCollector(serial_envs, eval_agent(serial_envs[0]), TrajInfo,
                                 max_steps=max_steps, max_trajectories=max_trajectories,
                                 hard_limit_factor=1000).collect_evaluation(0)
    envs = [FakeEnv(ls, name=i) for i, ls in enumerate(lengths)]
    limit = hard_step_limit(max_steps, max_trajectories, None, factor=1000)
    parallel, schedule = evaluation(envs, n_groups, max_steps, max_trajectories, limit)
    assert [(i.Length, i.Return) for i in parallel] == [(i.Length, i.Return) for i in serial]
    assert [e.episode for e in envs] == [e.episode for e in serial_envs]
    assert schedule.n_dropped == 0


@pytest.mark.parametrize("evaluation", [lockstep_evaluation, event_evaluation])
def test_hard_limit_drops_what_the_serial_evaluation_drops(evaluation):
    envs = [FakeEnv([10**9]), FakeEnv([3])]
    parallel, schedule = evaluation(envs, 2, 20, None, hard_limit=40)
    # As in tests/test_serial_sampler.py: env 1 restarts at total steps 6, 12, 18 (< 20)
    # and then stops; env 0 never ends and is dropped at the hard limit.
    assert [i.Length for i in parallel] == [3] * 4
    assert schedule.n_dropped == 1
