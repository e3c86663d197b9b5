"""Classic-control presets: CleanRL's settings on Acrobot and MountainCar, and the
protocol of the tasks their published figures are measured on."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from helpers import train_config

from rlpyt.cli.presets import PRESETS
from rlpyt.cli.presets.classic import CLEANRL_CLASSIC_ENVS
from rlpyt.cli.train import build_components
from rlpyt.envs.gym import make


# cleanrl/dqn.py and cleanrl/c51.py: learning_rate 2.5e-4, buffer_size 10000, gamma 0.99,
# target_network_frequency 500, batch_size 128, start_e 1, end_e 0.05,
# exploration_fraction 0.5 of total_timesteps 500000, learning_starts 10000,
# train_frequency 10, one env, 120-84 ReLU networks.
@pytest.mark.parametrize("env_id", ["Acrobot-v1", "MountainCar-v0"])
@pytest.mark.parametrize("algo", ["dqn", "cat_dqn"])
def test_dqn_presets_take_cleanrls_classic_control_settings(algo, env_id):
    config = train_config("--algo", algo, "--env", env_id)
    a, agent, sampler = config["algo"], config["agent"], config["sampler"]
    env_steps_per_update = a["batch_size"] / a["replay_ratio"]  # replay ratio's definition
    assert env_steps_per_update == pytest.approx(10)
    assert (sampler["batch_T"], sampler["batch_B"]) == (10, 1)  # an update every iteration
    assert (a["learning_rate"], a["replay_size"], a["discount"], a["batch_size"],
            a["min_steps_learn"]) == (2.5e-4, 10_000, 0.99, 128, 10_000)
    assert a["target_update_interval"] * env_steps_per_update == 500
    assert a["eps_steps"] == 0.5 * config["runner"]["n_steps"] == 250_000
    assert (agent["eps_final"], agent["model_kwargs"]["hidden_sizes"]) == (0.05, [120, 84])
    assert (a["double_dqn"], a["n_step_return"], a["clip_grad_norm"]) == (False, 1, None)
    if algo == "dqn":
        assert a["delta_clip"] is None  # F.mse_loss
    else:
        assert (agent["n_atoms"], a["V_min"], a["V_max"]) == (101, -100.0, 100.0)
        assert a["optim_kwargs"] == dict(eps=0.01 / 128)
    _, _, built_algo = build_components(config)
    assert built_algo.target_update_tau == 1.0  # a hard copy


def test_cartpole_keeps_the_tuned_preset_and_the_start_line_names_each_source(capsys):
    assert train_config("--algo", "dqn", "--env", "CartPole-v1")["algo"] == \
        PRESETS["dqn"].algo_kwargs
    for name in CLEANRL_CLASSIC_ENVS:
        assert "CleanRL" in PRESETS["dqn"].source_for(f"{name}-v1")
        assert "c51.py" in PRESETS["cat_dqn"].source_for(f"{name}-v0")
    assert PRESETS["dqn"].source_for("CartPole-v1") == PRESETS["dqn"].source


@pytest.mark.parametrize("env_id, limit", [("CartPole-v1", 500), ("Acrobot-v1", 500),
                                           ("MountainCar-v0", 200)])
def test_classic_time_limits_are_gymnasiums_and_end_as_truncations(env_id, limit):
    """The published runs use Gymnasium's registered limits; an episode cut there is a
    truncation (``timeout``), which DQN bootstraps through as CleanRL does."""
    assert gym.spec(env_id).max_episode_steps == limit
    env = make(id=env_id)
    env.reset()
    rng = np.random.default_rng(0)
    step, result = 0, None
    while step < limit + 1 and (result is None or not result.done):
        # MountainCar never reaches the flag by pushing one way; the others may fall first.
        action = 0 if env_id == "MountainCar-v0" else int(rng.integers(2))
        result = env.step(np.int64(action))
        step += 1
    if env_id == "MountainCar-v0":
        assert step == limit and bool(result.env_info.timeout)
    else:
        assert step <= limit and bool(result.env_info.timeout) == (step == limit)
