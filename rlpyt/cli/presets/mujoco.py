"""Presets of Gymnasium's MuJoCo ids (HalfCheetah, Hopper, Walker2d, Ant, Humanoid, ...).

Each preset takes the settings of one published source, named in ``source`` (printed
when a run starts) and beside the values.  Evaluation runs 10 episodes at each log row:
the off-policy agents and A2C act with their deterministic policy (the mean action), as
the TD3 paper, Tianshou and the RL Baselines3 Zoo evaluate; PPO samples its policy, as
the training episodes that CleanRL reports do.  Every value can be overridden on the command line.
"""

from __future__ import annotations

from rlpyt.cli.presets.base import Preset

__all__ = ["MUJOCO_PRESETS"]

# One env, one env step per iteration; 10 evaluation episodes (of at most 1,000 steps)
# every 5,000 steps, as the TD3 paper and Tianshou's benchmark evaluate.
_OFF_POLICY_SAMPLER = dict(batch_T=1, batch_B=1, max_decorrelation_steps=0, eval_n_envs=10,
                           eval_max_trajectories=10)
_OFF_POLICY_RUNNER = dict(n_steps=1_000_000, log_interval_steps=5_000)
# The TD3 paper (Fujimoto et al. 2018, Section 6.1 and its appendix): 400-300 ReLU
# networks, Adam 1e-3 for actor and critic, batch 100, tau 0.005, exploration N(0, 0.1);
# purely random actions for the first 10k steps on HalfCheetah and Ant, 1k elsewhere.
_TD3_NETWORKS = dict(model_kwargs=dict(hidden_sizes=[400, 300]),
                     q_model_kwargs=dict(hidden_sizes=[400, 300]))
_TD3_PAPER = dict(discount=0.99, batch_size=100, replay_ratio=100, min_steps_learn=1_000,
                  replay_size=1_000_000, target_update_tau=0.005, learning_rate=1e-3,
                  q_learning_rate=1e-3)
_TD3_LONG_START = {name: dict(algo=dict(min_steps_learn=10_000)) for name in ("HalfCheetah",
                                                                               "Ant")}

MUJOCO_PRESETS: dict[str, Preset] = {
    "sac": Preset(
        algo="rlpyt.algos.qpg.sac:SAC",
        agents={"continuous": "rlpyt.agents.qpg.sac_agent:SacAgent"},
        env="HalfCheetah-v5",
        # Tianshou's MuJoCo benchmark (examples/mujoco/mujoco_sac.py, the settings of its
        # published 10-seed curves): 256-256 networks, Adam 1e-3 for actor and critics,
        # a fixed temperature of 0.2, batch 256, one update per env step, tau 0.005, 10k
        # uniformly random steps before learning.
        algo_kwargs=dict(discount=0.99, batch_size=256, replay_ratio=256,
                         min_steps_learn=10_000, replay_size=1_000_000,
                         target_update_tau=0.005, learning_rate=1e-3, fixed_alpha=0.2),
        agent_kwargs=dict(model_kwargs=dict(hidden_sizes=[256, 256]),
                          q_model_kwargs=dict(hidden_sizes=[256, 256]),
                          pretrain_std="uniform"),
        sampler_kwargs=_OFF_POLICY_SAMPLER,
        runner_kwargs=_OFF_POLICY_RUNNER,
        source="Tianshou's MuJoCo SAC benchmark (examples/mujoco/mujoco_sac.py)",
        description="Soft Actor-Critic (twin critics, fixed temperature 0.2)",
    ),
    "td3": Preset(
        algo="rlpyt.algos.qpg.td3:TD3",
        agents={"continuous": "rlpyt.agents.qpg.td3_agent:Td3Agent"},
        env="HalfCheetah-v5",
        # The TD3 paper's settings (above), with its target smoothing N(0, 0.2) clipped at
        # 0.5 and policy and target updates every 2 critic updates (the class defaults).
        algo_kwargs=dict(_TD3_PAPER, policy_update_interval=2, target_update_interval=2),
        agent_kwargs=dict(_TD3_NETWORKS, action_std=0.1, pretrain_std="uniform",
                          target_noise_std=0.2, target_noise_clip=0.5),
        sampler_kwargs=_OFF_POLICY_SAMPLER,
        runner_kwargs=_OFF_POLICY_RUNNER,
        env_overrides=_TD3_LONG_START,
        source="the TD3 paper, Fujimoto et al. 2018",
        description="Twin Delayed DDPG (clipped double Q, target smoothing, delayed policy)",
    ),
    "ddpg": Preset(
        algo="rlpyt.algos.qpg.ddpg:DDPG",
        agents={"continuous": "rlpyt.agents.qpg.ddpg_agent:DdpgAgent"},
        env="HalfCheetah-v5",
        # Tianshou's MuJoCo benchmark (examples/mujoco/mujoco_ddpg.py, the settings of its
        # published 10-seed curves): 256-256 networks, Adam 1e-3 for actor and critic,
        # batch 256, one update per env step, tau 0.005, exploration N(0, 0.1) in action
        # units, 25k uniformly random steps before learning (which Tianshou's step count
        # leaves out: its 100k is 125k env steps here), one-step targets.
        algo_kwargs=dict(discount=0.99, batch_size=256, replay_ratio=256,
                         min_steps_learn=25_000, replay_size=1_000_000,
                         target_update_tau=0.005, learning_rate=1e-3, q_learning_rate=1e-3,
                         policy_update_interval=1, target_update_interval=1),
        agent_kwargs=dict(model_kwargs=dict(hidden_sizes=[256, 256]),
                          q_model_kwargs=dict(hidden_sizes=[256, 256]), action_std=0.1,
                          pretrain_std="uniform"),
        sampler_kwargs=_OFF_POLICY_SAMPLER,
        runner_kwargs=_OFF_POLICY_RUNNER,
        source="Tianshou's MuJoCo DDPG benchmark (examples/mujoco/mujoco_ddpg.py)",
        description="Deep Deterministic Policy Gradient",
    ),
    "ppo": Preset(
        algo="rlpyt.algos.pg.ppo:PPO",
        agents={"continuous": "rlpyt.agents.pg.gaussian:GaussianPgAgent"},
        env="HalfCheetah-v5",
        # CleanRL's ppo_continuous_action.py (the PPO paper's MuJoCo settings, Schulman et
        # al. 2017, Table 3): one env, 2048 steps a batch, 10 epochs of 32 minibatches,
        # Adam 3e-4 (epsilon 1e-5) annealed to 0, clip 0.2 kept fixed and also applied to
        # the value, discount 0.99, GAE lambda 0.95, gradient clip 0.5, separate 64-64 tanh
        # MLPs with orthogonal init and a linear mean (GaussianPgMlpModel), normalised
        # observations clipped to 10, actions clipped to the bounds for the env (make's
        # default).  CleanRL scales rewards by the running std of the discounted return;
        # normalize_returns gives the value head the same units.
        algo_kwargs=dict(discount=0.99, gae_lambda=0.95, learning_rate=3e-4, ratio_clip=0.2,
                         epochs=10, minibatches=32, entropy_loss_coeff=0.0,
                         value_loss_coeff=0.5, clip_grad_norm=0.5, normalize_advantage=True,
                         clip_vf_loss=True, normalize_returns=True, linear_lr_schedule=True,
                         anneal_ratio_clip=False, optim_kwargs=dict(eps=1e-5)),
        agent_kwargs=dict(model_kwargs=dict(hidden_sizes=[64, 64],
                                            normalize_observation=True)),
        sampler_kwargs=dict(batch_T=2048, batch_B=1, max_decorrelation_steps=0,
                            eval_n_envs=10, eval_max_trajectories=10),
        runner_kwargs=dict(n_steps=1_000_000, log_interval_steps=20_480),
        source="CleanRL's ppo_continuous_action.py (PPO paper, Table 3), with return "
               "normalization for its reward scaling",
        description="Proximal Policy Optimization (clipped surrogate, GAE)",
    ),
    "a2c": Preset(
        algo="rlpyt.algos.pg.a2c:A2C",
        agents={"continuous": "rlpyt.agents.pg.gaussian:GaussianPgAgent"},
        env="HalfCheetah-v5",
        # The RL Baselines3 Zoo's MuJoCo A2C (a2c.yml, HalfCheetah-v3 and the other
        # MuJoCo ids: SB3's A2C defaults with VecNormalize), the source of its published
        # 1M-step figures: one env, 5 steps a batch, RMSprop 7e-4 (alpha 0.99, eps 1e-5),
        # discount 0.99, GAE lambda 1, value weight 0.5 on the mean squared error (1 on
        # our half squared error), no entropy bonus, gradient clip 0.5, no advantage
        # normalization; separate 64-64 tanh MLPs with orthogonal init, a linear mean and
        # a state-independent log std from 0 (SB3's MlpPolicy: GaussianPgMlpModel);
        # observations normalised and clipped to 10, rewards scaled by the running std
        # of the discounted return and clipped to 10 (VecNormalize); actions clipped to
        # the bounds for the env (make's default).  The zoo evaluates with the mean
        # action.
        algo_kwargs=dict(discount=0.99, learning_rate=7e-4, value_loss_coeff=1.0,
                         entropy_loss_coeff=0.0, clip_grad_norm=0.5, gae_lambda=1.0,
                         normalize_advantage=False, normalize_rewards=True,
                         OptimCls="torch.optim.RMSprop",
                         optim_kwargs=dict(alpha=0.99, eps=1e-5)),
        agent_kwargs=dict(model_kwargs=dict(hidden_sizes=[64, 64],
                                            normalize_observation=True),
                          eval_deterministic=True),
        sampler_kwargs=dict(batch_T=5, batch_B=1, max_decorrelation_steps=0,
                            eval_n_envs=10, eval_max_trajectories=10),
        runner_kwargs=dict(n_steps=1_000_000, log_interval_steps=50_000),
        source="RL Baselines3 Zoo a2c.yml (MuJoCo: SB3's A2C with VecNormalize)",
        description="Advantage Actor-Critic (synchronous A3C)",
    ),
}
"""The MuJoCo presets by algorithm name (default env HalfCheetah-v5)."""
