"""Soft Actor-Critic with twin critics and automatic entropy tuning."""

from __future__ import annotations

import math
from collections import namedtuple

import torch

from rlpyt.algos.qpg.base import (
    QpgAlgo,
    check_fraction,
    check_int,
    check_positive,
    weighted_mean,
)
from rlpyt.algos.qpg.targets import bootstrap_target, soft_state_value, twin_min
from rlpyt.utils.quick_args import save__init__args

__all__ = ["SAC", "SacOptInfo"]

SacOptInfo = namedtuple(
    "SacOptInfo",
    ["qLoss", "piLoss", "alphaLoss", "qGradNorm", "piGradNorm", "q1", "q2", "logPi",
     "piMu", "piLogStd", "alpha"],
)

HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


class SAC(QpgAlgo):
    """Soft Actor-Critic (Haarnoja et al. 2018, "Soft Actor-Critic Algorithms and
    Applications"), trained from a uniform replay buffer with an ``SacAgent``.

    Each update, on a replayed batch of ``batch_size`` transitions (actions in the
    agent's model units, ``[-1, 1]``)::

        a', log_pi' ~ pi(s')                         (n steps after s)
        y     = reward_scale * R^n + discount^n (1 - done_n) (min_i Q'_i(s', a') - alpha log_pi')
        q_loss  = sum_i 0.5 * mean((Q_i(s, a) - y)^2)
        a~, log_pi ~ pi(s)                           (reparameterised)
        pi_loss = mean(alpha log_pi - min_i Q_i(s, a~) - log p_prior(a~))
        alpha_loss = mean(-log_alpha (log_pi + target_entropy))

    All three losses come from the same parameters (the policy loss uses the critics
    before this update, as in the reference implementation) and share one backward
    pass; a Polyak update of the target critics follows every
    ``target_update_interval`` updates.

    Args:
        discount: reward discount gamma (default 0.99).
        batch_size: transitions per update (default 256).
        min_steps_learn: env steps collected before the first update; until then the
            agent explores with its pre-training noise (default 1e4).
        replay_size: transitions the replay holds (default 1e6).
        replay_ratio: replayed samples per new sample: each iteration takes
            ``replay_ratio * T * B / batch_size`` updates (default 256: one update per
            env step).
        target_update_tau: Polyak weight of the online critics (default 0.005).
        target_update_interval: updates between target updates (default 1).
        learning_rate: step size of the policy, critic and temperature (default 3e-4).
        OptimCls: optimizer class (default ``torch.optim.Adam``, fused kernel).
        optim_kwargs: extra optimizer keywords (default None).
        initial_optim_state_dict: what ``optim_state_dict()`` returned, loaded at
            initialisation (default None).
        fixed_alpha: a constant temperature; None learns it (default None).
        target_entropy: entropy the learned temperature aims for; ``"auto"`` is
            ``-action_dims`` (default ``"auto"``).
        reward_scale: factor on rewards in the target (default 1).
        action_prior: ``"uniform"`` (no prior term) or ``"gaussian"`` (a standard normal
            prior on the model-unit action) (default ``"uniform"``).
        reparameterize: True backpropagates through the sampled action; False uses the
            likelihood-ratio gradient of the same objective, with the batch-mean
            objective as a baseline (default True).
        clip_grad_norm: gradient-norm clip of each optimizer (default 1e9).
        n_step_return: rewards summed into the target (default 1).
        bootstrap_timelimit: drop samples whose window ended in a time-limit truncation,
            so truncations are never treated as terminal (default True).
        ReplayBufferCls: replay class; None picks ``TlUniformReplayBuffer`` (or
            ``UniformReplayBuffer`` without ``bootstrap_timelimit``) (default None).
        updates_per_sync: updates per ``optimize_agent`` call under an async runner
            (default 1).
    """

    OptInfoCls = SacOptInfo
    opt_info_fields = tuple(SacOptInfo._fields)

    def __init__(
        self,
        discount: float = 0.99,
        batch_size: int = 256,
        min_steps_learn: int = int(1e4),
        replay_size: int = int(1e6),
        replay_ratio: float = 256,
        target_update_tau: float = 0.005,
        target_update_interval: int = 1,
        learning_rate: float = 3e-4,
        OptimCls: type[torch.optim.Optimizer] = torch.optim.Adam,
        optim_kwargs: dict | None = None,
        initial_optim_state_dict: dict | None = None,
        fixed_alpha: float | None = None,
        target_entropy: float | str = "auto",
        reward_scale: float = 1,
        action_prior: str = "uniform",
        reparameterize: bool = True,
        clip_grad_norm: float | None = 1e9,
        n_step_return: int = 1,
        bootstrap_timelimit: bool = True,
        ReplayBufferCls=None,
        updates_per_sync: int = 1,
    ):
        save__init__args(locals())
        self.check_common_args()
        check_fraction("SAC", "target_update_tau", target_update_tau, low_open=True)
        self.target_update_interval = check_int(
            "SAC", "target_update_interval", target_update_interval, 1
        )
        check_positive("SAC", "learning_rate", learning_rate)
        check_positive("SAC", "fixed_alpha", fixed_alpha, allow_none=True)
        check_positive("SAC", "reward_scale", reward_scale)
        if action_prior not in ("uniform", "gaussian"):
            raise ValueError(
                f"SAC: action_prior={action_prior!r} must be 'uniform' or 'gaussian'"
            )
        is_number = isinstance(target_entropy, (int, float)) and not isinstance(
            target_entropy, bool
        )
        if target_entropy != "auto" and not is_number:
            raise ValueError(f"SAC: target_entropy={target_entropy!r} must be 'auto' or a number")

    def optim_initialize(self, rank: int = 0) -> None:
        action_dims = int(self.agent.env_spaces.action.shape[0])
        self._target_entropy = (
            -float(action_dims) if self.target_entropy == "auto" else float(self.target_entropy)
        )
        if self.fixed_alpha is not None:
            self.agent.set_alpha(self.fixed_alpha)
        super().optim_initialize(rank)

    def make_optimizers(self) -> dict[str, torch.optim.Optimizer]:
        agent, lr = self.agent, self.learning_rate
        optimizers = dict(
            pi=self.make_optimizer(agent.pi_parameters(), lr),
            q=self.make_optimizer(agent.q_parameters(), lr),
        )
        if self.fixed_alpha is None:
            optimizers["alpha"] = self.make_optimizer(agent.temperature.parameters(), lr)
        return optimizers

    def train_step(self, batch, diagnostics) -> None:
        agent = self.agent
        agent_inputs, action = batch.agent_inputs, agent.to_model_action(batch.action)
        weights = self.loss_weights(batch)
        alpha = agent.alpha

        y = self.q_target(batch, alpha)
        q1, q2 = agent.q(*agent_inputs, action)
        q_loss = 0.5 * weighted_mean((q1 - y) ** 2 + (q2 - y) ** 2, weights)

        new_action, log_pi, dist_info = agent.pi(*agent_inputs)
        pi_loss = self.pi_loss(agent_inputs, new_action, log_pi, dist_info, alpha, weights)
        loss = q_loss + pi_loss
        names = ["q", "pi"]
        if self.fixed_alpha is None:
            alpha_loss = weighted_mean(agent.alpha_loss(log_pi, self._target_entropy), weights)
            loss = loss + alpha_loss
            names.append("alpha")
        else:
            alpha_loss = torch.zeros((), device=log_pi.device)
        # The three losses touch disjoint parameters (the policy loss reaches the critics
        # only through the action, see SacAgent.q_for_policy): one backward pass serves all.
        q_grad_norm, pi_grad_norm, *_ = self.gradient_step(loss, *names)
        if self.update_counter % self.target_update_interval == 0:
            agent.update_target(self.target_update_tau)

        with torch.no_grad():
            diagnostics.add(
                qLoss=q_loss, piLoss=pi_loss, alphaLoss=alpha_loss, qGradNorm=q_grad_norm,
                piGradNorm=pi_grad_norm, q1=q1.mean(), q2=q2.mean(), logPi=log_pi.mean(),
                piMu=dist_info.mean.mean(), piLogStd=dist_info.log_std.mean(), alpha=alpha,
            )

    @torch.no_grad()
    def q_target(self, batch, alpha) -> torch.Tensor:
        """``reward_scale * R^n + discount^n (1 - done_n) (min_i Q'_i(s', a') - alpha
        log_pi(a'|s'))`` with ``a'`` drawn from the current policy."""
        next_action, next_log_pi, _ = self.agent.pi(*batch.target_inputs)
        target_q1, target_q2 = self.agent.target_q(*batch.target_inputs, next_action)
        next_value = soft_state_value(target_q1, target_q2, next_log_pi, alpha)
        return bootstrap_target(batch.return_, batch.done_n, next_value,
                                self.discount ** self.n_step_return, self.reward_scale)

    def pi_loss(self, agent_inputs, new_action, log_pi, dist_info, alpha, weights):
        """``mean(alpha log_pi - min_i Q_i(s, a~) - log p_prior(a~))`` (its gradient), with
        the critics' parameters held fixed."""
        if self.reparameterize:
            q1, q2 = self.agent.q_for_policy(*agent_inputs, new_action)
            objective = alpha * log_pi - twin_min(q1, q2)
            if self.action_prior != "uniform":  # the uniform prior's log density is constant
                objective = objective - self.prior_log_pi(new_action)
            return weighted_mean(objective, weights)
        # Likelihood ratio: grad E[f(a)] = E[(f(a) - b) grad log pi(a)] for a fixed sample,
        # plus alpha * E[grad log pi] from f's own dependence on pi, which is zero in
        # expectation and omitted.
        sample = new_action.detach()
        with torch.no_grad():
            q1, q2 = self.agent.q(*agent_inputs, sample)
            objective = alpha * log_pi - twin_min(q1, q2) - self.prior_log_pi(sample)
            advantage = objective - weighted_mean(objective, weights)
        log_likelihood = self.agent.distribution.log_likelihood(sample, dist_info)
        return weighted_mean(advantage * log_likelihood, weights)

    def prior_log_pi(self, action: torch.Tensor) -> torch.Tensor | float:
        """``log p_prior(action)``: 0 for the uniform prior, a standard normal density for
        the Gaussian one."""
        if self.action_prior == "uniform":
            return 0.0
        return -(0.5 * action**2 + HALF_LOG_2PI).sum(dim=-1)
