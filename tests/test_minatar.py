"""MinAtar envs (rlpyt.envs.minatar), their models and agents, and the CLI preset."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("minatar")

import minatar  # noqa: E402

from rlpyt.envs.base import EnvSpaces  # noqa: E402
from rlpyt.envs.gym import make  # noqa: E402
from rlpyt.envs.minatar import GAMES, MinAtarEnv, parse_env_id  # noqa: E402
from rlpyt.models.minatar import (  # noqa: E402
    MinAtarCatDqnModel,
    MinAtarDqnModel,
    MinAtarPgModel,
    MinAtarR2d1Model,
)

N_STEPS = 600


def _reference_run(game: str, seed: int, actions: np.ndarray, **kwargs):
    """The package's own Environment played with ``actions`` (reset after each terminal)."""
    env = minatar.Environment(GAMES[game], **kwargs)
    env.seed(seed)
    env.reset()
    observations, rewards, terminals = [], [], []
    for action in actions:
        reward, terminal = env.act(int(action))
        observations.append(env.state().transpose(2, 0, 1))
        rewards.append(reward)
        terminals.append(terminal)
        if terminal:
            env.reset()
    return observations, rewards, terminals


@pytest.mark.parametrize("game", list(GAMES))
def test_step_for_step_as_the_package(game):
    """Same seed, same actions: the same observations, rewards and terminals (with the
    paper's sticky actions and difficulty ramping, which draw from the same stream)."""
    actions = np.random.default_rng(1).integers(0, 6, size=N_STEPS)
    expected = _reference_run(game, seed=3, actions=actions)
    env = MinAtarEnv(game)
    env.seed(3)
    first = env.reset()
    assert first.shape == env.observation_space.shape and first.dtype == np.bool_
    n_terminals = 0
    for t, action in enumerate(actions):
        step = env.step(np.int32(action))
        np.testing.assert_array_equal(step.observation, expected[0][t], err_msg=f"step {t}")
        assert step.reward == expected[1][t], f"reward at step {t}"
        assert step.done == expected[2][t], f"terminal at step {t}"
        assert not step.env_info.timeout
        if step.done:
            n_terminals += 1
            env.reset()
    assert n_terminals > 0 or game == "Freeway"  # random play ends most games quickly


def test_minimal_action_set_maps_to_package_actions():
    env = MinAtarEnv("Breakout", minimal_action_set=True)
    reference = minatar.Environment("breakout")
    assert list(env.action_set) == reference.minimal_action_set()
    assert env.action_space.n == 3
    actions = np.random.default_rng(0).integers(0, 3, size=200)
    expected = _reference_run("Breakout", 5, env.action_set[actions])
    env.seed(5)
    env.reset()
    for t, action in enumerate(actions):
        step = env.step(action)
        np.testing.assert_array_equal(step.observation, expected[0][t])
        if step.done:
            env.reset()


def test_settings_reach_the_package():
    env = MinAtarEnv("Asterix", sticky_action_prob=0.0, difficulty_ramping=False)
    assert env._env.sticky_action_prob == 0.0
    assert env._env.env.ramping is False
    assert MinAtarEnv("Asterix")._env.sticky_action_prob == 0.1  # the paper's default


def test_seeded_episodes_repeat_and_seeds_differ():
    def play(seed):
        env = MinAtarEnv("Asterix")
        env.seed(seed)
        obs = [env.reset()]
        for _ in range(100):
            step = env.step(0)
            obs.append(step.observation)
            if step.done:
                obs.append(env.reset())
        return np.stack(obs)

    np.testing.assert_array_equal(play(7), play(7))
    assert not np.array_equal(play(7), play(8))


def test_max_episode_steps_reports_timeout_like_gym_wrapper():
    env = MinAtarEnv("Freeway", max_episode_steps=5)
    assert env.horizon == 5 and MinAtarEnv("Freeway").horizon is None
    env.seed(0)
    env.reset()
    steps = [env.step(0) for _ in range(5)]
    assert [s.done for s in steps] == [False] * 4 + [True]
    assert [bool(s.env_info.timeout) for s in steps] == [False] * 4 + [True]


def test_freeway_ends_itself_without_timeout():
    """Freeway's own end (after its 2500-frame timer runs out: on step 2501) is a
    termination, also when a step limit falls on the same step."""
    for limit in (None, 2501):
        env = MinAtarEnv("Freeway", max_episode_steps=limit)
        env.seed(0)
        env.reset()
        n = 0
        while not (step := env.step(0)).done:
            n += 1
        assert n + 1 == 2501 and not step.env_info.timeout


def test_make_ids_and_errors():
    env = make("MinAtar/SpaceInvaders", sticky_action_prob=0.0)
    assert isinstance(env, MinAtarEnv) and env.observation_space.shape == (6, 10, 10)
    assert parse_env_id("MinAtar/Breakout") == "Breakout"
    with pytest.raises(ValueError, match="MinAtar/Breakout"):
        make("MinAtar/Breakot")
    with pytest.raises(ValueError, match="game='pong'"):
        MinAtarEnv("pong")
    with pytest.raises(ValueError, match="sticky_action_prob=1.5"):
        MinAtarEnv("Breakout", sticky_action_prob=1.5)
    with pytest.raises(ValueError, match="max_episode_steps=0"):
        MinAtarEnv("Breakout", max_episode_steps=0)
    env = MinAtarEnv("Breakout", minimal_action_set=True)
    env.reset()
    with pytest.raises(ValueError, match=r"action=3 is not in \[0, 3\)"):
        env.step(3)


def _spaces(game="Breakout"):
    env = MinAtarEnv(game)
    return EnvSpaces(env.observation_space, env.action_space), env


def test_models_shapes_and_paper_network():
    obs = torch.randint(0, 2, (5, 3, 4, 10, 10)).bool()
    prev_action = torch.zeros(5, 3, dtype=torch.long)
    prev_reward = torch.zeros(5, 3)
    q = MinAtarDqnModel((4, 10, 10), 6)(obs, prev_action, prev_reward)
    assert q.shape == (5, 3, 6)
    model = MinAtarDqnModel((4, 10, 10), 6)
    conv = model.torso.conv.conv[0]
    assert (conv.out_channels, conv.kernel_size, conv.stride) == (16, (3, 3), (1, 1))
    # 16 x 8 x 8 conv features -> 128 hidden units -> 6 Q-values.
    n_params = sum(p.numel() for p in model.parameters())
    assert n_params == (4 * 9 * 16 + 16) + (1024 * 128 + 128) + (128 * 6 + 6)
    pi, v = MinAtarPgModel((4, 10, 10), 6)(obs, prev_action, prev_reward)
    assert pi.shape == (5, 3, 6) and v.shape == (5, 3)
    torch.testing.assert_close(pi.sum(-1), torch.ones(5, 3))
    q, state = MinAtarR2d1Model((4, 10, 10), 6)(obs, prev_action, prev_reward, None)
    assert q.shape == (5, 3, 6) and state.h.shape == (1, 3, 128)
    # Running the sequence in two halves from the carried state gives the same Q-values.
    q1, mid = MinAtarR2d1Model.forward(_r2d1 := MinAtarR2d1Model((4, 10, 10), 6), obs[:2],
                                       prev_action[:2], prev_reward[:2], None)
    q2, _ = _r2d1(obs[2:], prev_action[2:], prev_reward[2:], mid)
    q_all, _ = _r2d1(obs, prev_action, prev_reward, None)
    torch.testing.assert_close(torch.cat([q1, q2]), q_all)


def test_c51_model_is_the_paper_torso_with_a_distribution_per_action():
    obs = torch.randint(0, 2, (5, 3, 4, 10, 10)).bool()
    model = MinAtarCatDqnModel((4, 10, 10), 6, n_atoms=51)
    p = model(obs, torch.zeros(5, 3, dtype=torch.long), torch.zeros(5, 3))
    assert p.shape == (5, 3, 6, 51)
    torch.testing.assert_close(p.sum(-1), torch.ones(5, 3, 6))
    n_params = sum(q.numel() for q in model.parameters())
    assert n_params == (4 * 9 * 16 + 16) + (1024 * 128 + 128) + (128 * 6 * 51 + 6 * 51)
    with pytest.raises(ValueError, match="n_atoms"):
        MinAtarCatDqnModel((4, 10, 10), 6, n_atoms=1)


def test_c51_preset_is_the_dqn_schedule_with_dopamines_support():
    from rlpyt.cli.presets import MINATAR_PRESETS

    dqn, c51 = MINATAR_PRESETS["dqn"].algo_kwargs, MINATAR_PRESETS["cat_dqn"].algo_kwargs
    schedule = ("discount", "batch_size", "min_steps_learn", "replay_size", "replay_ratio",
                "target_update_interval", "learning_rate", "eps_steps")
    assert {k: c51[k] for k in schedule} == {k: dqn[k] for k in schedule}
    assert (c51["V_min"], c51["V_max"], c51["optim_kwargs"]) == (-100.0, 100.0, dict(eps=3.125e-4))
    assert MINATAR_PRESETS["cat_dqn"].agent_kwargs["n_atoms"] == 51
    assert MINATAR_PRESETS["cat_dqn"].sampler_kwargs["batch_T"] == 4


@pytest.mark.parametrize("agent_path", [
    "rlpyt.agents.dqn.minatar:MinAtarDqnAgent",
    "rlpyt.agents.dqn.minatar:MinAtarCatDqnAgent",
    "rlpyt.agents.dqn.minatar:MinAtarR2d1Agent",
    "rlpyt.agents.pg.minatar:MinAtarPgAgent",
])
def test_agents_step_on_minatar(agent_path):
    from rlpyt.cli.presets import import_path

    spaces, env = _spaces("Seaquest")
    agent = import_path(agent_path)()
    agent.initialize(spaces)
    env.seed(0)
    obs = torch.as_tensor(np.stack([env.reset(), env.reset()]))
    step = agent.step(obs, torch.zeros(2, dtype=torch.long), torch.zeros(2))
    assert step.action.shape == (2,) and int(step.action.max()) < 6


def test_replays_keep_minatar_observations_whole():
    """Channels are not a frame stack: DQN's and R2D1's replay rules must not store them as
    frames shared between steps (they do for uint8 [n_frames, H, W] Atari stacks)."""
    from rlpyt.algos.dqn.replay import is_frame_stack

    env = MinAtarEnv("Seaquest")
    assert not is_frame_stack(env.reset())
    assert not is_frame_stack(env.observation_space.null_value())


def test_dqn_replays_the_observations_the_env_gave(tmp_path):
    """A short DQN run on MinAtar: every replayed observation is one the env produced."""
    from rlpyt.agents.dqn.minatar import MinAtarDqnAgent
    from rlpyt.algos.dqn.dqn import DQN
    from rlpyt.runners.minibatch_rl import MinibatchRl
    from rlpyt.samplers.serial.sampler import SerialSampler
    from rlpyt.utils.logging.context import logger_context

    sampler = SerialSampler(EnvCls=MinAtarEnv, env_kwargs=dict(game="Breakout"), batch_T=4,
                            batch_B=2, max_decorrelation_steps=0)
    algo = DQN(min_steps_learn=64, batch_size=16, replay_size=1000, replay_ratio=4)
    runner = MinibatchRl(algo=algo, agent=MinAtarDqnAgent(), sampler=sampler, n_steps=200,
                         seed=0, log_interval_steps=200)
    with logger_context(str(tmp_path), 0, "dqn_minatar", override_prefix=True):
        runner.train()
    filled = algo.replay_buffer.t  # 100 steps x 2 envs, no wrap yet
    stored = np.asarray(algo.replay_buffer.samples.observation[:filled]).reshape(-1, 4, 10, 10)
    batch = algo.replay_buffer.sample_batch(16)
    seen = {o.tobytes() for o in stored}
    for obs in np.asarray(batch.agent_inputs.observation):
        assert obs.dtype == np.bool_ and obs.tobytes() in seen


def test_agents_reject_vector_observations():
    from rlpyt.agents.dqn.minatar import MinAtarDqnAgent

    env = make("CartPole-v1")
    with pytest.raises(ValueError, match=r"image observations \[C, H, W\]"):
        MinAtarDqnAgent().initialize(env.spaces)


def test_cli_preset_for_minatar_ids():
    from rlpyt.cli.overrides import ConfigError
    from rlpyt.cli.presets import MINATAR_PRESETS, PRESETS, preset_for

    assert preset_for("dqn", "MinAtar/Breakout") is MINATAR_PRESETS["dqn"]
    assert preset_for("dqn", "CartPole-v1") is PRESETS["dqn"]
    with pytest.raises(ConfigError, match="'sac' has no MinAtar preset"):
        preset_for("sac", "MinAtar/Breakout")


@pytest.mark.slow
@pytest.mark.parametrize("algo, agent, extra", [
    ("dqn", "MinAtarDqnAgent", ["--n-steps", "1200", "--algo.min_steps_learn", "400"]),
    ("cat_dqn", "MinAtarCatDqnAgent", ["--n-steps", "1200", "--algo.min_steps_learn", "400"]),
    ("r2d1", "MinAtarR2d1Agent", ["--n-steps", "1600", "--algo.min_steps_learn", "480"]),
    ("ppo", "MinAtarPgAgent", ["--n-steps", "4096"]),
])
def test_cli_trains_on_minatar(algo, agent, extra, tmp_path):
    """`rlpyt train --algo ALGO --env MinAtar/Breakout` builds the MinAtar agent and trains."""
    from rlpyt.cli import main

    code = main(["train", "--algo", algo, "--env", "MinAtar/Breakout", "--log-dir",
                 str(tmp_path), "--runner.log_interval_steps", "800",
                 "--sampler.eval_max_trajectories", "2", *extra])
    assert code == 0
    params = (tmp_path / "run_0" / "params.json").read_text()
    assert agent in params
