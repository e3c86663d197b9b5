"""POPGym's memory tasks through ``rlpyt.envs.popgym``: the same episodes as POPGym's own
env, index observations one-hot, and the family's presets picked by the id."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

popgym = pytest.importorskip("popgym")

from rlpyt.cli.overrides import ConfigError  # noqa: E402
from rlpyt.cli.presets import POPGYM_PRESETS, PRESETS, env_family, preset_for  # noqa: E402
from rlpyt.envs.gym import make  # noqa: E402
from rlpyt.envs.popgym import OneHotObservation  # noqa: E402

TASKS = ["popgym-RepeatPreviousEasy-v0", "popgym-RepeatFirstEasy-v0"]


@pytest.mark.parametrize("env_id", TASKS)
def test_episodes_are_popgyms_own_with_one_hot_observations(env_id):
    ours, theirs = make(env_id), gym.make(env_id)
    ours.seed(3)
    obs = ours.reset()
    raw, _ = theirs.reset(seed=3)
    actions = np.random.default_rng(0).integers(0, 4, size=200)
    total, steps = 0.0, 0
    assert obs.shape == (4,) and obs.dtype == np.float32 and obs.sum() == 1
    assert int(np.argmax(obs)) == raw
    for action in actions:
        step = ours.step(np.int64(action))
        raw, reward, terminated, truncated, _ = theirs.step(int(action))
        assert int(np.argmax(step.observation)) == raw and step.observation.sum() == 1
        assert step.reward == pytest.approx(reward)
        total, steps = total + step.reward, steps + 1
        assert step.done == (terminated or truncated)
        if step.done:
            break
    assert steps == 51  # one deck of 52 cards, the first dealt at reset
    assert -1.0 - 1e-9 <= total <= 1.0 + 1e-9
    assert not step.env_info.timeout


def test_guessing_scores_minus_a_half_on_repeat_previous():
    env = gym.make("popgym-RepeatPreviousEasy-v0")
    rng = np.random.default_rng(1)
    returns = []
    for episode in range(300):
        env.reset(seed=episode)
        total, done = 0.0, False
        while not done:
            _, reward, terminated, truncated, _ = env.step(int(rng.integers(4)))
            total, done = total + reward, terminated or truncated
        returns.append(total)
    assert np.mean(returns) == pytest.approx(-0.5, abs=0.03)  # (1/4 - 3/4) per scored step


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(2, 6), min_size=1, max_size=4), st.data())
def test_one_hot_of_a_multi_discrete_against_a_loop(sizes, data):
    class Fixed(gym.Env):
        observation_space = gym.spaces.MultiDiscrete(sizes)
        action_space = gym.spaces.Discrete(2)

    values = data.draw(st.tuples(*[st.integers(0, n - 1) for n in sizes]))
    one_hot = OneHotObservation(Fixed()).observation(np.array(values))
    expected = []
    for n, v in zip(sizes, values):
        expected += [1.0 if i == v else 0.0 for i in range(n)]
    assert one_hot.tolist() == expected and one_hot.dtype == np.float32


def test_an_unknown_popgym_id_names_the_closest():
    with pytest.raises(ValueError, match="popgym-RepeatPreviousEasy-v0"):
        make("popgym-RepeatPreviusEasy-v0")


def test_popgym_ids_pick_the_popgym_presets():
    assert env_family("popgym-RepeatFirstEasy-v0") == "popgym"
    assert preset_for("r2d1", "popgym-CountRecallEasy-v0") is POPGYM_PRESETS["r2d1"]
    with pytest.raises(ConfigError, match="POPGym algorithms: \\['dqn', 'r2d1'\\]"):
        preset_for("ppo", "popgym-RepeatFirstEasy-v0")


def test_the_presets_are_the_classic_ones_they_name():
    """The R2D1 preset is the classic-control one (its sequences, targets and schedule),
    and DQN the classic preset's network and targets: the two differ by memory only."""
    r2d1, classic = POPGYM_PRESETS["r2d1"].algo_kwargs, PRESETS["r2d1"].algo_kwargs
    same = ("discount", "batch_T", "batch_B", "warmup_T", "store_rnn_state_interval",
            "n_step_return", "replay_ratio", "target_update_interval", "learning_rate")
    assert {k: r2d1[k] for k in same} == {k: classic[k] for k in same}
    dqn = POPGYM_PRESETS["dqn"]
    assert dqn.agent_kwargs == PRESETS["dqn"].agent_kwargs
    for key in ("double_dqn", "n_step_return", "delta_clip", "clip_grad_norm",
                "learning_rate", "batch_size", "replay_ratio", "target_update_interval"):
        assert dqn.algo_kwargs[key] == PRESETS["dqn"].algo_kwargs[key], key
    assert (dqn.runner_kwargs == POPGYM_PRESETS["r2d1"].runner_kwargs)  # the same budget
