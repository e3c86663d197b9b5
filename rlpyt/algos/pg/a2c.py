"""Advantage actor-critic (A2C): one gradient step per sampler batch."""

from __future__ import annotations

import math

import torch

from rlpyt.algos import losses
from rlpyt.algos.pg.base import OptInfo, PolicyGradientAlgo
from rlpyt.utils.quick_args import save__init__args
from rlpyt.utils.tensor import valid_mean

__all__ = ["A2C"]


class A2C(PolicyGradientAlgo):
    """Synchronous advantage actor-critic (Mnih et al. 2016, "Asynchronous Methods for Deep
    Reinforcement Learning", the synchronous variant), with GAE (Schulman et al. 2016,
    "High-Dimensional Continuous Control Using Generalized Advantage Estimation").

    Each ``optimize_agent`` takes one gradient step on the whole ``[T, B]`` batch::

        loss = -mean(log pi(a|s) * A) + value_loss_coeff * mean(0.5 (V(s) - R)^2)
               - entropy_loss_coeff * mean(H(pi(.|s)))

    where ``A`` and ``R`` are GAE advantages and returns, bootstrapped with
    ``V(s_T)`` at the batch end and with V(final observation) at time-limit truncations.

    Args:
        discount: reward discount gamma (default 0.99).
        learning_rate: optimizer step size (default 0.001).
        value_loss_coeff: weight of the value regression loss (default 0.5).
        entropy_loss_coeff: weight of the entropy bonus, which slows the policy's
            collapse to determinism (default 0.01).
        OptimCls: torch optimizer class (default ``torch.optim.Adam``).
        optim_kwargs: extra keyword arguments for ``OptimCls`` (default None: none).
        clip_grad_norm: maximum global gradient norm; None disables clipping (default 1.).
        initial_optim_state_dict: optimizer state to load at ``initialize``, e.g. from
            ``optim_state_dict()`` of an earlier run (default None).
        gae_lambda: GAE lambda; 1 gives Monte-Carlo returns bootstrapped at the batch
            end, lower values trade variance for bias (default 1).
        normalize_advantage: scale advantages to mean 0, std 1 over the valid entries of
            each batch (default False).
        normalize_returns: the value head learns returns normalised by their running
            mean and std (all returns so far, each batch folded in before its targets are
            made); its outputs are scaled back before GAE and bootstrapping.  Value
            targets then have unit scale whatever the rewards' (Sample Factory's
            ``normalize_returns``, on by default there).  The statistics are saved with
            the algorithm's state (default False).
        normalize_rewards: learn from rewards divided by the running std of each env's
            discounted return, clipped to +-10 (SB3's ``VecNormalize`` reward scaling,
            CleanRL's MuJoCo PPO; ``rlpyt.algos.pg.reward_scaling``).  Values and
            advantages are then in the scaled units; logged returns are not scaled.  The
            statistics are saved with the algorithm's state (default False).
    """

    opt_info_fields = tuple(OptInfo._fields)

    def __init__(
        self,
        discount: float = 0.99,
        learning_rate: float = 0.001,
        value_loss_coeff: float = 0.5,
        entropy_loss_coeff: float = 0.01,
        OptimCls: type[torch.optim.Optimizer] = torch.optim.Adam,
        optim_kwargs: dict | None = None,
        clip_grad_norm: float | None = 1.0,
        initial_optim_state_dict: dict | None = None,
        gae_lambda: float = 1,
        normalize_advantage: bool = False,
        normalize_returns: bool = False,
        normalize_rewards: bool = False,
    ):
        save__init__args(locals())
        self.optim_kwargs = dict(optim_kwargs or {})
        self.check_common_args()

    def optimize_agent(self, itr: int, samples=None, sampler_itr: int | None = None) -> OptInfo:
        """One gradient step on the batch; returns ``OptInfo`` of one-element lists."""
        self.update_obs_normalizer(samples)
        loss, pi_loss, value_loss, entropy_loss, entropy, perplexity = self.loss(samples)
        if not math.isfinite(loss.item()):
            self.check_finite(itr, pi_loss=pi_loss, value_loss=value_loss,
                              entropy_loss=entropy_loss, loss=loss)
        grad_norm = self.gradient_step(loss, as_tensor=True)
        with torch.no_grad():  # one conversion for all diagnostics
            values = torch.stack((loss, grad_norm, entropy, perplexity)).tolist()
        return OptInfo(*([value] for value in values))

    def loss(self, samples):
        """The A2C loss and its terms on the whole batch: ``(loss, pi_loss, value_loss,
        entropy_loss, entropy, perplexity)``, the last two detached."""
        agent_inputs = self.agent_inputs(samples)
        return_, advantage, valid = self.to_agent_device(*self.process_returns(samples))
        action = samples.agent.action.to(self.agent.device)
        if self.agent.recurrent:
            init_rnn_state = self.rnn_state_for_model(self.initial_rnn_state(samples))
            dist_info, value, _ = self.agent(*agent_inputs, init_rnn_state)
        else:
            dist_info, value = self.agent(*agent_inputs)
        dist = self.agent.distribution

        pi_loss = losses.policy_gradient_loss(dist.log_likelihood(action, dist_info), advantage,
                                              valid)
        value_loss = self.value_loss(value, return_, valid)
        # The entropy joins the graph only when it is weighted (its backward costs).
        with torch.set_grad_enabled(self.entropy_loss_coeff != 0 and torch.is_grad_enabled()):
            entropy_each = dist.entropy(dist_info)
        entropy_loss = self.entropy_loss_coeff * losses.entropy_loss(entropy_each, valid)
        loss = pi_loss + value_loss
        if self.entropy_loss_coeff != 0:  # a zero-weighted term would only add backward work
            loss = loss + entropy_loss

        entropy_each = entropy_each.detach()
        entropy = valid_mean(entropy_each, valid)
        perplexity = valid_mean(torch.exp(entropy_each), valid)
        return loss, pi_loss, value_loss, entropy_loss, entropy, perplexity
