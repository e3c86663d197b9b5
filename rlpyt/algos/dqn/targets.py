"""Q-learning math as small functions: n-step targets, the Huber loss, the C51 projection.

Each is vectorised over the batch and tested against a plain-loop reference
(``tests/test_dqn.py``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

__all__ = ["categorical_projection", "huber_loss", "n_step_q_target"]


def n_step_q_target(
    return_: torch.Tensor, done_n: torch.Tensor, next_value: torch.Tensor, discount_n: float
) -> torch.Tensor:
    """``y = return_ + discount_n * (1 - done_n) * next_value``.

    Args:
        return_: n-step discounted reward sums ``[B]``.
        done_n: whether the episode ended within the n steps ``[B]`` (bool or float).
        next_value: value of the observation n steps later ``[B]`` (e.g. ``max_a Q_target``).
        discount_n: ``discount ** n_step_return``.
    """
    if return_.dtype != next_value.dtype:
        return_ = return_.to(next_value.dtype)
    if done_n.dtype == torch.bool:  # Two calls: zero the values after a done, add.
        return torch.add(return_, next_value.masked_fill(done_n, 0.0), alpha=discount_n)
    not_done = 1 - done_n.to(next_value.dtype)
    return torch.addcmul(return_, not_done, next_value, value=discount_n)


def huber_loss(delta: torch.Tensor, delta_clip: float | None) -> torch.Tensor:
    """Elementwise ``0.5 delta^2`` inside ``|delta| <= delta_clip``, linear outside
    (``delta_clip * (|delta| - 0.5 delta_clip)``); ``delta_clip=None`` is the plain
    squared error ``0.5 delta^2``."""
    if delta_clip is None:
        return 0.5 * delta ** 2
    return F.huber_loss(delta, torch.zeros_like(delta), reduction="none", delta=delta_clip)


def categorical_projection(
    probs: torch.Tensor, return_: torch.Tensor, discount: torch.Tensor, z: torch.Tensor
) -> torch.Tensor:
    """Project the distribution with atoms ``return_ + discount * z`` onto the support ``z``.

    The C51 target (Bellemare et al. 2017): each shifted atom ``Tz_j``, clamped to
    ``[z[0], z[-1]]``, splits its mass ``probs[..., j]`` between the two neighbouring
    atoms of ``z`` in proportion to closeness (all of it to an atom it lands on).
    Splitting at ``low = floor(b_j)`` and ``low + 1`` with weights ``1 - frac`` and
    ``frac`` (``b_j = (Tz_j - z[0]) / dz``, ``frac = b_j - low``) needs no special case
    for atoms landing exactly on the support, where ``frac = 0``.

    Args:
        probs: ``[B, n_atoms]`` probabilities of the next-state distribution.
        return_: ``[B]`` n-step rewards.
        discount: ``[B]`` discount of the shift, ``discount ** n * (1 - done_n)`` (zero
            collapses the distribution onto ``return_``).
        z: ``[n_atoms]`` evenly spaced support.

    Returns:
        ``[B, n_atoms]`` projected probabilities (each row sums to ``probs``' row sum).
    """
    n_atoms = len(z)
    v_min, v_max = z[0], z[-1]
    delta_z = (v_max - v_min) / (n_atoms - 1)
    shifted = return_.unsqueeze(-1) + discount.unsqueeze(-1) * z  # [B, n_atoms]: Tz_j
    position = (shifted.clamp(v_min, v_max) - v_min) / delta_z  # In [0, n_atoms - 1].
    low = position.floor()
    frac = position - low
    low = low.long()
    up = (low + 1).clamp_(max=n_atoms - 1)  # frac is 0 where low is the last atom.
    projected = torch.zeros_like(probs)
    projected.scatter_add_(-1, low, probs * (1 - frac))
    projected.scatter_add_(-1, up, probs * frac)
    return projected
