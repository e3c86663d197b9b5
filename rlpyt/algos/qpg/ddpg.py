"""Deep Deterministic Policy Gradient."""

from __future__ import annotations

from collections import namedtuple

import torch

from rlpyt.algos.qpg.base import (
    QpgAlgo,
    check_fraction,
    check_int,
    check_positive,
    weighted_mean,
)
from rlpyt.algos.qpg.targets import bootstrap_target
from rlpyt.utils.quick_args import save__init__args

__all__ = ["DDPG", "DdpgOptInfo"]

DdpgOptInfo = namedtuple("DdpgOptInfo", ["muLoss", "qLoss", "muGradNorm", "qGradNorm", "q"])


class DDPG(QpgAlgo):
    """Deep Deterministic Policy Gradient (Lillicrap et al. 2016, "Continuous control with
    deep reinforcement learning") with a ``DdpgAgent``, from a uniform replay buffer.

    Each update, on a replayed batch (actions in the agent's model units)::

        y       = R^n + discount^n (1 - done_n) Q'(s', mu'(s'))     (clipped to ±q_target_clip)
        q_loss  = 0.5 * mean((Q(s, a) - y)^2)
        mu_loss = -mean(Q(s, mu(s)))                 (every policy_update_interval updates)

    and a Polyak update of the target policy and critic every
    ``target_update_interval`` updates.

    Args:
        discount: reward discount gamma (default 0.99).
        batch_size: transitions per update (default 64).
        min_steps_learn: env steps before the first update (default 1e4).
        replay_size: transitions the replay holds (default 1e6).
        replay_ratio: replayed samples per new sample; each iteration takes
            ``replay_ratio * T * B / batch_size`` updates (default 64: one per env step).
        target_update_tau: Polyak weight of the online networks (default 0.01).
        target_update_interval: updates between target updates (default 1).
        policy_update_interval: updates between policy updates (default 1).
        learning_rate: policy step size (default 1e-4).
        q_learning_rate: critic step size (default 1e-3).
        OptimCls: optimizer class (default ``torch.optim.Adam``, fused kernel).
        optim_kwargs: extra optimizer keywords (default None).
        initial_optim_state_dict: what ``optim_state_dict()`` returned (default None).
        clip_grad_norm: gradient-norm clip of each optimizer (default 1e8).
        q_target_clip: bound on the critic target (default 1e6).
        n_step_return: rewards summed into the target (default 1).
        bootstrap_timelimit: drop samples whose window ended in a time-limit truncation,
            so truncations are never treated as terminal (default True).
        ReplayBufferCls: replay class; None picks ``TlUniformReplayBuffer`` (or
            ``UniformReplayBuffer`` without ``bootstrap_timelimit``) (default None).
        updates_per_sync: updates per ``optimize_agent`` call under an async runner
            (default 1).
    """

    OptInfoCls = DdpgOptInfo
    opt_info_fields = tuple(DdpgOptInfo._fields)

    def __init__(
        self,
        discount: float = 0.99,
        batch_size: int = 64,
        min_steps_learn: int = int(1e4),
        replay_size: int = int(1e6),
        replay_ratio: float = 64,
        target_update_tau: float = 0.01,
        target_update_interval: int = 1,
        policy_update_interval: int = 1,
        learning_rate: float = 1e-4,
        q_learning_rate: float = 1e-3,
        OptimCls: type[torch.optim.Optimizer] = torch.optim.Adam,
        optim_kwargs: dict | None = None,
        initial_optim_state_dict: dict | None = None,
        clip_grad_norm: float | None = 1e8,
        q_target_clip: float = 1e6,
        n_step_return: int = 1,
        bootstrap_timelimit: bool = True,
        ReplayBufferCls=None,
        updates_per_sync: int = 1,
    ):
        save__init__args(locals())
        self.check_args()

    def check_args(self) -> None:
        name = type(self).__name__
        self.check_common_args()
        check_fraction(name, "target_update_tau", self.target_update_tau, low_open=True)
        self.target_update_interval = check_int(
            name, "target_update_interval", self.target_update_interval, 1
        )
        self.policy_update_interval = check_int(
            name, "policy_update_interval", self.policy_update_interval, 1
        )
        check_positive(name, "learning_rate", self.learning_rate)
        check_positive(name, "q_learning_rate", self.q_learning_rate)
        check_positive(name, "q_target_clip", self.q_target_clip)

    def make_optimizers(self) -> dict[str, torch.optim.Optimizer]:
        return dict(
            mu=self.make_optimizer(self.agent.pi_parameters(), self.learning_rate),
            q=self.make_optimizer(self.agent.q_parameters(), self.q_learning_rate),
        )

    def train_step(self, batch, diagnostics) -> None:
        agent_inputs, action = batch.agent_inputs, self.agent.to_model_action(batch.action)
        weights = self.loss_weights(batch)
        y = self.q_target(batch)
        q_loss, q_mean = self.q_loss(agent_inputs, action, y, weights)
        (q_grad_norm,) = self.gradient_step(q_loss, "q")
        diagnostics.add(qLoss=q_loss, qGradNorm=q_grad_norm, q=q_mean)

        if self.update_counter % self.policy_update_interval == 0:
            mu_loss = -weighted_mean(self.agent.q_at_mu(*agent_inputs), weights)
            (mu_grad_norm,) = self.gradient_step(mu_loss, "mu")
            diagnostics.add(muLoss=mu_loss, muGradNorm=mu_grad_norm)
        if self.update_counter % self.target_update_interval == 0:
            self.agent.update_target(self.target_update_tau)

    @torch.no_grad()
    def q_target(self, batch) -> torch.Tensor:
        """``R^n + discount^n (1 - done_n) next_value``, clipped to ``±q_target_clip``."""
        return bootstrap_target(
            batch.return_, batch.done_n, self.next_value(batch.target_inputs),
            self.discount ** self.n_step_return, clip=self.q_target_clip,
        )

    def next_value(self, target_inputs) -> torch.Tensor:
        """Target critic at the target policy's action, ``Q'(s', mu'(s'))``."""
        return self.agent.target_q_at_mu(*target_inputs)

    def q_loss(self, agent_inputs, action, y, weights):
        """``(0.5 * mean((Q(s, a) - y)^2), mean Q)``."""
        q = self.agent.q(*agent_inputs, action)
        return 0.5 * weighted_mean((q - y) ** 2, weights), q.detach().mean()
