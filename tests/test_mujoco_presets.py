"""MuJoCo ids get the MuJoCo presets: each algorithm's published settings, named at the
start of the run, with the per-env values of their source."""

from __future__ import annotations

import csv

import pytest
import torch
from helpers import train_config

pytest.importorskip("mujoco")

from rlpyt.cli import main  # noqa: E402
from rlpyt.cli.presets import MUJOCO_PRESETS, PRESETS, env_family, preset_for  # noqa: E402


@pytest.mark.parametrize("env_id", ["HalfCheetah-v5", "Hopper-v5", "Walker2d-v5", "Ant-v5",
                                    "Humanoid-v5"])
def test_mujoco_ids_get_the_mujoco_presets(env_id):
    assert env_family(env_id) == "mujoco"
    for algo in MUJOCO_PRESETS:
        assert preset_for(algo, env_id) is MUJOCO_PRESETS[algo]
    assert preset_for("sac", "Pendulum-v1") is PRESETS["sac"]


def test_sac_preset_is_tianshous_benchmark():
    config = train_config("--algo", "sac", "--env", "HalfCheetah-v5")
    algo, agent = config["algo"], config["agent"]
    assert (algo["learning_rate"], algo["fixed_alpha"], algo["batch_size"],
            algo["min_steps_learn"]) == (1e-3, 0.2, 256, 10_000)
    assert agent["model_kwargs"]["hidden_sizes"] == [256, 256]
    assert agent["pretrain_std"] == "uniform"
    assert (config["sampler"]["eval_max_trajectories"], config["runner"]["log_interval_steps"]
            ) == (10, 5_000)


def test_ppo_preset_is_cleanrls_continuous_ppo():
    """ppo_continuous_action.py: its model (linear mean, orthogonal init), clipped value
    loss with the fixed clip, Adam epsilon 1e-5; its reward scaling as return
    normalization."""
    config = train_config("--algo", "ppo", "--env", "Hopper-v5")
    algo, agent = config["algo"], config["agent"]
    assert config["agent_class"] == "rlpyt.agents.pg.gaussian:GaussianPgAgent"
    assert (algo["ratio_clip"], algo["anneal_ratio_clip"], algo["clip_vf_loss"],
            algo["normalize_returns"], algo["optim_kwargs"]) == (0.2, False, True, True,
                                                                 {"eps": 1e-5})
    assert (algo["epochs"], algo["minibatches"], config["sampler"]["batch_T"]) == (10, 32, 2048)
    assert agent["model_kwargs"] == {"hidden_sizes": [64, 64], "normalize_observation": True}


def test_td3_random_start_is_the_papers_per_env():
    """The TD3 paper: 10k random steps on HalfCheetah and Ant, 1k elsewhere."""
    for env_id, start in [("HalfCheetah-v5", 10_000), ("Ant-v5", 10_000), ("Hopper-v5", 1_000),
                          ("Walker2d-v4", 1_000)]:
        assert train_config("--algo", "td3", "--env", env_id)["algo"]["min_steps_learn"] == start
    td3 = train_config("--algo", "td3", "--env", "Hopper-v5")
    assert td3["agent"]["model_kwargs"]["hidden_sizes"] == [400, 300]
    assert (td3["algo"]["batch_size"], td3["algo"]["learning_rate"]) == (100, 1e-3)


def test_ddpg_preset_is_tianshous_benchmark():
    """examples/mujoco/mujoco_ddpg.py: 256-256 networks, Adam 1e-3 for both, batch 256,
    one update per env step, tau 0.005, N(0, 0.1) exploration, 25k random steps on every
    task, one-step targets, policy and targets updated every step."""
    for env_id in ("HalfCheetah-v5", "Hopper-v5"):
        config = train_config("--algo", "ddpg", "--env", env_id)
        algo, agent = config["algo"], config["agent"]
        assert (algo["learning_rate"], algo["q_learning_rate"], algo["batch_size"],
                algo["replay_ratio"], algo["min_steps_learn"], algo["target_update_tau"],
                algo["discount"]) == (1e-3, 1e-3, 256, 256, 25_000, 0.005, 0.99)
        assert (algo["policy_update_interval"], algo["target_update_interval"],
                algo.get("n_step_return", 1)) == (1, 1, 1)
        assert agent["model_kwargs"]["hidden_sizes"] == [256, 256]
        assert agent["q_model_kwargs"]["hidden_sizes"] == [256, 256]
        assert (agent["action_std"], agent["pretrain_std"]) == (0.1, "uniform")
        assert "Tianshou" in MUJOCO_PRESETS["ddpg"].source


def test_a2c_preset_is_the_zoos_mujoco_a2c():
    """rl-baselines3-zoo a2c.yml (MuJoCo ids): SB3's A2C defaults (one env, 5 steps,
    RMSprop 7e-4 with alpha 0.99 and eps 1e-5, GAE lambda 1, vf_coef 0.5 on the mean
    squared error, no entropy, clip 0.5, no advantage normalization, 64-64 tanh MlpPolicy
    with log std 0) under VecNormalize (observations and rewards), evaluated with the
    mean action."""
    from rlpyt.cli.train import build_components

    config = train_config("--algo", "a2c", "--env", "HalfCheetah-v5")
    algo, agent, sampler = config["algo"], config["agent"], config["sampler"]
    assert (algo["learning_rate"], algo["discount"], algo["gae_lambda"],
            algo["entropy_loss_coeff"], algo["clip_grad_norm"]) == (7e-4, 0.99, 1.0, 0.0, 0.5)
    assert algo["value_loss_coeff"] == 1.0  # x our 0.5 (V - R)^2 = SB3's 0.5 x MSE
    assert algo["normalize_advantage"] is False and algo["normalize_rewards"] is True
    assert algo.get("normalize_returns", False) is False
    assert (sampler["batch_T"], sampler["batch_B"]) == (5, 1)
    assert agent["model_kwargs"] == dict(hidden_sizes=[64, 64], normalize_observation=True)
    assert agent["eval_deterministic"] is True
    _, built_agent, built_algo = build_components(config)
    assert built_algo.OptimCls is torch.optim.RMSprop
    assert built_algo.optim_kwargs == dict(alpha=0.99, eps=1e-5)
    assert type(built_agent).__name__ == "GaussianPgAgent"
    assert "Zoo" in MUJOCO_PRESETS["a2c"].source


def test_a_flag_still_wins_over_the_per_env_value():
    config = train_config("--algo", "td3", "--env", "HalfCheetah-v5", "--algo.min_steps_learn", "500")
    assert config["algo"]["min_steps_learn"] == 500


def test_discrete_algorithm_on_mujoco_names_what_fits():
    from rlpyt.cli.overrides import ConfigError

    with pytest.raises(ConfigError, match=r"no MuJoCo preset.*\['a2c', 'ddpg', 'ppo', 'sac', "
                                          r"'td3'\].*discrete actions"):
        preset_for("dqn", "HalfCheetah-v5")


CLI_CASES = {
    "sac": ["--n-steps", "600", "--algo.min_steps_learn", "300"],
    "td3": ["--n-steps", "600", "--algo.min_steps_learn", "300"],
    "ddpg": ["--n-steps", "600", "--algo.min_steps_learn", "300"],
    "ppo": ["--n-steps", "4096"],
    "a2c": ["--n-steps", "640"],
}


@pytest.mark.slow
@pytest.mark.parametrize("algo", sorted(CLI_CASES))
def test_every_mujoco_preset_trains_from_the_cli(algo, tmp_path, capsys):
    extra = CLI_CASES[algo]
    n_steps = int(extra[extra.index("--n-steps") + 1])
    code = main(["train", "--algo", algo, "--env", "Hopper-v5", "--log-dir", str(tmp_path),
                 "--runner.log_interval_steps", str(n_steps // 2),
                 "--sampler.eval_n_envs", "2", "--sampler.eval_max_trajectories", "2",
                 *extra])
    assert code == 0, capsys.readouterr().err
    with open(tmp_path / "run_0" / "progress.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert int(float(rows[-1]["CumSteps"])) >= n_steps
    debug = (tmp_path / "run_0" / "debug.log").read_text()
    assert f"Preset: {algo} for mujoco ids, values from {MUJOCO_PRESETS[algo].source}" in debug
