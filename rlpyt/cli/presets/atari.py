"""Presets of Gymnasium's ALE ids (``ALE/Pong-v5``, ``PongNoFrameskip-v4``, ...).

The env is the library's ``AtariEnv`` with the protocol of the id's family
(``rlpyt.envs.atari.ids``: sticky actions for the v5 ids, the DQN Nature pipeline for the
NoFrameskip ids; 4 stacked 84x84 frames for both).  Each algorithm takes the settings of
one published source, named in ``source`` (printed when a run starts) and beside the
values.  Budgets are agent steps (4 frames each): 10M steps are 40M frames.  Training
scores of whole games (``GameScoreAverage``) are the measure; the evaluation at each log
row (8 games) takes sampling time, so a run timed to a score turns it off
(``--sampler.eval_n_envs 0``).

A2C keeps its source's RMSprop.  The RMSprop of IMPALA and the DQN Nature paper is
replaced by Adam, as classic rlpyt's Atari examples do.
"""

from __future__ import annotations

from rlpyt.cli.presets.base import Preset

__all__ = ["A3C_CNN", "ATARI_PRESETS", "NATURE_CNN"]

# Mnih et al. 2015: 32 8x8/4, 64 4x4/2, 64 3x3/1 convolutions, 512 units (84x84 -> 7x7).
NATURE_CNN = dict(channels=[32, 64, 64], kernel_sizes=[8, 4, 3], strides=[4, 2, 1],
                  paddings=[0, 0, 0], fc_sizes=512)
"""``model_kwargs`` of the Nature DQN conv net for the policy-gradient Atari models."""
# Mnih et al. 2016 (A3C), the network of the PPO paper's Atari runs (Schulman et al. 2017):
# 16 8x8/4, 32 4x4/2 convolutions, 256 units; a third of the Nature net's arithmetic.
A3C_CNN = dict(channels=[16, 32], kernel_sizes=[8, 4], strides=[4, 2], paddings=[0, 0],
               fc_sizes=256)
"""``model_kwargs`` of the A3C conv net for the policy-gradient Atari models."""
_EVAL = dict(eval_n_envs=4, eval_max_trajectories=8, eval_max_steps=100_000)
_PG_AGENT = {"discrete": "rlpyt.agents.pg.atari:AtariFfAgent"}
_DQN_AGENT = {"discrete": "rlpyt.agents.dqn.atari.atari_dqn_agent:AtariDqnAgent"}
_NATURE_DQN_CONV = dict(channels=[32, 64, 64], kernel_sizes=[8, 4, 3], strides=[4, 2, 1],
                        paddings=[0, 0, 0])
# DQN Nature (Mnih et al. 2015, Extended Data Table 1): replay 1M, batch 32, one update
# every 4 agent steps, 50k steps before learning, epsilon 1 -> 0.1 over 1M steps, target
# copy every 10k agent steps (2,500 updates), discount 0.99, Huber loss.
_DQN_NATURE = dict(discount=0.99, batch_size=32, replay_size=1_000_000, replay_ratio=8,
                   min_steps_learn=50_000, eps_steps=1_000_000, target_update_interval=2_500,
                   delta_clip=1.0, clip_grad_norm=10.0)
_ADAM_EPS = dict(optim_kwargs=dict(eps=0.01 / 32))  # Dopamine's and C51's Adam epsilon
_DQN_SAMPLER = dict(batch_T=4, batch_B=1, max_decorrelation_steps=0, **_EVAL)

ATARI_PRESETS: dict[str, Preset] = {
    "ppo": Preset(
        algo="rlpyt.algos.pg.ppo:PPO",
        agents=_PG_AGENT,
        env="ALE/Pong-v5",
        # CleanRL's ppo_atari.py: 8 envs of 128 steps, 4 epochs of 4 minibatches, Adam
        # 2.5e-4 annealed to 0 (Adam epsilon 1e-5), discount 0.99, GAE lambda 0.95, clip
        # 0.1 kept fixed, entropy 0.01, gradient clip 0.5.  Sample Factory's Atari
        # defaults (the same values otherwise) add what makes Pong learn in far fewer
        # frames here, the pixel normalization above all (docs/notes/pong.md has the
        # runs): each pixel normalised by its running statistics, returns normalised for
        # the value head, whose clipped loss has Sample Factory's weight (0.5 on the
        # squared error: 1.0 here, where the loss has its own 1/2) and clip (1.0 in
        # normalised units).  The network is the PPO paper's (A3C's), not the Nature net:
        # PPO's 4 epochs make the learner the bottleneck on CPUs, and this net needs a
        # third of the Nature net's arithmetic, so it trains more frames a second.
        algo_kwargs=dict(discount=0.99, gae_lambda=0.95, learning_rate=2.5e-4, ratio_clip=0.1,
                         epochs=4, minibatches=4, entropy_loss_coeff=0.01,
                         value_loss_coeff=1.0, clip_grad_norm=0.5, normalize_advantage=True,
                         clip_vf_loss=True, vf_clip=1.0, normalize_returns=True,
                         linear_lr_schedule=True, anneal_ratio_clip=False,
                         optim_kwargs=dict(eps=1e-5)),
        agent_kwargs=dict(model_kwargs=dict(**A3C_CNN, normalize_observation=True)),
        sampler_kwargs=dict(batch_T=128, batch_B=8, max_decorrelation_steps=0, **_EVAL),
        runner_kwargs=dict(n_steps=10_000_000, log_interval_steps=102_400),
        source="CleanRL's ppo_atari.py with Sample Factory's input and return "
               "normalization, and the PPO paper's (A3C's) network",
        torch_threads=None,  # 4 epochs of updates per batch: the learner is the bottleneck
        description="Proximal Policy Optimization (clipped surrogate, GAE)",
    ),
    "appo": Preset(
        algo="rlpyt.algos.pg.appo:APPO",
        agents=_PG_AGENT,
        env="ALE/Pong-v5",
        # The ppo preset's values (CleanRL's ppo_atari.py with Sample Factory's input
        # normalization and value loss, the A3C network), on the asynchronous path
        # Sample Factory's APPO takes: the ratio against the acting policy, V-trace
        # targets with GAE's lambda.  Sample Factory normalizes returns too; APPO does
        # not (the ppo preset learned Pong as fast without it: docs/notes/pong.md).  The
        # clip is around the learner's policy (APPO's default, decoupled PPO).  A FIFO of
        # 3 lets the sampler fill the next batch while the learner learns one (lag 1):
        # on CPUs the learner is the bottleneck, so a deeper FIFO adds lag and no speed,
        # and one of 2 leaves no batch to sample meanwhile (docs/notes/appo.md).
        # Two epochs of 8 minibatches take PPO's 16 gradient steps a batch for half its
        # arithmetic, and the rate stays constant, as Sample Factory's default schedule:
        # each frame costs the learner half as much.  At PPO's 2.5e-4 the slowest of
        # three Pong seeds took 4.9M frames to 18; twice the rate doubles how far a batch
        # moves the policy (its approximate KL), and three seeds reached 18 at 2.0M to
        # 2.5M frames (docs/notes/appo.md).
        algo_kwargs=dict(discount=0.99, vtrace_lambda=0.95, learning_rate=5e-4,
                         ratio_clip=0.1, epochs=2, minibatches=8, entropy_loss_coeff=0.01,
                         value_loss_coeff=1.0, clip_grad_norm=0.5, normalize_advantage=True,
                         clip_vf_loss=True, vf_clip=1.0, linear_lr_schedule=False,
                         fifo_size=3, optim_kwargs=dict(eps=1e-5)),
        agent_kwargs=dict(model_kwargs=dict(**A3C_CNN, normalize_observation=True)),
        sampler_kwargs=dict(batch_T=128, batch_B=8, max_decorrelation_steps=0, **_EVAL),
        runner_kwargs=dict(n_steps=10_000_000, log_interval_steps=102_400),
        source="the ppo preset's values (CleanRL's ppo_atari.py, Sample Factory's input "
               "normalization) with V-trace targets, as Sample Factory's APPO; 2 epochs "
               "of 8 minibatches at a constant rate of 5e-4",
        torch_threads=None,
        description="Asynchronous PPO: clipped surrogate against the behaviour policy, "
                    "V-trace targets (asynchronous with --runner async)",
    ),
    "a2c": Preset(
        algo="rlpyt.algos.pg.a2c:A2C",
        agents=_PG_AGENT,
        env="ALE/Pong-v5",
        # RL Baselines3 Zoo's a2c.yml (atari), the source of its published Pong figure:
        # SB3's A2C defaults with 16 envs of 5 steps, RMSprop 7e-4 (alpha 0.99, epsilon
        # 1e-5; the zoo's TF-like RMSprop puts the epsilon inside the square root),
        # discount 0.99, GAE lambda 1, no advantage normalization, entropy 0.01, value
        # weight 0.25 on the mean squared error (0.5 on our half squared error),
        # gradient clip 0.5, the Nature CNN with orthogonal init; pixels scaled by 1/255.
        algo_kwargs=dict(discount=0.99, learning_rate=7e-4, entropy_loss_coeff=0.01,
                         value_loss_coeff=0.5, clip_grad_norm=0.5, gae_lambda=1.0,
                         normalize_advantage=False, OptimCls="torch.optim.RMSprop",
                         optim_kwargs=dict(alpha=0.99, eps=1e-5)),
        agent_kwargs=dict(model_kwargs=NATURE_CNN),
        sampler_kwargs=dict(batch_T=5, batch_B=16, max_decorrelation_steps=0, **_EVAL),
        runner_kwargs=dict(n_steps=10_000_000, log_interval_steps=100_000),
        source="RL Baselines3 Zoo a2c.yml (atari)",
        description="Advantage Actor-Critic (synchronous A3C)",
    ),
    "impala": Preset(
        algo="rlpyt.algos.pg.impala:Impala",
        agents=_PG_AGENT,
        env="ALE/Pong-v5",
        # The IMPALA paper (Espeholt et al. 2018, Table G.1, Atari): unrolls of 20, batch
        # 32, discount 0.99, entropy 0.01, baseline cost 0.5, learning rate 6e-4 annealed
        # to 0, gradient clip 40, rewards clipped to [-1, 1]; V-trace with rho and c at 1.
        # With Sample Factory's input normalization (as the ppo preset): without it the
        # policy stayed uniform for 10M frames of Pong (docs/notes/pong.md).
        algo_kwargs=dict(discount=0.99, learning_rate=6e-4, entropy_loss_coeff=0.01,
                         value_loss_coeff=0.5, clip_grad_norm=40.0, linear_lr_schedule=True,
                         rho_bar=1.0, c_bar=1.0, vtrace_lambda=1.0),
        agent_kwargs=dict(model_kwargs=dict(**NATURE_CNN, normalize_observation=True)),
        sampler_kwargs=dict(batch_T=20, batch_B=32, max_decorrelation_steps=0, **_EVAL),
        runner_kwargs=dict(n_steps=10_000_000, log_interval_steps=100_000),
        source="the IMPALA paper, Espeholt et al. 2018 (Table G.1), with Sample "
               "Factory's input normalization",
        description="IMPALA's V-trace actor-critic (asynchronous with --runner async)",
    ),
    "dqn": Preset(
        algo="rlpyt.algos.dqn.dqn:DQN",
        agents=_DQN_AGENT,
        env="ALE/Pong-v5",
        algo_kwargs=dict(_DQN_NATURE, learning_rate=2.5e-4, **_ADAM_EPS),
        agent_kwargs=dict(eps_final=0.1, eps_eval=0.05, model_kwargs=_NATURE_DQN_CONV),
        sampler_kwargs=_DQN_SAMPLER,
        runner_kwargs=dict(n_steps=10_000_000, log_interval_steps=100_000),
        source="DQN Nature, Mnih et al. 2015 (Extended Data Table 1)",
        description="Deep Q-Network (--algo.double_dqn, --agent.model_kwargs.dueling and "
                    "--algo.prioritized_replay for the variants)",
    ),
    "cat_dqn": Preset(
        algo="rlpyt.algos.dqn.cat_dqn:CategoricalDQN",
        agents={"discrete": "rlpyt.agents.dqn.atari.atari_catdqn_agent:AtariCatDqnAgent"},
        env="ALE/Pong-v5",
        # C51 (Bellemare et al. 2017): DQN Nature's schedule with Adam 2.5e-4 (epsilon
        # 0.01/32), 51 atoms on [-10, 10], epsilon 1 -> 0.01, 0.001 in evaluation.
        algo_kwargs=dict(_DQN_NATURE, learning_rate=2.5e-4, V_min=-10.0, V_max=10.0,
                         **_ADAM_EPS),
        agent_kwargs=dict(eps_final=0.01, eps_eval=0.001, model_kwargs=_NATURE_DQN_CONV),
        sampler_kwargs=_DQN_SAMPLER,
        runner_kwargs=dict(n_steps=10_000_000, log_interval_steps=100_000),
        source="the C51 paper, Bellemare et al. 2017",
        description="Categorical DQN (C51: distribution over 51 return atoms)",
    ),
    "r2d1": Preset(
        algo="rlpyt.algos.dqn.r2d1:R2D1",
        agents={"discrete": "rlpyt.agents.dqn.atari.atari_r2d1_agent:AtariR2d1Agent"},
        env="ALE/Pong-v5",
        # R2D2 (Kapturowski et al. 2019, Table 2) with one learner: sequences of 80 after
        # a burn-in of 40, batch 64, 5-step double-Q targets with value rescaling and no
        # reward clipping, a dueling head, discount 0.997, Adam 1e-4 (epsilon 1e-3), target copy every
        # 2,500 updates, prioritized replay (exponent 0.9); no life-loss episode ends;
        # actor epsilons 0.4^(1 + 7 i / (N - 1)).  These are the R2D1 class defaults.
        algo_kwargs=dict(discount=0.997, batch_T=80, batch_B=64, warmup_T=40,
                         store_rnn_state_interval=40, n_step_return=5, min_steps_learn=100_000,
                         replay_size=1_000_000, replay_ratio=1, target_update_interval=2_500,
                         learning_rate=1e-4, optim_kwargs=dict(eps=1e-3)),
        agent_kwargs=dict(eps_final=0.4, eps_final_min=0.4 ** 8, eps_eval=0.001,
                          model_kwargs=dict(_NATURE_DQN_CONV, dueling=True)),
        sampler_kwargs=dict(batch_T=40, batch_B=16, max_decorrelation_steps=0, **_EVAL),
        runner_kwargs=dict(n_steps=10_000_000, log_interval_steps=100_000),
        env_kwargs=dict(clip_reward=False, episodic_lives=False),
        source="R2D2, Kapturowski et al. 2019 (Table 2), one learner",
        description="Recurrent DQN from replayed sequences (R2D2 with one learner; "
                    "--runner async)",
    ),
}
"""The Atari presets by algorithm name (default env ALE/Pong-v5)."""
