"""Presets of MinAtar ids (``MinAtar/<Game>``, Young & Tian 2019): the paper's networks."""

from __future__ import annotations

from rlpyt.cli.presets.base import Preset

__all__ = ["MINATAR_PREFIX", "MINATAR_PRESETS"]

# MinAtar (Young & Tian 2019): `rlpyt train --algo dqn --env MinAtar/Breakout`.  The agents
# build the paper's network (rlpyt.models.minatar).  DQN takes the paper's settings (batch 32,
# replay 100k, one update per env step, target copy every 1000 updates, epsilon 1 -> 0.1 over
# 100k steps after 5000 random ones, lr 2.5e-4) with the DQN class's Adam: the paper's centered
# RMSProp is a class, which a JSON config cannot name (bench/minatar/dqn.py uses it).  Training
# returns are the paper's measure, so the presets evaluate rarely.
_MINATAR_SAMPLER = dict(max_decorrelation_steps=0, eval_n_envs=4, eval_max_trajectories=8)
_PAPER_DQN_SCHEDULE = dict(discount=0.99, batch_size=32, min_steps_learn=5_000,
                           replay_size=100_000, replay_ratio=32, target_update_interval=1_000,
                           learning_rate=2.5e-4, eps_steps=105_000, clip_grad_norm=None)
MINATAR_PREFIX = "MinAtar/"
"""The id prefix of MinAtar envs (``MinAtar/Breakout``)."""
MINATAR_PRESETS: dict[str, Preset] = {
    "dqn": Preset(
        algo="rlpyt.algos.dqn.dqn:DQN",
        agents={"discrete": "rlpyt.agents.dqn.minatar:MinAtarDqnAgent"},
        env="MinAtar/Breakout",
        algo_kwargs=dict(_PAPER_DQN_SCHEDULE, delta_clip=1.0),
        agent_kwargs=dict(eps_final=0.1, eps_eval=0.0),
        sampler_kwargs=dict(batch_T=4, batch_B=1, **_MINATAR_SAMPLER),
        runner_kwargs=dict(n_steps=5_000_000, log_interval_steps=100_000),
        source="the MinAtar paper, Young & Tian 2019 (its examples/dqn.py), with Adam",
        description="DQN with the MinAtar paper's network and settings",
    ),
    "cat_dqn": Preset(
        algo="rlpyt.algos.dqn.cat_dqn:CategoricalDQN",
        agents={"discrete": "rlpyt.agents.dqn.minatar:MinAtarCatDqnAgent"},
        env="MinAtar/Breakout",
        # C51 on the DQN preset's schedule (the paper's), so the two differ only in the
        # head and the loss.  The distribution's values are Dopamine's MinAtar configs':
        # 51 atoms on [-100, 100], Adam 2.5e-4 with epsilon 3.125e-4 (C51's optimizer).
        algo_kwargs=dict(_PAPER_DQN_SCHEDULE, V_min=-100.0, V_max=100.0,
                         optim_kwargs=dict(eps=3.125e-4)),
        agent_kwargs=dict(n_atoms=51, eps_final=0.1, eps_eval=0.0),
        sampler_kwargs=dict(batch_T=4, batch_B=1, **_MINATAR_SAMPLER),
        runner_kwargs=dict(n_steps=5_000_000, log_interval_steps=100_000),
        source="C51 (Bellemare et al. 2017) on the MinAtar paper's DQN schedule, with "
               "Dopamine's MinAtar support (51 atoms on [-100, 100]) and Adam epsilon",
        description="C51 with the MinAtar paper's network",
    ),
    "r2d1": Preset(
        algo="rlpyt.algos.dqn.r2d1:R2D1",
        agents={"discrete": "rlpyt.agents.dqn.minatar:MinAtarR2d1Agent"},
        env="MinAtar/Breakout",
        algo_kwargs=dict(discount=0.99, batch_T=20, batch_B=32, warmup_T=10,
                         store_rnn_state_interval=10, n_step_return=3, min_steps_learn=5_000,
                         replay_size=100_000, replay_ratio=4, target_update_interval=1_000,
                         eps_steps=105_000, learning_rate=2.5e-4),
        sampler_kwargs=dict(batch_T=20, batch_B=8, **_MINATAR_SAMPLER),
        runner_kwargs=dict(n_steps=5_000_000, log_interval_steps=100_000),
        source="R2D2 (Kapturowski et al. 2019) scaled to MinAtar, tuned here",
        description="R2D1 with the MinAtar network and an LSTM of 128",
    ),
    "a2c": Preset(
        algo="rlpyt.algos.pg.a2c:A2C",
        agents={"discrete": "rlpyt.agents.pg.minatar:MinAtarPgAgent"},
        env="MinAtar/Breakout",
        algo_kwargs=dict(discount=0.99, learning_rate=7e-4, entropy_loss_coeff=0.01,
                         value_loss_coeff=0.5, clip_grad_norm=0.5),
        sampler_kwargs=dict(batch_T=5, batch_B=16, **_MINATAR_SAMPLER),
        runner_kwargs=dict(n_steps=5_000_000, log_interval_steps=100_000),
        source="A2C (Mnih et al. 2016) at classic rlpyt's Atari settings",
        description="A2C with the MinAtar paper's actor-critic network",
    ),
    "ppo": Preset(
        algo="rlpyt.algos.pg.ppo:PPO",
        agents={"discrete": "rlpyt.agents.pg.minatar:MinAtarPgAgent"},
        env="MinAtar/Breakout",
        # CleanRL's Atari PPO settings, with 16 envs of 128 steps per batch.
        algo_kwargs=dict(discount=0.99, gae_lambda=0.95, learning_rate=2.5e-4, ratio_clip=0.1,
                         epochs=4, minibatches=4, entropy_loss_coeff=0.01,
                         value_loss_coeff=0.5, clip_grad_norm=0.5, normalize_advantage=True),
        sampler_kwargs=dict(batch_T=128, batch_B=16, **_MINATAR_SAMPLER),
        runner_kwargs=dict(n_steps=5_000_000, log_interval_steps=100_000),
        source="CleanRL's ppo_atari.py, 16 envs",
        description="PPO with the MinAtar paper's actor-critic network",
    ),
}
"""The MinAtar presets by algorithm name."""
