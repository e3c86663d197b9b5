"""Twin Delayed DDPG (TD3)."""

from __future__ import annotations

import torch

from rlpyt.algos.qpg.base import weighted_mean
from rlpyt.algos.qpg.ddpg import DDPG
from rlpyt.algos.qpg.targets import twin_min

__all__ = ["TD3"]


class TD3(DDPG):
    """TD3 (Fujimoto et al. 2018, "Addressing Function Approximation Error in Actor-Critic
    Methods") with a ``Td3Agent``: DDPG plus

    * clipped double Q-learning: ``y = R^n + discount^n (1 - done_n) min_i Q'_i(s', a')``,
      both critics regress to the same ``y``;
    * target-policy smoothing: ``a'`` is the target policy's action plus clipped noise,
      drawn by the agent (``Td3Agent(target_noise_std=0.2, target_noise_clip=0.5)``);
    * delayed updates: the policy (on ``Q_1``) and the targets every 2 critic updates.

    Args:
        batch_size: transitions per update (default 100).
        replay_ratio: replayed samples per new sample (default 100: one update per env
            step).
        target_update_tau: Polyak weight of the online networks (default 0.005).
        target_update_interval: updates between target updates (default 2).
        policy_update_interval: updates between policy updates (default 2).
        learning_rate: policy step size (default 1e-3).
        q_learning_rate: critic step size, one optimizer over both critics (default 1e-3).
        discount, min_steps_learn, replay_size, OptimCls, optim_kwargs,
        initial_optim_state_dict, clip_grad_norm, q_target_clip, n_step_return,
        bootstrap_timelimit, ReplayBufferCls, updates_per_sync: as ``DDPG``.
    """

    def __init__(
        self,
        batch_size: int = 100,
        replay_ratio: float = 100,
        target_update_tau: float = 0.005,
        target_update_interval: int = 2,
        policy_update_interval: int = 2,
        learning_rate: float = 1e-3,
        q_learning_rate: float = 1e-3,
        **kwargs,
    ):
        super().__init__(
            batch_size=batch_size,
            replay_ratio=replay_ratio,
            target_update_tau=target_update_tau,
            target_update_interval=target_update_interval,
            policy_update_interval=policy_update_interval,
            learning_rate=learning_rate,
            q_learning_rate=q_learning_rate,
            **kwargs,
        )

    def next_value(self, target_inputs) -> torch.Tensor:
        """``min_i Q'_i(s', a')`` at the smoothed target action."""
        return twin_min(*self.agent.target_q_at_mu(*target_inputs))

    def q_loss(self, agent_inputs, action, y, weights):
        """Both critics regress to ``y``: ``(sum_i 0.5 * mean((Q_i - y)^2), mean Q_1)``."""
        q1, q2 = self.agent.q(*agent_inputs, action)
        loss = 0.5 * weighted_mean((q1 - y) ** 2 + (q2 - y) ** 2, weights)
        return loss, q1.detach().mean()
