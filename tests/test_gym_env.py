"""GymEnvWrapper, make(), env_info schemas and TrajInfo."""

from __future__ import annotations

import pickle
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces as gs

from rlpyt.envs.base import Env, EnvSpaces, EnvStep
from rlpyt.envs.gym import EnvInfoWrapper, GymEnvWrapper, info_to_nt, make
from rlpyt.envs.traj_info import TrajInfo
from rlpyt.spaces.composite import Composite
from rlpyt.spaces.float_box import FloatBox
from rlpyt.spaces.int_box import IntBox


class ScriptedEnv(gym.Env):
    """Dict observations, MultiDiscrete actions, infos and episode ends set by the test."""

    observation_space = gs.Dict(
        {
            "pos": gs.Box(-1.0, 1.0, shape=(2,), dtype=np.float64),
            "count": gs.Discrete(100),
            "flags": gs.MultiBinary(3),
        }
    )
    action_space = gs.MultiDiscrete([3, 2])

    def __init__(self, infos=(), reset_info=None, terminate_at=None, truncate_at=None):
        self.infos = list(infos)
        self.reset_info = dict(reset_info or {})
        self.terminate_at = terminate_at
        self.truncate_at = truncate_at
        self.actions = []

    def _obs(self):
        return {
            "pos": self.np_random.uniform(-1, 1, size=2),
            "count": self.t,
            "flags": self.np_random.integers(0, 2, size=3, dtype=np.int8),
        }

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), dict(self.reset_info)

    def step(self, action):
        assert self.action_space.contains(action), action
        self.actions.append(action)
        info = dict(self.infos[self.t]) if self.t < len(self.infos) else {}
        self.t += 1
        terminated = self.terminate_at is not None and self.t >= self.terminate_at
        truncated = self.truncate_at is not None and self.t >= self.truncate_at
        return self._obs(), 1.0, terminated, truncated, info


gym.register("RlpytTest/Scripted-v0", entry_point=ScriptedEnv, max_episode_steps=7)


def run_steps(env, n):
    return [env.step(env.action_space.sample()) for _ in range(n)]


# ----- Basic wrapping -------------------------------------------------------------


def test_cartpole():
    env = make("CartPole-v1")
    assert isinstance(env, Env) and env.horizon == 500
    assert isinstance(env.spaces, EnvSpaces)
    assert env.action_space.n == 2 and isinstance(env.action_space.space, IntBox)
    assert isinstance(env.observation_space.space, FloatBox)
    env.seed(0)
    obs = env.reset()
    assert obs.dtype == np.float32 and obs.shape == (4,)
    step = env.step(np.array(1))
    assert isinstance(step, EnvStep) and step.env_info.timeout is False
    assert step.done is False and step.reward == 1.0
    assert env.observation_space.contains(step.observation)
    env.close()


def test_make_passes_kwargs_and_id_keyword():
    env = make(id="Pendulum-v1", g=3.0, max_episode_steps=20)
    assert env.env.unwrapped.g == 3.0 and env.horizon == 20
    assert env.action_space.space.dtype == np.float32
    env.reset()
    step = env.step(np.array([0.5], dtype=np.float32))
    assert step.observation.dtype == np.float32


def test_unknown_id_suggests_close_ids():
    with pytest.raises(ValueError, match=r"unknown Gymnasium env id 'Cartpole-v1'.*'CartPole-v1'"):
        make("Cartpole-v1")
    with pytest.raises(ValueError, match="CartPole-v1"):
        make("CartPole-v9")


def test_pendulum_truncation_is_a_timeout():
    env = make("Pendulum-v1")
    assert env.horizon == 200
    env.reset()
    steps = run_steps(env, 200)
    assert not any(s.done for s in steps[:-1])
    assert steps[-1].done and steps[-1].env_info.timeout


def test_cartpole_termination_is_not_a_timeout():
    env = make("CartPole-v1")
    env.seed(1)
    env.reset()
    steps = 0
    while True:
        step = env.step(np.array(1))  # Always push right: the pole falls quickly.
        steps += 1
        if step.done:
            break
    assert steps < 100 and step.env_info.timeout is False


def test_terminated_and_truncated_together_is_not_a_timeout():
    env = GymEnvWrapper(ScriptedEnv(terminate_at=3, truncate_at=3))
    env.reset()
    last = run_steps(env, 3)[-1]
    assert last.done and last.env_info.timeout is False
    env = GymEnvWrapper(ScriptedEnv(truncate_at=3))
    env.reset()
    last = run_steps(env, 3)[-1]
    assert last.done and last.env_info.timeout is True


def test_dict_observation_and_multidiscrete_action():
    env = make("RlpytTest/Scripted-v0")
    assert env.horizon == 7
    space = env.observation_space.space
    assert isinstance(space, Composite) and space.names == ("count", "flags", "pos")
    obs = env.reset()
    assert type(obs).__name__ == "obs" and obs.pos.dtype == np.float32
    assert space.contains(obs)
    env.step(np.array([2, 1], dtype=np.int64))
    action = env.env.unwrapped.actions[-1]
    assert action.dtype == np.int64 and action.tolist() == [2, 1]
    steps = run_steps(env, 6)
    assert [s.done for s in steps] == [False] * 5 + [True]
    assert steps[-1].env_info.timeout  # the registered TimeLimit of 7 steps
    assert pickle.loads(pickle.dumps(steps[-1])).observation.count == 7


def test_env_without_time_limit_has_no_horizon():
    assert GymEnvWrapper(ScriptedEnv()).horizon is None
    wrapped = GymEnvWrapper(gym.wrappers.TimeLimit(ScriptedEnv(), max_episode_steps=4))
    assert wrapped.horizon == 4


# ----- Seeding -------------------------------------------------------------------


def observations(env, n_resets=2, n_steps=3):
    out = []
    for _ in range(n_resets):
        out.append(env.reset())
        out.extend(s.observation for s in run_steps(env, n_steps))
    return np.stack(out)


def test_seed_makes_next_reset_reproducible_and_later_resets_continue():
    a, b = make("CartPole-v1"), make("CartPole-v1")
    a.seed(7)
    b.seed(7)
    obs_a, obs_b = observations(a), observations(b)
    np.testing.assert_array_equal(obs_a, obs_b)
    assert not np.array_equal(obs_a[0], obs_a[4])  # the second reset continues the RNG
    a.seed(8)
    assert not np.array_equal(a.reset(), obs_a[0])
    a.seed(7)
    np.testing.assert_array_equal(a.reset(), obs_a[0])


def test_seed_seeds_action_space_samples():
    a, b = make("Pendulum-v1"), make("Pendulum-v1")
    a.seed(3)
    b.seed(3)
    assert np.array_equal(a.action_space.sample(), b.action_space.sample())
    assert a.env.action_space.sample() == pytest.approx(b.env.action_space.sample())


# ----- env_info schema ---------------------------------------------------------------


def test_info_schema_from_reset_and_first_step():
    infos = [
        {"score": 1.5, "TimeLimit.truncated": False, "name": "level1", "stats": {"hp": 3}},
        {"score": 2.0, "name": "level1"},  # TimeLimit.truncated and stats missing
        {"score": 3.0, "bonus": 7, "more": 1},  # new keys after the schema was fixed
        {"score": 4.0, "bonus": 8},
    ]
    env = GymEnvWrapper(ScriptedEnv(infos=infos, reset_info={"level": 2, "_seed": 9}))
    env.reset()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        steps = run_steps(env, 4)
    messages = [str(w.message) for w in caught]
    info = steps[0].env_info
    assert info._fields == ("level", "seed", "score", "TimeLimit_truncated", "stats", "timeout")
    assert info.level == 0 and info.score == 1.5 and info.stats.hp == 3
    assert steps[1].env_info.TimeLimit_truncated == 0 and steps[1].env_info.stats.hp == 0
    assert steps[1].env_info.level == 0  # reset-only key: null value on steps
    assert type(steps[1].env_info.stats.hp) is np.ndarray
    assert all(s.env_info._fields == info._fields for s in steps)
    # One warning for the dropped string, one per new key (not repeated at step 4).
    assert sum("non-numeric" in m and "'name' (str)" in m for m in messages) == 1
    assert sum("'bonus'" in m for m in messages) == 1
    assert sum("'more'" in m for m in messages) == 1
    assert len(messages) == 3


def test_info_example_fixes_schema():
    infos = [{}, {"episode": {"r": 5.0, "l": 10}}]
    env = GymEnvWrapper(
        ScriptedEnv(infos=infos), info_example={"episode": {"r": 0.0, "l": 0}, "x": [0.0, 0.0]}
    )
    env.reset()
    first, second = run_steps(env, 2)
    assert first.env_info._fields == ("episode", "x", "timeout")
    assert first.env_info.episode.r == 0.0 and np.array_equal(first.env_info.x, [0.0, 0.0])
    assert second.env_info.episode.r == 5.0 and second.env_info.episode.l == 10
    assert pickle.loads(pickle.dumps(second.env_info)).episode.l == 10


def test_info_timeout_key_is_replaced():
    env = GymEnvWrapper(ScriptedEnv(infos=[{"timeout": 5}]))
    env.reset()
    info = run_steps(env, 1)[0].env_info
    assert info._fields == ("timeout",) and info.timeout is False


def test_make_with_info_example():
    env = make("CartPole-v1", info_example={"extra": 0.0})
    env.reset()
    assert env.step(np.array(0)).env_info._fields == ("extra", "timeout")


def test_info_to_nt_and_env_info_wrapper():
    nt = info_to_nt({"a.b": 1, "nested": {"class": 2.0}, "s": "text"})
    assert nt._fields == ("a_b", "nested", "s") and nt.nested.class_ == 2.0 and nt.s == "text"
    assert pickle.loads(pickle.dumps(nt)).nested.class_ == 2.0
    assert info_to_nt(3) == 3

    env = EnvInfoWrapper(ScriptedEnv(infos=[{"a": 1}]), {"a": 0, "b": np.ones(2), "c": {"d": 1}})
    _, reset_info = env.reset()
    assert reset_info["a"] == 0 and np.array_equal(reset_info["b"], [0, 0])
    info = env.step(np.array([0, 0]))[-1]
    assert info["a"] == 1 and info["c"] == {"d": 0}


# ----- TrajInfo -----------------------------------------------------------------


def test_traj_info_matches_plain_loop():
    rng = np.random.default_rng(0)
    rewards = rng.choice([0.0, 1.0, -2.5], size=50)
    discount = 0.9
    traj = TrajInfo(discount=discount)
    for r in rewards:
        assert traj.step(None, None, r, False, None, None) is traj
    expected = 0.0
    for t, r in enumerate(rewards):
        expected += discount**t * r
    assert traj.Length == 50
    assert traj.Return == pytest.approx(rewards.sum())
    assert traj.NonzeroRewards == int(np.count_nonzero(rewards))
    assert traj.DiscountedReturn == pytest.approx(expected)
    assert traj.terminate(None) is traj
    clone = pickle.loads(pickle.dumps(traj))
    assert type(clone) is TrajInfo and clone == traj and clone.Return == traj.Return
    assert TrajInfo().DiscountedReturn == 0 and TrajInfo(tag="x").tag == "x"


class RecordingCartPole(gym.Wrapper):
    """Records the actions the Gymnasium env receives."""

    def __init__(self, env):
        super().__init__(env)
        self.received = []

    def step(self, action):
        self.received.append(action)
        return self.env.step(action)


def test_discrete_actions_reach_the_env_in_gymnasium_form():
    inner = RecordingCartPole(gym.make("CartPole-v1"))
    env = GymEnvWrapper(inner)
    env.seed(0)
    env.reset()
    env.step(np.int64(1))  # a sampler buffer's scalar: already what Discrete.sample() gives
    env.step(np.array(0))
    env.step(1)
    env.step(np.int32(1))
    first, *rest = inner.received
    assert type(first) is np.int64 and first == 1
    assert [type(a) for a in rest] == [int, int, int] and rest == [0, 1, 1]
    with pytest.raises(ValueError, match="one integer"):
        env.step(np.array([0, 1]))


def test_discrete_action_with_start_is_shifted():
    inner = RecordingCartPole(gym.make("CartPole-v1"))
    inner.action_space = gs.Discrete(2, start=5)
    env = GymEnvWrapper(inner)
    assert env._revert_action(np.int64(1)) == 6


def test_info_schema_pickles_with_its_class():
    env = make("RlpytTest/Scripted-v0", info_example={"lives": 3, "score": 1.5})
    env.reset()
    clone = pickle.loads(pickle.dumps(env._info_schema))
    info = clone.make({"lives": 2}, True)
    assert info == env._info_schema.make({"lives": 2}, True)
    assert info._fields == ("lives", "score", "timeout") and info.lives == 2 and info.timeout
    assert clone.make({}, False).score == 0


class RecordingBoxEnv(gym.Env):
    """A float Box action space with one unbounded dimension; records what it receives."""

    observation_space = gs.Box(-1.0, 1.0, shape=(1,), dtype=np.float32)
    action_space = gs.Box(np.array([-1.0, 0.0, -np.inf], dtype=np.float32),
                          np.array([1.0, 2.0, np.inf], dtype=np.float32))

    def __init__(self):
        self.received = []

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self.received.append(action)
        return np.zeros(1, np.float32), 0.0, False, False, {}


def test_box_actions_are_clipped_to_the_bounds_and_the_callers_array_is_kept():
    inner = RecordingBoxEnv()
    env = GymEnvWrapper(inner)
    env.reset()
    action = np.array([3.0, -0.5, -1e6], dtype=np.float32)  # a sampler buffer's row
    env.step(action)
    np.testing.assert_array_equal(inner.received[-1], [1.0, 0.0, -1e6])
    np.testing.assert_array_equal(action, [3.0, -0.5, -1e6])  # the stored action: unclipped
    inside = np.array([0.25, 1.5, 7.0], dtype=np.float32)
    env.step(inside)
    np.testing.assert_array_equal(inner.received[-1], inside)


def test_clip_actions_false_passes_box_actions_unchanged():
    inner = RecordingBoxEnv()
    env = GymEnvWrapper(inner, clip_actions=False)
    env.reset()
    env.step(np.array([3.0, -0.5, -1e6], dtype=np.float32))
    np.testing.assert_array_equal(inner.received[-1], [3.0, -0.5, -1e6])


def test_make_clips_mujoco_actions_by_default():
    pytest.importorskip("mujoco")
    received = []
    for clip in (True, False):
        env = make("HalfCheetah-v5", clip_actions=clip)
        env.seed(0)
        env.reset()
        inner_step = env.env.step
        env.env.step = lambda a, inner_step=inner_step: (received.append(a), inner_step(a))[1]
        env.step(np.full(6, 2.0, dtype=np.float32))
    np.testing.assert_array_equal(received[0], np.ones(6))
    np.testing.assert_array_equal(received[1], np.full(6, 2.0))
