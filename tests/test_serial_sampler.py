"""SerialSampler with the CPU reset / wait-reset collectors and the evaluation collector.

The batch layout is checked against a log that each env keeps of its own steps and
resets, so every invariant is compared with what the env really did.
"""

import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from rlpyt.agents.pg.categorical import CategoricalPgAgent
from rlpyt.envs.base import Env, EnvStep
from rlpyt.envs.gym import make
from rlpyt.envs.traj_info import TrajInfo
from rlpyt.samplers.eval import EvalCollector
from rlpyt.samplers.parallel.cpu.collectors import CpuResetCollector, CpuWaitResetCollector
from rlpyt.samplers.samples import AgentSamplesBsv
from rlpyt.samplers.serial.collectors import SerialEvalCollector
from rlpyt.samplers.serial.sampler import SerialSampler
from rlpyt.spaces.float_box import FloatBox
from rlpyt.spaces.int_box import IntBox
from rlpyt.utils.buffer import torchify_buffer
from rlpyt.utils.collections import namedtuple

# ---------------------------------------------------------------- a recording env


class RecordingEnv(Env):
    """A gym env (``make(**kwargs)``) that logs every step and reset it performs."""

    def __init__(self, registry=None, **kwargs):
        self.env = make(**kwargs)
        self._observation_space = self.env.observation_space
        self._action_space = self.env.action_space
        self.log = []
        if registry is not None:
            registry.append(self)

    def step(self, action):
        step = self.env.step(action)
        self.log.append(dict(kind="step", action=np.array(action), obs=np.array(step.observation),
                             reward=float(step.reward), done=bool(step.done),
                             timeout=bool(step.env_info.timeout)))
        return step

    def reset(self):
        obs = self.env.reset()
        self.log.append(dict(kind="reset", obs=np.array(obs)))
        return obs

    def seed(self, seed):
        self.env.seed(seed)

    @property
    def horizon(self):
        return self.env.horizon

    def close(self):
        self.env.close()


def make_sampler(registry, B=4, T=20, CollectorCls=CpuResetCollector, decorrelation=0,
                 **env_kwargs):
    return SerialSampler(
        EnvCls=RecordingEnv,
        env_kwargs=dict(registry=registry, id="CartPole-v1", **env_kwargs),
        batch_T=T, batch_B=B, CollectorCls=CollectorCls,
        max_decorrelation_steps=decorrelation,
    )


def start(sampler, registry, seed=0, bootstrap_value=False):
    torch.manual_seed(seed)
    agent = CategoricalPgAgent()
    examples = sampler.initialize(agent, seed=seed, bootstrap_value=bootstrap_value)
    envs = registry[: sampler.batch_spec.B]  # then the example env (and eval envs)
    return agent, examples, envs


def snapshot_inputs(sampler):
    obs, act, rew = sampler.agent_inputs
    return obs.copy(), act.copy(), rew.copy()


def sample(sampler, envs, itr):
    """One batch, with each env's log restricted to that batch and the inputs around it."""
    before = snapshot_inputs(sampler)
    for env in envs:
        env.log.clear()
    samples, completed = sampler.obtain_samples(itr)
    return samples, completed, before, snapshot_inputs(sampler)


def steps(log):
    return [e for e in log if e["kind"] == "step"]


# ---------------------------------------------------------------- reset collector


def check_reset_batch(samples, envs, before, after):
    """Every invariant of a reset-collector batch, env by env."""
    agent, env_s = samples.agent, samples.env
    T = env_s.reward.shape[0]
    null = 0  # CartPole's null action
    for b, env in enumerate(envs):
        obs, prev_a, prev_r = before[0][b], before[1][b], before[2][b]
        log = list(env.log)
        for t in range(T):
            np.testing.assert_array_equal(env_s.observation[t, b].numpy(), obs)
            assert agent.prev_action[t, b].item() == prev_a
            assert env_s.prev_reward[t, b].item() == prev_r
            event = log.pop(0)
            assert event["kind"] == "step", (b, t, event)
            assert agent.action[t, b].item() == event["action"]
            assert env_s.reward[t, b].item() == event["reward"]
            assert bool(env_s.done[t, b]) == event["done"]
            assert bool(env_s.env_info.timeout[t, b]) == event["timeout"]
            if event["done"]:
                reset = log.pop(0)
                assert reset["kind"] == "reset"
                obs, prev_a, prev_r = reset["obs"], null, 0.0
            else:
                obs, prev_a, prev_r = event["obs"], event["action"], event["reward"]
        assert not log, f"env {b} did more than the batch shows: {log}"
        np.testing.assert_array_equal(after[0][b], obs)
        assert after[1][b] == prev_a and after[2][b] == prev_r


def test_reset_collector_batch_layout_matches_the_envs():
    registry = []
    sampler = make_sampler(registry, B=4, T=25, decorrelation=10)
    agent, _, envs = start(sampler, registry)
    for itr in range(3):
        samples, completed, before, after = sample(sampler, envs, itr)
        check_reset_batch(samples, envs, before, after)
        # agent_info holds the value of the observation acted on.
        values = agent.value(samples.env.observation, samples.agent.prev_action,
                             samples.env.prev_reward)
        torch.testing.assert_close(samples.agent.agent_info.value, values)
        probs = samples.agent.agent_info.dist_info.prob
        torch.testing.assert_close(probs.sum(-1), torch.ones(25, 4))
    assert samples.env.done.any(), "CartPole with a random policy should end episodes"
    sampler.shutdown()


def test_completed_traj_infos_cover_whole_episodes_including_decorrelation():
    registry = []
    sampler = make_sampler(registry, B=3, T=40, decorrelation=15)
    _, _, envs = start(sampler, registry)
    # Steps of each env's current episode so far (decorrelation steps included).
    ongoing = []
    for env in envs:
        n = 0
        for event in env.log:
            n = 0 if event["kind"] == "reset" else n + 1
        ongoing.append(n)
    assert len(set(ongoing)) > 1, f"decorrelation should put envs out of phase: {ongoing}"
    assert max(ongoing) <= 15
    lengths, reported = [], []
    for itr in range(4):
        samples, completed, _, _ = sample(sampler, envs, itr)
        reported += [(info.Length, info.Return) for info in completed]
        for b, env in enumerate(envs):
            for event in env.log:
                if event["kind"] == "step":
                    ongoing[b] += 1
                    if event["done"]:
                        lengths.append(ongoing[b])
                        ongoing[b] = 0
    assert sorted(reported) == sorted((n, float(n)) for n in lengths)  # reward 1 per step


def test_no_decorrelation_starts_from_reset():
    registry = []
    sampler = make_sampler(registry, B=2, decorrelation=0)
    _, _, envs = start(sampler, registry)
    for env in envs:
        assert [e["kind"] for e in env.log] == ["reset"]
    obs, act, rew = sampler.agent_inputs
    np.testing.assert_array_equal(obs[0], envs[0].log[0]["obs"])
    assert (act == 0).all() and (rew == 0).all()


# ---------------------------------------------------------------- wait-reset collector


def test_wait_reset_collector_keeps_done_envs_idle_until_batch_end():
    registry = []
    # A short time limit so that every env finishes inside the batch at least sometimes.
    sampler = make_sampler(registry, B=4, T=16, CollectorCls=CpuWaitResetCollector,
                           decorrelation=8, max_episode_steps=10)
    assert sampler.mid_batch_reset is False
    _, _, envs = start(sampler, registry)
    n_idle = 0
    for itr in range(4):
        samples, _, before, after = sample(sampler, envs, itr)
        agent, env_s = samples.agent, samples.env
        for b, env in enumerate(envs):
            log = list(env.log)
            obs, prev_a, prev_r = before[0][b], before[1][b], before[2][b]
            done_at = None
            for t in range(16):
                np.testing.assert_array_equal(env_s.observation[t, b].numpy(), obs)
                if done_at is not None:  # idle: no env step, done, zero reward
                    assert bool(env_s.done[t, b]) and env_s.reward[t, b].item() == 0.0
                    assert not bool(env_s.env_info.timeout[t, b]), (itr, t, b)
                    # Masked data, but still consistent: the previous step's reward.
                    assert env_s.prev_reward[t, b].item() == env_s.reward[t - 1, b].item()
                    n_idle += 1
                    continue
                assert agent.prev_action[t, b].item() == prev_a
                assert env_s.prev_reward[t, b].item() == prev_r
                event = log.pop(0)
                assert event["kind"] == "step"
                assert agent.action[t, b].item() == event["action"]
                assert env_s.reward[t, b].item() == event["reward"]
                assert bool(env_s.done[t, b]) == event["done"]
                assert bool(env_s.env_info.timeout[t, b]) == event["timeout"]
                obs, prev_a, prev_r = event["obs"], event["action"], event["reward"]
                if event["done"]:
                    done_at = t  # the final observation stays in the batch
            if done_at is not None:
                # Reset between batches: the next batch starts an episode.
                reset = log.pop(0)
                assert reset["kind"] == "reset"
                np.testing.assert_array_equal(after[0][b], reset["obs"])
                assert after[1][b] == 0 and after[2][b] == 0.0
            else:
                np.testing.assert_array_equal(after[0][b], obs)
            assert not log
    assert n_idle > 0


# ---------------------------------------------------------------- bootstrap values


@pytest.mark.parametrize("CollectorCls", [CpuResetCollector, CpuWaitResetCollector])
def test_bootstrap_and_timeout_values(CollectorCls):
    registry = []
    sampler = make_sampler(registry, B=4, T=24, CollectorCls=CollectorCls, decorrelation=5,
                           max_episode_steps=10)
    agent, _, envs = start(sampler, registry, bootstrap_value=True)
    n_timeouts = 0
    for itr in range(3):
        samples, _, _, after = sample(sampler, envs, itr)
        assert isinstance(samples.agent, AgentSamplesBsv)
        timeout = samples.env.env_info.timeout
        tv = samples.agent.timeout_value
        assert tv.shape == (24, 4) and samples.agent.bootstrap_value.shape == (4,)
        assert (tv[~timeout] == 0).all()
        for b, env in enumerate(envs):
            step_events = steps(env.log)
            for t in range(24):
                if not timeout[t, b]:
                    continue
                n_timeouts += 1
                final_obs = torch.from_numpy(step_events[t]["obs"])[None]
                expected = agent.value(final_obs, torch.zeros(1, dtype=torch.long),
                                       torch.zeros(1))
                assert tv[t, b].item() != 0.0
                assert tv[t, b].item() == pytest.approx(expected.item(), abs=1e-6)
        if CollectorCls is CpuResetCollector:
            expected = agent.value(*torchify_buffer(sampler.agent_inputs))
            torch.testing.assert_close(samples.agent.bootstrap_value, expected)
    assert n_timeouts > 0


# ---------------------------------------------------------------- seeds


def all_leaves(x):
    if x is None:
        return []
    if isinstance(x, tuple):
        return [leaf for v in x for leaf in all_leaves(v)]
    return [x.clone()]


def run_batches(seed, n=3, CollectorCls=CpuResetCollector):
    registry = []
    sampler = make_sampler(registry, B=3, T=15, CollectorCls=CollectorCls, decorrelation=20)
    _, _, envs = start(sampler, registry, seed=seed, bootstrap_value=True)
    out = []
    for itr in range(n):
        samples, completed, _, _ = sample(sampler, envs, itr)
        out.append((all_leaves(samples), [dict(i) for i in completed]))
    sampler.shutdown()
    return out


@pytest.mark.parametrize("CollectorCls", [CpuResetCollector, CpuWaitResetCollector])
def test_same_seed_gives_identical_batches(CollectorCls):
    first, second = run_batches(3, CollectorCls=CollectorCls), run_batches(
        3, CollectorCls=CollectorCls)
    for (leaves_a, infos_a), (leaves_b, infos_b) in zip(first, second):
        assert len(leaves_a) == len(leaves_b)
        for a, b in zip(leaves_a, leaves_b):
            assert torch.equal(a, b)
        assert infos_a == infos_b
    other = run_batches(4, CollectorCls=CollectorCls)
    assert not all(torch.equal(a, b) for a, b in zip(first[0][0], other[0][0]))


# ---------------------------------------------------------------- examples and errors


def test_examples_and_batch_spec():
    registry = []
    sampler = make_sampler(registry, B=2, T=7)
    _, examples, _ = start(sampler, registry)
    assert set(examples) >= {"observation", "reward", "done", "env_info", "action", "agent_info"}
    assert examples["observation"].shape == (4,) and examples["reward"].dtype == np.float32
    assert sampler.batch_size == 14 and sampler.batch_spec.size == 14
    with pytest.raises(RuntimeError, match="eval_n_envs=0"):
        sampler.evaluate_agent(0)
    sampler.shutdown()
    assert sampler.envs == []


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(batch_T=0), ValueError, "batch_T=0"),
        (dict(batch_B=-2), ValueError, "batch_B=-2"),
        (dict(batch_T=2.5), ValueError, "batch_T=2.5"),
        (dict(batch_B=True), ValueError, "batch_B=True"),
        (dict(eval_n_envs=2), ValueError, "eval_max_steps or eval_max_trajectories"),
        (dict(eval_n_envs=-1), ValueError, "eval_n_envs=-1"),
        (dict(eval_n_envs=1, eval_max_steps=0), ValueError, "eval_max_steps=0"),
        (dict(eval_n_envs=1, eval_max_trajectories=-3), ValueError, "eval_max_trajectories=-3"),
        (dict(max_decorrelation_steps=-1), ValueError, "max_decorrelation_steps=-1"),
        (dict(EnvCls="CartPole-v1"), TypeError, "EnvCls='CartPole-v1'"),
        (dict(env_kwargs=["id"]), TypeError, "env_kwargs must be a dict"),
    ],
)
def test_bad_sampler_arguments(kwargs, error, match):
    args = dict(EnvCls=make, env_kwargs=dict(id="CartPole-v1"), batch_T=5, batch_B=2)
    args.update(kwargs)
    with pytest.raises(error, match=match):
        SerialSampler(**args)


def test_eval_collector_needs_a_cap():
    env = FakeEnv([3])
    with pytest.raises(ValueError, match="max_steps or max_trajectories"):
        EvalCollector([env], agent=None, TrajInfoCls=TrajInfo)


# ---------------------------------------------------------------- evaluation counting rule

FakeInfo = namedtuple("FakeInfo", ["timeout"])


class FakeEnv(Env):
    """Episodes of given lengths (cycled), reward 1 per step; logs starts and ends.

    ``clock`` (a one-element list shared by all envs) counts env steps of all envs, so
    events can be put in one order.
    """

    def __init__(self, lengths, clock=None, events=None, name=0):
        self._observation_space = FloatBox(low=-1e9, high=1e9, shape=(2,))
        self._action_space = IntBox(0, 2)
        self.lengths, self.clock = list(lengths), clock if clock is not None else [0]
        self.events, self.name = (events if events is not None else []), name
        self.episode, self.t = -1, 0

    def reset(self):
        self.episode += 1
        self.t = 0
        self._reset_at = len(self.events)
        self.events.append(("reset", self.name, self.clock[0]))
        return np.array([self.episode, 0], np.float32)

    def step(self, action):
        assert self.t < self.length, "stepped after done"
        if self.t == 0:  # the reset started a trajectory: mark it, at the reset's time
            _, name, at = self.events[self._reset_at]
            self.events[self._reset_at] = ("start", name, at)
        self.t += 1
        self.clock[0] += 1
        done = self.t == self.length
        if done:
            self.events.append(("end", self.name, self.clock[0]))
        return EnvStep(np.array([self.episode, self.t], np.float32), 1.0, done, FakeInfo(False))

    @property
    def length(self):
        return self.lengths[self.episode % len(self.lengths)]


def eval_agent(env):
    agent = CategoricalPgAgent()
    agent.initialize(env.spaces)
    return agent


def test_eval_reports_long_trajectories_started_in_the_window():
    clock, events = [0], []
    envs = [FakeEnv([100], clock, events, 0), FakeEnv([5], clock, events, 1)]
    collector = SerialEvalCollector(envs, eval_agent(envs[0]), TrajInfo, max_steps=50)
    infos = collector.collect_evaluation(0)
    lengths = sorted(info.Length for info in infos)
    # Env 1 restarts at total steps 10, 20, 30, 40 (< 50), not at 50; env 0's one long
    # episode started in the window and is reported, not dropped for being long.
    assert lengths == [5, 5, 5, 5, 5, 100]
    assert all(info.Return == info.Length for info in infos)


def test_eval_trajectory_cap():
    envs = [FakeEnv([100]), FakeEnv([5]), FakeEnv([7])]
    collector = SerialEvalCollector(envs, eval_agent(envs[0]), TrajInfo, max_trajectories=4)
    lengths = sorted(info.Length for info in collector.collect_evaluation(0))
    assert lengths == [5, 5, 7, 100]  # the 4th start went to env 1 (ends first)
    two = SerialEvalCollector(envs, eval_agent(envs[0]), TrajInfo, max_trajectories=2)
    assert sorted(info.Length for info in two.collect_evaluation(0)) == [5, 100]


def test_eval_hard_limit_drops_endless_trajectories_with_a_warning():
    envs = [FakeEnv([10**9]), FakeEnv([3])]
    collector = SerialEvalCollector(envs, eval_agent(envs[0]), TrajInfo, max_steps=20,
                                    hard_limit_factor=2)
    with pytest.warns(UserWarning, match="hard limit of 40"):
        infos = collector.collect_evaluation(0)
    # Env 1 restarts at total steps 6, 12, 18 (< 20); env 0 never ends and is dropped.
    assert sorted(info.Length for info in infos) == [3] * 4


@settings(max_examples=30, deadline=None)
@given(
    lengths=st.lists(st.lists(st.integers(1, 25), min_size=1, max_size=4), min_size=1,
                     max_size=4),
    max_steps=st.one_of(st.none(), st.integers(1, 80)),
    max_trajectories=st.one_of(st.none(), st.integers(1, 8)),
)
def test_eval_counting_rule_property(lengths, max_steps, max_trajectories):
    if max_steps is None and max_trajectories is None:
        max_trajectories = 3
    clock, events = [0], []
    envs = [FakeEnv(ls, clock, events, i) for i, ls in enumerate(lengths)]
    collector = SerialEvalCollector(envs, eval_agent(envs[0]), TrajInfo, max_steps=max_steps,
                                    max_trajectories=max_trajectories, hard_limit_factor=1000)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no trajectory may hit the hard limit here
        infos = collector.collect_evaluation(0)
    starts = [e for e in events if e[0] == "start"]
    ends = [e for e in events if e[0] == "end"]
    # All started trajectories finished and are reported, whole.
    assert len(infos) == len(starts) == len(ends)
    expected_lengths = []
    for env in envs:
        if any(e[1] == env.name for e in starts):  # it ran episodes 0 .. env.episode
            expected_lengths += [env.lengths[k % len(env.lengths)] for k in range(env.episode + 1)]
    assert sorted(info.Length for info in infos) == sorted(expected_lengths)
    # Caps decide starts: at most max_trajectories, later ones only inside the window.
    cap_t = max_trajectories if max_trajectories is not None else float("inf")
    cap_s = max_steps if max_steps is not None else float("inf")
    n_first = min(len(envs), cap_t)
    assert len({e[1] for e in starts}) == n_first
    assert len(starts) <= cap_t
    first = {}
    for e in starts:
        first.setdefault(e[1], e)
    later = [e for e in starts if first[e[1]] is not e]
    assert all(clock_at < cap_s for _, _, clock_at in later)
    # No bias: an env went idle only when a cap was reached at the end of its trajectory.
    for env in envs:
        own = [i for i, e in enumerate(events) if e[1] == env.name and e[0] != "reset"]
        if not own:
            continue
        last = events[own[-1]]
        assert last[0] == "end"
        n_started = sum(1 for e in events[: own[-1]] if e[0] == "start")
        assert last[2] >= cap_s or n_started >= cap_t, (env.name, last, n_started)


def test_evaluation_leaves_the_sampling_rnn_state_alone():
    from rlpyt.agents.pg.categorical import RecurrentCategoricalPgAgent

    sampler = SerialSampler(EnvCls=make, env_kwargs=dict(id="CartPole-v1"), batch_T=6,
                            batch_B=2, CollectorCls=CpuWaitResetCollector, eval_n_envs=2,
                            eval_max_trajectories=2, max_decorrelation_steps=0)
    torch.manual_seed(0)
    agent = RecurrentCategoricalPgAgent()
    sampler.initialize(agent, seed=0)
    agent.sample_mode(0)
    sampler.obtain_samples(0)
    state = [x.clone() for x in agent.prev_rnn_state]
    assert any(x.abs().sum() > 0 for x in state)
    infos = sampler.evaluate_agent(0)  # called directly, without agent.eval_mode first
    assert len(infos) == 2
    agent.sample_mode(1)
    for before, now in zip(state, agent.prev_rnn_state):
        assert torch.equal(before, now)
    sampler.shutdown()


@pytest.mark.parametrize("module", [
    "rlpyt.samplers.base", "rlpyt.samplers.samples_buffer", "rlpyt.samplers.samples",
    "rlpyt.samplers.collections", "rlpyt.samplers.collector_base", "rlpyt.samplers.eval",
    "rlpyt.samplers.serial.sampler",
    "rlpyt.samplers.serial.collectors", "rlpyt.samplers.parallel.cpu.collectors",
    "rlpyt.utils.collections", "rlpyt.utils.buffer", "rlpyt.utils.tensor", "rlpyt.utils.array",
    "rlpyt.runners.minibatch_rl", "rlpyt.rollout", "rlpyt.agents.base",
])
def test_star_imports_name_only_what_exists(module):
    import importlib

    mod = importlib.import_module(module)
    missing = [name for name in mod.__all__ if not hasattr(mod, name)]
    assert not missing, f"{module}.__all__ names undefined {missing}"


class RecordingTrajInfo(TrajInfo):
    """Overrides ``step``, so collectors must pass it every input, agent_info included."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._seen = []

    def step(self, observation, action, reward, done, agent_info, env_info):
        self._seen.append((np.array(observation), int(action), float(agent_info.value),
                           np.array(agent_info.dist_info.prob)))
        return super().step(observation, action, reward, done, agent_info, env_info)


@pytest.mark.parametrize("CollectorCls", [CpuResetCollector, CpuWaitResetCollector])
def test_traj_info_subclass_gets_each_envs_step_inputs(CollectorCls):
    def run(TrajInfoCls):
        sampler = SerialSampler(EnvCls=make, env_kwargs=dict(id="CartPole-v1"), batch_T=40,
                                batch_B=3, CollectorCls=CollectorCls, TrajInfoCls=TrajInfoCls,
                                max_decorrelation_steps=0)
        torch.manual_seed(0)
        sampler.initialize(CategoricalPgAgent(), seed=1)
        samples, completed = sampler.obtain_samples(0)
        traj_infos = list(sampler.traj_infos)
        sampler.shutdown()
        return samples, completed, traj_infos

    plain_samples, plain_completed, _ = run(TrajInfo)
    samples, completed, current = run(RecordingTrajInfo)
    # The base TrajInfo (whose step ignores agent_info) gives the same statistics.
    stats = ("Length", "Return", "NonzeroRewards", "DiscountedReturn")
    assert [[i[k] for k in stats] for i in completed] == [
        [i[k] for k in stats] for i in plain_completed]
    assert torch.equal(samples.agent.action, plain_samples.agent.action)
    # Every env's current trajectory saw exactly its own rows of the batch.
    env, agent = samples.env, samples.agent
    assert any(info._seen for info in current)
    for b, info in enumerate(current):
        n = len(info._seen)
        t0 = 40 - n if CollectorCls is CpuResetCollector else 0
        for k, (obs, action, value, prob) in enumerate(info._seen):
            t = t0 + k
            np.testing.assert_array_equal(obs, env.observation[t, b].numpy())
            assert action == agent.action[t, b].item()
            assert value == agent.agent_info.value[t, b].item()
            np.testing.assert_array_equal(prob, agent.agent_info.dist_info.prob[t, b].numpy())


def test_pg_agent_step_returns_detached_outputs():
    """A Gaussian agent's log_std is a view of a parameter (requires_grad even under
    no_grad); step must hand the sampler detached tensors (numpy views need them)."""
    from rlpyt.agents.pg.gaussian import GaussianPgAgent

    env = make(id="Pendulum-v1")
    agent = GaussianPgAgent()
    agent.initialize(env.spaces)
    agent.sample_mode(0)
    obs = torch.zeros(3, *env.spaces.observation.shape)
    step = agent.step(obs, torch.zeros(3, 1), torch.zeros(3))
    leaves = [step.action, *step.agent_info.dist_info, step.agent_info.value]
    assert not any(x.requires_grad for x in leaves)
    assert step.agent_info.dist_info.log_std.shape == (3, 1)


def test_gaussian_pg_agent_evaluates_with_its_mean_when_asked():
    """``eval_deterministic``: evaluation acts with the mean; training still samples, and
    so does evaluation without the flag."""
    from rlpyt.agents.pg.gaussian import GaussianPgAgent

    env = make(id="Pendulum-v1")
    obs = torch.randn(4, *env.spaces.observation.shape)
    for deterministic in (True, False):
        torch.manual_seed(0)
        agent = GaussianPgAgent(eval_deterministic=deterministic)
        agent.initialize(env.spaces)
        agent.eval_mode(0)
        step = agent.step(obs, torch.zeros(4, 1), torch.zeros(4))
        mean = step.agent_info.dist_info.mean
        assert torch.equal(step.action, mean) == deterministic
        agent.sample_mode(0)
        step = agent.step(obs, torch.zeros(4, 1), torch.zeros(4))
        assert not torch.equal(step.action, step.agent_info.dist_info.mean)


def test_pg_agent_value_runs_the_value_part_alone_only_when_that_is_safe():
    """``agent.value`` (bootstrap values) calls the model's ``value`` method, which skips
    the policy MLP, unless a subclass overrode ``forward`` alone or the model has hooks."""
    from rlpyt.agents.pg.base import value_only
    from rlpyt.models.pg.mlp import CategoricalPgMlpModel

    class DoubledValue(CategoricalPgMlpModel):  # forward changed, value inherited
        def forward(self, observation, prev_action, prev_reward):
            pi, v = super().forward(observation, prev_action, prev_reward)
            return pi, 2 * v

    env = make(id="CartPole-v1")
    obs = torch.randn(5, 4)
    inputs = (obs, torch.zeros(5, dtype=torch.long), torch.zeros(5))
    for ModelCls, direct in [(CategoricalPgMlpModel, True), (DoubledValue, False)]:
        agent = CategoricalPgAgent(ModelCls=ModelCls)
        agent.initialize(env.spaces)
        assert (value_only(agent.model) is not None) == direct
        with torch.no_grad():
            expected = agent.model(*inputs)[-1]
        torch.testing.assert_close(agent.value(*inputs), expected, rtol=0, atol=0)
    agent = CategoricalPgAgent()
    agent.initialize(env.spaces)
    calls = []
    agent.model.register_forward_hook(lambda *args: calls.append(1))
    assert value_only(agent.model) is None
    agent.value(*inputs)
    assert calls == [1]


def test_eval_collector_passes_agent_info_only_to_traj_infos_that_read_it():
    from rlpyt.envs.traj_info import reads_agent_info

    assert not reads_agent_info(TrajInfo()) and reads_agent_info(RecordingTrajInfo())

    def run(TrajInfoCls):
        envs = [make(id="CartPole-v1") for _ in range(2)]
        for i, env in enumerate(envs):
            env.seed(i)
        agent = CategoricalPgAgent()
        torch.manual_seed(0)
        agent.initialize(envs[0].spaces)
        torch.manual_seed(1)
        return SerialEvalCollector(envs, agent, TrajInfoCls, max_trajectories=3
                                   ).collect_evaluation(0)

    plain, recorded = run(TrajInfo), run(RecordingTrajInfo)
    assert [(t.Length, t.Return) for t in plain] == [(t.Length, t.Return) for t in recorded]
    assert all(len(t._seen) == t.Length for t in recorded)
