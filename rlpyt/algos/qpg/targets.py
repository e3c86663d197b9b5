"""Critic targets of DDPG, TD3 and SAC as small functions over ``[B]`` tensors.

``return_`` is the replayed n-step return ``sum_{k<n} discount^k r_{t+k}`` (cut at
the first done), ``done_n`` whether a done occurred in those n steps, and
``discount_n = discount ** n``.  Tested against plain loops in ``tests/test_qpg.py``.
"""

from __future__ import annotations

import torch

__all__ = ["bootstrap_target", "soft_state_value", "timelimit_valid", "twin_min"]


def bootstrap_target(
    return_: torch.Tensor,
    done_n: torch.Tensor,
    next_value: torch.Tensor,
    discount_n: float,
    reward_scale: float = 1.0,
    clip: float | None = None,
) -> torch.Tensor:
    """``y = reward_scale * return_ + discount_n * (1 - done_n) * next_value``.

    A terminated window (``done_n``) does not bootstrap.  ``clip`` bounds ``y`` to
    ``[-clip, clip]`` (DDPG's ``q_target_clip``) when given.
    """
    if reward_scale != 1:
        return_ = reward_scale * return_
    # The terminated windows' next values masked to zero: one op where the product with
    # ``1 - done_n`` took three (and a non-finite value there cannot leak into y).
    masked = next_value.masked_fill(done_n if done_n.dtype == torch.bool else done_n != 0, 0)
    y = torch.add(return_, masked, alpha=discount_n)
    return y if clip is None else y.clamp(-clip, clip)


def twin_min(q1: torch.Tensor, q2: torch.Tensor) -> torch.Tensor:
    """Elementwise minimum of twin critics (clipped double Q-learning)."""
    return torch.minimum(q1, q2)


def soft_state_value(
    q1: torch.Tensor, q2: torch.Tensor, log_pi: torch.Tensor, alpha: torch.Tensor | float
) -> torch.Tensor:
    """SAC's soft value of the next state, ``min(q1, q2) - alpha * log_pi``, with the
    critics evaluated at an action drawn from the policy and ``log_pi`` its log density."""
    return twin_min(q1, q2) - alpha * log_pi


def timelimit_valid(timeout_n: torch.Tensor) -> torch.Tensor:
    """Loss mask for time-limit bootstrapping: 0 where the n-step window ended in a
    truncation, 1 elsewhere.

    The observation after a truncated step was never stored (the sampler reset the
    env), so those samples have no target to bootstrap from and are dropped; every
    other step of a truncated episode bootstraps as usual, since its ``done_n`` is
    False.  A terminated episode (``done_n`` without ``timeout_n``) keeps its sample
    and does not bootstrap.
    """
    return 1 - timeout_n.float()
