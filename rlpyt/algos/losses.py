"""Composable returns and loss terms for actor-critic methods, on ``[T, B]`` tensors.

A method is a combination of one return estimator and a few loss terms; e.g. an
A2C with lambda-returns::

    from rlpyt.algos import losses as L

    return_ = L.lambda_returns(reward, value.detach(), done, bootstrap_value, 0.99, 0.95)
    advantage = return_ - value.detach()
    valid = L.valid_from_done(done)          # wait-reset batches; None for reset ones
    loss = (L.policy_gradient_loss(log_prob, advantage, valid)
            + 0.5 * L.value_loss(value, return_, valid)
            + 0.01 * L.entropy_loss(entropy, valid))

Return estimators (from ``rlpyt.utils.returns``, where they live once so that replay
buffers, a lower layer, share the n-step code) take ``done`` ``[T, B]`` (the episode
ended at step ``t``) and ``bootstrap_value`` ``[B]`` (the value of the observation after
the batch); time-limit truncations are handled by first adding the discounted value of
the final observation to the truncated step's reward (``timeout_bootstrapped_reward``),
while ``done`` still cuts the recursion there.  They accept numpy arrays or torch tensors.

Loss terms take torch tensors and an optional ``valid`` mask ``[T, B]`` (1 where a step
holds real data, e.g. ``valid_from_done`` for wait-reset collection; None means all),
and return a scalar mean over the valid entries, signed to be minimised.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from rlpyt.utils.returns import (
    discount_return,
    discount_return_n_step,
    generalized_advantage_estimation,
    importance_weighted_returns,
    lambda_returns,
    n_step_returns,
    timeout_bootstrapped_reward,
    valid_from_done,
    vtrace,
)
from rlpyt.utils.tensor import valid_mean

__all__ = [
    "approx_kl",
    "approx_kl_terms",
    "clipped_surrogate_loss",
    "clipped_value_loss",
    "discount_return",
    "discount_return_n_step",
    "entropy_loss",
    "generalized_advantage_estimation",
    "importance_weighted_returns",
    "kl_penalty",
    "lambda_returns",
    "n_step_returns",
    "policy_gradient_loss",
    "timeout_bootstrapped_reward",
    "valid_from_done",
    "value_loss",
    "vtrace",
]

Valid = torch.Tensor | None


def policy_gradient_loss(log_prob: torch.Tensor, advantage: torch.Tensor,
                         valid: Valid = None) -> torch.Tensor:
    """``-mean(log pi(a|s) * A)``: the score-function (REINFORCE) surrogate whose gradient
    is the policy gradient (Williams 1992).  ``advantage`` is treated as a constant: pass
    it detached (a return, a GAE or V-trace advantage)."""
    return -valid_mean(log_prob * advantage, valid)


def clipped_surrogate_loss(log_ratio: torch.Tensor, advantage: torch.Tensor, ratio_clip: float,
                           valid: Valid = None) -> torch.Tensor:
    """PPO's clipped surrogate (Schulman et al. 2017, eq. 7), negated::

        ratio = exp(log_ratio) = pi(a|s) / pi_old(a|s)
        -mean(min(ratio * A, clip(ratio, 1 - ratio_clip, 1 + ratio_clip) * A))
    """
    ratio = torch.exp(log_ratio)
    clipped_ratio = torch.clamp(ratio, 1 - ratio_clip, 1 + ratio_clip)
    return -valid_mean(torch.min(ratio * advantage, clipped_ratio * advantage), valid)


def value_loss(value: torch.Tensor, target: torch.Tensor, valid: Valid = None) -> torch.Tensor:
    """``mean(0.5 (V(s) - target)^2)``: regression of the value onto a return."""
    if valid is None:  # one autograd node instead of five (halving is exact)
        return F.mse_loss(value, target) * 0.5
    return valid_mean(0.5 * (value - target) ** 2, valid)


def clipped_value_loss(value: torch.Tensor, old_value: torch.Tensor, target: torch.Tensor,
                       clip: float, valid: Valid = None) -> torch.Tensor:
    """Value regression that does not reward moving ``value`` more than ``clip`` away from
    ``old_value`` (the estimate at sampling time; PPO2's value clipping)::

        clipped = old_value + clip(value - old_value, -clip, clip)
        mean(0.5 * max((value - target)^2, (clipped - target)^2))
    """
    clipped = old_value + torch.clamp(value - old_value, -clip, clip)
    error = torch.max((value - target) ** 2, (clipped - target) ** 2)
    return valid_mean(0.5 * error, valid)


def entropy_loss(entropy: torch.Tensor, valid: Valid = None) -> torch.Tensor:
    """``-mean(H(pi(.|s)))``: minimising it is the entropy bonus (Williams and Peng 1991;
    Mnih et al. 2016), which slows the policy's collapse to determinism."""
    return -valid_mean(entropy, valid)


def kl_penalty(distribution, old_dist_info, new_dist_info, valid: Valid = None) -> torch.Tensor:
    """``mean(KL(pi_old || pi))`` from the distribution's closed form (``distribution.kl``):
    the penalty of KL-regularised policy updates (PPO's adaptive-KL variant, TRPO's
    constraint).  Pass ``old_dist_info`` detached."""
    return valid_mean(distribution.kl(old_dist_info, new_dist_info), valid)


def approx_kl_terms(log_ratio: torch.Tensor) -> torch.Tensor:
    """Per-step estimates ``ratio - 1 - log_ratio`` of ``KL(pi_old || pi)``, from
    ``log_ratio = log pi(a|s) - log pi_old(a|s)`` at actions drawn from ``pi_old``
    (unbiased and never negative; J. Schulman, "Approximating KL divergence", 2020)."""
    return torch.exp(log_ratio) - 1 - log_ratio


def approx_kl(log_ratio: torch.Tensor, valid: Valid = None) -> torch.Tensor:
    """The mean of ``approx_kl_terms`` over the valid entries."""
    return valid_mean(approx_kl_terms(log_ratio), valid)
