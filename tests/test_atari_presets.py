"""Atari from the command line: ALE ids on AtariEnv with their family's protocol, the
Atari presets, and whole-game scores in the logs."""

from __future__ import annotations

import csv
import re

import numpy as np
import pytest
from helpers import train_config

pytest.importorskip("ale_py")

import gymnasium as gym  # noqa: E402

from rlpyt.cli import main  # noqa: E402
from rlpyt.cli.presets import ATARI_PRESETS, env_family, preset_for  # noqa: E402
from rlpyt.envs.atari.atari_env import AtariTrajInfo  # noqa: E402
from rlpyt.envs.atari.ids import atari_protocol, make_atari  # noqa: E402
from rlpyt.envs.gym import register_ale_envs  # noqa: E402

FAMILY_IDS = ["ALE/Pong-v5", "ALE/Breakout-v5", "PongNoFrameskip-v4", "BreakoutNoFrameskip-v4"]


@pytest.mark.parametrize("env_id", FAMILY_IDS)
def test_protocol_matches_gymnasiums_env(env_id):
    """Sticky actions, action set and frames per step as Gymnasium's own env for the id
    has them (the NoFrameskip ids: the DQN pipeline's 4 frames on top of their 1)."""
    register_ale_envs()
    theirs = gym.make(env_id)
    ours = make_atari(env_id)
    try:
        ale = theirs.unwrapped.ale
        assert ours.ale.getFloat("repeat_action_probability") == pytest.approx(
            ale.getFloat("repeat_action_probability"))
        assert ours.get_action_meanings() == theirs.unwrapped.get_action_meanings()
        their_skip = gym.spec(env_id).kwargs["frameskip"]
        assert ours._frame_skip == (4 if their_skip == 1 else their_skip)
        assert ours.observation_space.shape == (4, 84, 84)
    finally:
        theirs.close()
        ours.close()


def test_family_settings():
    v5 = atari_protocol("ALE/Breakout-v5").env_kwargs
    assert (v5["repeat_action_probability"], v5["max_start_noops"], v5["episodic_lives"],
            v5["horizon"]) == (0.25, 0, False, 27_000)
    nature = atari_protocol("BreakoutNoFrameskip-v4").env_kwargs
    assert (nature["repeat_action_probability"], nature["max_start_noops"],
            nature["episodic_lives"], nature["fire_on_reset"]) == (0.0, 30, True, True)
    assert atari_protocol("PongNoFrameskip-v0").env_kwargs["repeat_action_probability"] == 0.25
    assert not atari_protocol("ALE/Pong-v5").env_kwargs["fire_on_reset"]


def test_appo_preset_is_the_fastest_pong_of_its_ablations():
    """docs/notes/appo.md: 2 epochs of 8 minibatches (PPO's 16 gradient steps a batch
    for half its arithmetic) at a constant 5e-4, V-trace targets with GAE's lambda, a
    FIFO of 3, batches of 8 envs x 128 steps and the input normalization."""
    config = train_config("--algo", "appo", "--env", "PongNoFrameskip-v4", "--runner", "async")
    algo, agent, sampler = config["algo"], config["agent"], config["sampler"]
    assert (algo["epochs"], algo["minibatches"], algo["learning_rate"],
            algo["linear_lr_schedule"]) == (2, 8, 5e-4, False)
    assert (algo["discount"], algo["vtrace_lambda"], algo["ratio_clip"],
            algo["fifo_size"]) == (0.99, 0.95, 0.1, 3)
    assert (sampler["batch_T"], sampler["batch_B"]) == (128, 8)
    assert agent["model_kwargs"]["normalize_observation"] is True


def test_a2c_preset_is_the_zoos_atari_a2c():
    """rl-baselines3-zoo a2c.yml (atari), the source of the published Pong figure: SB3's
    A2C defaults (RMSprop 7e-4 with alpha 0.99 and eps 1e-5, GAE lambda 1, no advantage
    normalization, clip 0.5) with 16 envs of 5 steps, entropy 0.01 and vf_coef 0.25 on
    the mean squared error; the Nature CNN (CnnPolicy) on pixels scaled by 1/255."""
    import torch

    from rlpyt.cli.train import build_components

    config = train_config("--algo", "a2c", "--env", "PongNoFrameskip-v4")
    algo, agent, sampler = config["algo"], config["agent"], config["sampler"]
    assert (algo["learning_rate"], algo["discount"], algo["gae_lambda"],
            algo["entropy_loss_coeff"], algo["clip_grad_norm"]) == (7e-4, 0.99, 1.0, 0.01, 0.5)
    assert algo["value_loss_coeff"] == 0.5  # x our 0.5 (V - R)^2 = SB3's 0.25 x MSE
    assert algo["normalize_advantage"] is False
    assert not algo.get("normalize_returns", False) and not algo.get("normalize_rewards", False)
    assert (sampler["batch_T"], sampler["batch_B"]) == (5, 16)
    model_kwargs = agent["model_kwargs"]
    assert (model_kwargs["channels"], model_kwargs["fc_sizes"]) == ([32, 64, 64], 512)
    assert not model_kwargs.get("normalize_observation", False)
    _, built_agent, built_algo = build_components(config)
    assert built_algo.OptimCls is torch.optim.RMSprop
    assert built_algo.optim_kwargs == dict(alpha=0.99, eps=1e-5)
    assert built_agent.model_kwargs.get("orthogonal_init", True)
    assert "Zoo" in ATARI_PRESETS["a2c"].source


def test_random_frame_skip_ids_are_refused_with_the_alternatives():
    with pytest.raises(ValueError, match="PongNoFrameskip-v4.*ALE/Pong-v5"):
        atari_protocol("Pong-v4")


def test_family_of_ids():
    assert env_family("ALE/Pong-v5") == env_family("SpaceInvadersNoFrameskip-v4") == "atari"
    assert env_family("CartPole-v1") == "classic"
    assert preset_for("ppo", "ALE/Pong-v5") is ATARI_PRESETS["ppo"]
    from rlpyt.cli.overrides import ConfigError

    with pytest.raises(ConfigError, match="no Atari preset.*continuous actions"):
        preset_for("sac", "ALE/Pong-v5")


def test_scores_are_whole_games_across_lost_lives():
    """A trajectory spans every life of a game: a lost life ends a training episode
    (``done``) but not the trajectory, and ``GameScore`` sums the unclipped rewards of
    the whole game (scripted: FIRE at every step until the game is over)."""
    env = make_atari("BreakoutNoFrameskip-v4", seed=3)
    fire = env.get_action_meanings().index("FIRE")
    traj, lives_lost, rewards, scores = AtariTrajInfo(), 0, [], []
    observation = env.reset()
    rng = np.random.default_rng(0)
    while True:
        action = fire if rng.random() < 0.5 else int(rng.integers(env.action_space.n))
        step = env.step(action)
        traj.step(observation, action, step.reward, step.done, None, step.env_info)
        rewards.append(step.reward)
        scores.append(step.env_info.game_score)
        if step.env_info.traj_done:
            break
        if step.done:  # a life lost: the game goes on
            lives_lost += 1
            observation = env.reset()
        else:
            observation = step.observation
    env.close()
    assert lives_lost == 4  # Breakout's 5 lives
    assert traj.GameScore == sum(scores) > 0
    assert traj.Return == sum(rewards)
    assert all(r in (0, 1) for r in rewards)  # clipped for training


def _rows(run_dir):
    with open(run_dir / "progress.csv", newline="") as f:
        return list(csv.DictReader(f))


# Two iterations of each preset, as a user starts it; the replay and warm-up made small
# so that the update runs within them.
_SMALL_REPLAY = ["--algo.replay_size", "20000"]
CLI_CASES = {
    "ppo": ["--n-steps", "2048", "--sampler-type", "cpu"],
    "a2c": ["--n-steps", "320", "--nproc", "2"],
    "impala": ["--n-steps", "1280"],
    # Also the regression test of a parallel worker started under a sys.stderr without a
    # file descriptor (capsys here, a notebook's stream for users): it died silently.
    "impala-async": ["--runner", "async", "--sampler-type", "cpu", "--n-steps", "1280"],
    "appo-async": ["--runner", "async", "--sampler-type", "serial", "--n-steps", "2048"],
    "dqn": ["--n-steps", "400", "--algo.min_steps_learn", "200", *_SMALL_REPLAY],
    "dqn-variants": ["--n-steps", "400", "--algo.min_steps_learn", "200", *_SMALL_REPLAY,
                     "--algo.double_dqn", "true", "--algo.prioritized_replay", "true",
                     "--agent.model_kwargs.dueling", "true"],
    "cat_dqn": ["--n-steps", "400", "--algo.min_steps_learn", "200", *_SMALL_REPLAY],
    "r2d1-async": ["--runner", "async", "--n-steps", "1280", "--algo.min_steps_learn", "640",
                   *_SMALL_REPLAY, "--algo.batch_B", "4"],
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CLI_CASES))
def test_every_atari_preset_trains_from_the_cli(case, tmp_path, capsys):
    algo = case.split("-")[0]
    n_steps = int(CLI_CASES[case][CLI_CASES[case].index("--n-steps") + 1])
    code = main(["train", "--algo", algo, "--env", "ALE/Pong-v5", "--log-dir", str(tmp_path),
                 "--runner.log_interval_steps", str(n_steps // 2),
                 "--sampler.eval_max_steps", "400", *CLI_CASES[case]])
    assert code == 0, capsys.readouterr().err
    rows = _rows(tmp_path / "run_0")
    assert int(float(rows[-1]["CumSteps"])) >= n_steps
    debug = (tmp_path / "run_0" / "debug.log").read_text()
    assert "Preset: " in debug and ATARI_PRESETS[algo].source in debug
    assert "sticky actions 0.25" in debug
    if case.endswith("-async"):  # the learner alone, on the CPU, keeps its own order
        assert "learner's convolution weights: channels-last memory order" in debug
    if case == "ppo":  # a trained Atari agent plays a whole game into a video
        video = tmp_path / "game.mp4"
        assert main(["evaluate", str(tmp_path / "run_0"), "--episodes", "1", "--video",
                     str(video)]) == 0
        assert video.stat().st_size > 0
        out = capsys.readouterr().out
        score = float(re.search(r"Return: mean (-?[\d.]+)", out).group(1))
        length = int(re.search(r"Episode lengths: \[(\d+)\]", out).group(1))
        assert score <= -15 and length > 500  # a whole game lost by an untrained agent


@pytest.mark.slow
@pytest.mark.parametrize("algo", ["ppo", "dqn"])
def test_noframeskip_id_trains_with_the_dqn_pipeline(algo, tmp_path):
    extra = CLI_CASES[algo]
    n_steps = int(extra[extra.index("--n-steps") + 1])
    code = main(["train", "--algo", algo, "--env", "BreakoutNoFrameskip-v4", "--log-dir",
                 str(tmp_path), "--runner.log_interval_steps", str(n_steps // 2),
                 "--sampler.eval_max_steps", "400", *extra])
    assert code == 0
    assert "GameScoreAverage" in _rows(tmp_path / "run_0")[-1]
    assert "DQN Nature pipeline" in (tmp_path / "run_0" / "debug.log").read_text()


def test_default_run_folder_is_flat_for_namespaced_ids():
    from rlpyt.cli.train import default_run_name

    assert default_run_name("ppo", "ALE/Pong-v5") == "ppo_ALE-Pong-v5"


def test_unknown_id_suggests_the_ale_namespace():
    from rlpyt.envs.gym import make

    with pytest.raises(ValueError, match=r"closest registered ids: \['ALE/Pong-v5'"):
        make("Pong-v5")


def test_image_env_with_an_mlp_preset_fails_early(tmp_path, capsys):
    """A Gymnasium env with image observations outside the Atari and MinAtar families
    gets one line naming what fits, before any run directory exists."""
    register_ale_envs()
    gym.register("RgbPong-v0", entry_point=lambda: gym.make("ALE/Pong-v5"))
    try:
        code = main(["train", "--algo", "ppo", "--env", "RgbPong-v0", "--log-dir",
                     str(tmp_path / "runs")])
    finally:
        del gym.registry["RgbPong-v0"]
    err = capsys.readouterr().err
    assert code == 2
    assert "image observations" in err and "ALE/Pong-v5" in err
    assert not (tmp_path / "runs").exists()
