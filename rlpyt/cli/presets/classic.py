"""Presets of classic control and Box2D ids (CartPole-v1, Pendulum-v1, ...): MLP agents.

The settings learn each preset's default env (the learning tests check them); on other
small vector-observation envs they are a sound start.  ``dqn`` and ``cat_dqn`` take
CleanRL's settings on Acrobot and MountainCar (``env_overrides``), where its published
figures are.
"""

from __future__ import annotations

from rlpyt.cli.presets.base import Preset

__all__ = ["CLEANRL_CLASSIC_ENVS", "PRESETS"]

_PG_AGENTS = {
    "discrete": "rlpyt.agents.pg.categorical:CategoricalPgAgent",
    "continuous": "rlpyt.agents.pg.gaussian:GaussianPgAgent",
}

PRESETS: dict[str, Preset] = {
    "ppo": Preset(
        algo="rlpyt.algos.pg.ppo:PPO",
        agents=_PG_AGENTS,
        env="CartPole-v1",
        # Tuned for CartPole-v1, which it solves within the 100k-step budget; a sound
        # start elsewhere.
        algo_kwargs=dict(discount=0.98, gae_lambda=0.8, learning_rate=1e-3, ratio_clip=0.2,
                         epochs=20, minibatches=1, entropy_loss_coeff=0.0,
                         value_loss_coeff=0.5, clip_grad_norm=0.5, normalize_advantage=True),
        sampler_kwargs=dict(batch_T=32, batch_B=8, max_decorrelation_steps=0,
                            eval_n_envs=4, eval_max_trajectories=8),
        runner_kwargs=dict(n_steps=100_000, log_interval_steps=10_000),
        source="tuned here on CartPole-v1 (docs/notes/learning_tests.md)",
        description="Proximal Policy Optimization (clipped surrogate, GAE)",
    ),
    "a2c": Preset(
        algo="rlpyt.algos.pg.a2c:A2C",
        agents=_PG_AGENTS,
        env="CartPole-v1",
        algo_kwargs=dict(discount=0.99, learning_rate=7e-4, entropy_loss_coeff=0.0,
                         value_loss_coeff=0.5, clip_grad_norm=0.5),
        sampler_kwargs=dict(batch_T=5, batch_B=8, max_decorrelation_steps=0,
                            eval_n_envs=4, eval_max_trajectories=8),
        runner_kwargs=dict(n_steps=500_000, log_interval_steps=25_000),
        source="tuned here on CartPole-v1 (docs/notes/learning_tests.md)",
        description="Advantage Actor-Critic (synchronous A3C)",
    ),
    "impala": Preset(
        algo="rlpyt.algos.pg.impala:Impala",
        agents=_PG_AGENTS,
        env="CartPole-v1",
        # V-trace's lambda (paper, Remark 2) trades variance for bias like GAE's; on-policy
        # under the default runner (every rho is 1), off-policy-corrected with
        # --runner async (checked by tests/test_pg_learning.py, test_async_learning.py).
        # The entropy bonus is the class default's: a stochastic policy keeps visiting
        # states away from the centre, so batches keep the failures that teach a solved
        # policy to keep the cart centred (docs/notes/impala_cartpole.md, "An entropy
        # bonus in the preset", has the runs).
        # reward_scale: values of order 10 instead of 100, which the critic reaches in
        # the budget, so its errors do not swamp the advantages and a solved CartPole
        # stays solved, sync and async (docs/notes/impala_cartpole.md, "The critic's
        # scale", has the runs).
        algo_kwargs=dict(discount=0.99, vtrace_lambda=0.95, learning_rate=1e-3,
                         entropy_loss_coeff=0.01, value_loss_coeff=0.5, clip_grad_norm=0.5,
                         normalize_advantage=True, reward_scale=0.1),
        sampler_kwargs=dict(batch_T=16, batch_B=8, max_decorrelation_steps=0,
                            eval_n_envs=4, eval_max_trajectories=8),
        runner_kwargs=dict(n_steps=300_000, log_interval_steps=20_000),
        source="tuned here on CartPole-v1 (docs/notes/impala_cartpole.md)",
        description="IMPALA's V-trace actor-critic (asynchronous with --runner async)",
    ),
    "appo": Preset(
        algo="rlpyt.algos.pg.appo:APPO",
        agents=_PG_AGENTS,
        env="CartPole-v1",
        # The impala preset's V-trace settings and critic scale (reward_scale: values of
        # order 10, which the critic reaches) under PPO's epochs of clipped steps.
        algo_kwargs=dict(discount=0.99, vtrace_lambda=0.95, learning_rate=1e-3, epochs=4,
                         minibatches=4, ratio_clip=0.2, entropy_loss_coeff=0.01,
                         value_loss_coeff=0.5, clip_grad_norm=0.5, normalize_advantage=True,
                         reward_scale=0.1),
        sampler_kwargs=dict(batch_T=32, batch_B=8, max_decorrelation_steps=0,
                            eval_n_envs=4, eval_max_trajectories=8),
        runner_kwargs=dict(n_steps=200_000, log_interval_steps=10_000),
        source="tuned here on CartPole-v1 (docs/notes/appo.md)",
        description="Asynchronous PPO: clipped surrogate against the behaviour policy, "
                    "V-trace targets (asynchronous with --runner async)",
    ),
    "r2d1": Preset(
        algo="rlpyt.algos.dqn.r2d1:R2D1",
        agents={"discrete": "rlpyt.agents.dqn.r2d1_agent:R2d1Agent"},
        env="CartPole-v1",
        # Short sequences and a small replay for classic control (the R2D1 defaults are
        # Atari's); these learn velocity-masked CartPole-v1 (tests/test_r2d1.py).  With
        # k target copies of n-step targets the values see n * k steps ahead: 5-step
        # targets copied every 25 updates (one per 2,000 env steps) see about 500 steps
        # within 200k, far enough to keep the cart on the track, which drifts off over
        # hundreds of steps (docs/notes/r2d1_horizon.md has the runs).
        algo_kwargs=dict(discount=0.99, batch_T=20, batch_B=32, warmup_T=10,
                         store_rnn_state_interval=10, n_step_return=5, min_steps_learn=5_000,
                         replay_size=50_000, replay_ratio=8, target_update_interval=25,
                         eps_steps=30_000, learning_rate=1e-3),
        sampler_kwargs=dict(batch_T=20, batch_B=16, max_decorrelation_steps=0,
                            eval_n_envs=4, eval_max_trajectories=8),
        runner_kwargs=dict(n_steps=300_000, log_interval_steps=10_000),
        source="tuned here on CartPole-v1 (docs/notes/r2d1_horizon.md)",
        description="Recurrent DQN from replayed sequences (R2D2 with one learner)",
    ),
}
"""The classic-control presets by algorithm name (default envs CartPole-v1 and Pendulum-v1)."""

# Off-policy continuous control, with the settings of examples/<algo>_pendulum.py (checked
# by tests/test_qpg_learning.py): (64, 64) networks, batch 64, one update per env step.
_QPG_SMALL = dict(model_kwargs=dict(hidden_sizes=[64, 64]),
                  q_model_kwargs=dict(hidden_sizes=[64, 64]))
_QPG_SAMPLER = dict(batch_T=4, batch_B=1, max_decorrelation_steps=0, eval_n_envs=5,
                    eval_max_trajectories=10)
PRESETS.update(
    sac=Preset(
        algo="rlpyt.algos.qpg.sac:SAC",
        agents={"continuous": "rlpyt.agents.qpg.sac_agent:SacAgent"},
        env="Pendulum-v1",
        algo_kwargs=dict(batch_size=64, replay_ratio=64, min_steps_learn=1000,
                         replay_size=100_000, learning_rate=1e-3),
        agent_kwargs=_QPG_SMALL,
        sampler_kwargs=_QPG_SAMPLER,
        runner_kwargs=dict(n_steps=20_000, log_interval_steps=2_000),
        source="tuned here on Pendulum-v1 (docs/notes/learning_tests.md)",
        description="Soft Actor-Critic (twin critics, learned entropy temperature)",
    ),
    td3=Preset(
        algo="rlpyt.algos.qpg.td3:TD3",
        agents={"continuous": "rlpyt.agents.qpg.td3_agent:Td3Agent"},
        env="Pendulum-v1",
        algo_kwargs=dict(batch_size=64, replay_ratio=64, min_steps_learn=1000,
                         replay_size=100_000),
        agent_kwargs=_QPG_SMALL,
        sampler_kwargs=_QPG_SAMPLER,
        runner_kwargs=dict(n_steps=20_000, log_interval_steps=2_000),
        source="tuned here on Pendulum-v1 (docs/notes/learning_tests.md)",
        description="Twin Delayed DDPG (clipped double Q, target smoothing, delayed policy)",
    ),
    ddpg=Preset(
        algo="rlpyt.algos.qpg.ddpg:DDPG",
        agents={"continuous": "rlpyt.agents.qpg.ddpg_agent:DdpgAgent"},
        env="Pendulum-v1",
        algo_kwargs=dict(batch_size=64, replay_ratio=64, min_steps_learn=1000,
                         replay_size=100_000, learning_rate=1e-3),
        agent_kwargs=_QPG_SMALL,
        sampler_kwargs=_QPG_SAMPLER,
        runner_kwargs=dict(n_steps=20_000, log_interval_steps=2_000),
        source="tuned here on Pendulum-v1 (docs/notes/learning_tests.md)",
        description="Deep Deterministic Policy Gradient",
    ),
)

# Value-based, with the robust CartPole-v1 settings of examples/dqn_cartpole.py (checked by
# tests/test_dqn_learning.py, whose rule docs/notes/learning_tests.md states).  They are
# for runs of about 100k steps: in longer runs the training episodes fall back from 500
# (docs/notes/classic_q_500k.md).
# The DQN class defaults are classic rlpyt's, tuned for Atari.
_DQN_CARTPOLE = dict(discount=0.99, batch_size=64, min_steps_learn=1_000, replay_size=100_000,
                     replay_ratio=32, target_update_interval=100, learning_rate=1e-3,
                     eps_steps=10_000, delta_clip=1.0, clip_grad_norm=10.0)
# Double Q-learning and 3-step returns keep a solved CartPole solved: with one-step plain
# targets the max's upward bias lets the values of states near failure creep up once
# failures are rare, and a failure's zero travels back only one step per update.  DQN
# also takes Adam at 5e-4: at 1e-3 its step noise still flips the greedy action in the
# rare states near failure after solving (docs/notes/dqn_cartpole.md has the runs, DQN's
# and C51's).
_DQN_HOLDS = dict(double_dqn=True, n_step_return=3)
_DQN_SAMPLER = dict(batch_T=4, batch_B=8, max_decorrelation_steps=0, eval_n_envs=5,
                    eval_max_trajectories=5)

# Acrobot and MountainCar take CleanRL's classic-control settings (cleanrl/dqn.py and
# cleanrl/c51.py), the source of the published 500k-step figures they are compared with:
# one env, a gradient step of batch 128 every 10 env steps (replay ratio 12.8), a 10k
# replay, learning from step 10k, a target copy every 500 env steps (50 updates), Adam
# 2.5e-4, epsilon 1 -> 0.05 by half the budget, 120-84 ReLU networks, one-step targets,
# no gradient clipping.  DQN regresses with the squared error; C51 has 101 atoms on
# [-100, 100] and Adam's eps at 0.01 / batch.  CleanRL's epsilon starts falling at step
# 0, ours at the first update (step 10k): at most 0.04 apart.
_CLEANRL_CLASSIC_SOURCE = "CleanRL's cleanrl/{file} (its classic-control benchmark)"
_CLEANRL_ALGO = dict(discount=0.99, batch_size=128, min_steps_learn=10_000,
                     replay_size=10_000, replay_ratio=12.8, target_update_interval=50,
                     target_update_tau=1.0, learning_rate=2.5e-4, eps_steps=250_000,
                     clip_grad_norm=None, double_dqn=False, n_step_return=1)
_CLEANRL_RUN = dict(
    sampler=dict(batch_T=10, batch_B=1, max_decorrelation_steps=0, eval_n_envs=5,
                 eval_max_trajectories=5),
    runner=dict(n_steps=500_000, log_interval_steps=10_000),
)
_CLEANRL_DQN = dict(
    algo=dict(_CLEANRL_ALGO, delta_clip=None),
    agent=dict(eps_final=0.05, model_kwargs=dict(hidden_sizes=[120, 84])),
    source=_CLEANRL_CLASSIC_SOURCE.format(file="dqn.py"), **_CLEANRL_RUN)
_CLEANRL_C51 = dict(
    algo=dict(_CLEANRL_ALGO, V_min=-100.0, V_max=100.0, optim_kwargs=dict(eps=0.01 / 128)),
    agent=dict(eps_final=0.05, n_atoms=101, model_kwargs=dict(hidden_sizes=[120, 84])),
    source=_CLEANRL_CLASSIC_SOURCE.format(file="c51.py"), **_CLEANRL_RUN)
CLEANRL_CLASSIC_ENVS = ("Acrobot", "MountainCar")
"""Classic envs whose ``dqn`` and ``cat_dqn`` presets take CleanRL's settings."""
PRESETS.update(
    dqn=Preset(
        algo="rlpyt.algos.dqn.dqn:DQN",
        agents={"discrete": "rlpyt.agents.dqn.dqn_agent:DqnAgent"},
        env="CartPole-v1",
        algo_kwargs=dict(_DQN_CARTPOLE, **_DQN_HOLDS, learning_rate=5e-4),
        agent_kwargs=dict(eps_final=0.02, model_kwargs=dict(hidden_sizes=[128, 128])),
        sampler_kwargs=_DQN_SAMPLER,
        runner_kwargs=dict(n_steps=100_000, log_interval_steps=5_000),
        source="tuned here on CartPole-v1 (docs/notes/dqn_cartpole.md)",
        env_overrides={name: _CLEANRL_DQN for name in CLEANRL_CLASSIC_ENVS},
        description="Deep Q-Network (double, 3-step returns, Huber loss, target network, "
                    "time-limit bootstrapping)",
    ),
    cat_dqn=Preset(
        algo="rlpyt.algos.dqn.cat_dqn:CategoricalDQN",
        agents={"discrete": "rlpyt.agents.dqn.catdqn_agent:CatDqnAgent"},
        env="CartPole-v1",
        # Returns of CartPole with discount 0.99 and time-limit bootstrapping lie in [0, 100].
        algo_kwargs=dict(_DQN_CARTPOLE, **_DQN_HOLDS, V_min=0.0, V_max=100.0),
        agent_kwargs=dict(eps_final=0.02, model_kwargs=dict(hidden_sizes=[128, 128])),
        sampler_kwargs=_DQN_SAMPLER,
        runner_kwargs=dict(n_steps=100_000, log_interval_steps=5_000),
        source="tuned here on CartPole-v1 (docs/notes/dqn_cartpole.md)",
        env_overrides={name: _CLEANRL_C51 for name in CLEANRL_CLASSIC_ENVS},
        description="Categorical DQN (C51: distribution over 51 return atoms; double, "
                    "3-step returns)",
    ),
)
