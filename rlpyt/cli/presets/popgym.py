"""Presets of POPGym ids (``popgym-<Task><Level>-v0``, Morad et al. 2023): memory tasks.

POPGym's tasks hide what the agent must act on behind time: ``RepeatPrevious`` asks for
the suit of the card dealt k steps ago, ``RepeatFirst`` for the first card's, so a
feed-forward agent, which sees only the card in front of it, scores what chance scores,
and a recurrent one must carry the card in its state.  ``r2d1`` is the classic-control
R2D1 preset (LSTM agent, sequences of 20 with 10 steps of burn-in) and ``dqn`` the
feed-forward DQN beside it at the same budget: the baseline that shows the task needs
memory.  Observations of cards and symbols arrive one-hot (``rlpyt.envs.popgym``).
"""

from __future__ import annotations

from rlpyt.cli.presets.base import Preset
from rlpyt.envs.popgym import POPGYM_PREFIX

__all__ = ["POPGYM_PREFIX", "POPGYM_PRESETS"]

# An episode of an Easy task is one deck: 51 steps, reward +-1/48 a step once k cards are
# dealt (RepeatPrevious), so returns lie in [-1, 1] and guessing scores -0.5 on average.
_SAMPLER = dict(batch_T=20, batch_B=16, max_decorrelation_steps=0, eval_n_envs=4,
                eval_max_trajectories=16)
# R2D1 recalls every suit of RepeatPreviousEasy after about 400k steps (docs/notes/popgym.md).
_RUNNER = dict(n_steps=500_000, log_interval_steps=25_000)
POPGYM_PRESETS: dict[str, Preset] = {
    "r2d1": Preset(
        algo="rlpyt.algos.dqn.r2d1:R2D1",
        agents={"discrete": "rlpyt.agents.dqn.r2d1_agent:R2d1Agent"},
        env="popgym-RepeatPreviousEasy-v0",
        algo_kwargs=dict(discount=0.99, batch_T=20, batch_B=32, warmup_T=10,
                         store_rnn_state_interval=10, n_step_return=5, min_steps_learn=5_000,
                         replay_size=50_000, replay_ratio=8, target_update_interval=25,
                         eps_steps=30_000, learning_rate=1e-3),
        sampler_kwargs=_SAMPLER,
        runner_kwargs=_RUNNER,
        source="the classic-control R2D1 preset (docs/notes/r2d1_horizon.md), on POPGym",
        description="Recurrent DQN from replayed sequences (R2D2 with one learner)",
    ),
    "dqn": Preset(
        algo="rlpyt.algos.dqn.dqn:DQN",
        agents={"discrete": "rlpyt.agents.dqn.dqn_agent:DqnAgent"},
        env="popgym-RepeatPreviousEasy-v0",
        algo_kwargs=dict(discount=0.99, batch_size=64, min_steps_learn=5_000,
                         replay_size=50_000, replay_ratio=32, target_update_interval=100,
                         learning_rate=5e-4, eps_steps=30_000, delta_clip=1.0,
                         clip_grad_norm=10.0, double_dqn=True, n_step_return=3),
        agent_kwargs=dict(eps_final=0.02, model_kwargs=dict(hidden_sizes=[128, 128])),
        sampler_kwargs=dict(_SAMPLER, batch_T=4),
        runner_kwargs=_RUNNER,
        source="the classic-control DQN preset (docs/notes/dqn_cartpole.md), on POPGym: "
               "the feed-forward baseline",
        description="Deep Q-Network, feed-forward: sees only the current observation",
    ),
}
"""The POPGym presets by algorithm name (default env popgym-RepeatPreviousEasy-v0)."""
