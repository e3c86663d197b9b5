"""Categorical DQN, C51 (Bellemare et al. 2017): learn the return distribution on a fixed support."""

from __future__ import annotations

from collections import namedtuple

import torch

from rlpyt.algos.dqn.dqn import DQN
from rlpyt.algos.dqn.targets import categorical_projection
from rlpyt.utils.tensor import select_at_indexes

__all__ = ["CategoricalDQN", "OptInfoCat"]

OptInfoCat = namedtuple("OptInfoCat", ["loss", "gradNorm", "klDivergence"])

EPS = 1e-6  # Floor on probabilities inside logarithms.


class CategoricalDQN(DQN):
    """DQN on return distributions ``p(s, a)`` over atoms ``z = linspace(V_min, V_max, n_atoms)``.

    The target distribution of a transition is that of ``R^n + discount^n (1 - done_n) z``
    under ``p_target(s_n, a*)`` (``a*`` greedy in expectation, by the online network with
    ``double_dqn``), projected onto ``z`` (``categorical_projection``).  The loss is the
    cross-entropy to it; priorities are the KL divergence from it.  Use with
    ``CatDqnAgent`` / ``AtariCatDqnAgent``, whose support this algorithm sets.

    Args:
        V_min: lowest atom (default -10).
        V_max: highest atom (default 10).
        other keywords: as ``DQN`` (``delta_clip`` is unused; ``default_priority=None``
            gives new transitions priority 1).
    """

    opt_info_fields = tuple(OptInfoCat._fields)
    OptInfoCls = OptInfoCat

    def __init__(self, V_min: float = -10, V_max: float = 10, **kwargs):
        if not V_min < V_max:
            raise ValueError(f"CategoricalDQN: V_min={V_min!r} must be smaller than V_max={V_max!r}")
        super().__init__(**kwargs)
        self.V_min, self.V_max = float(V_min), float(V_max)
        if self.default_priority is None:
            self.default_priority = 1.0

    def _setup(self, agent, *args, **kwargs):
        if not hasattr(agent, "give_V_min_max"):
            raise TypeError(
                f"CategoricalDQN needs a distributional agent with give_V_min_max (CatDqnAgent, "
                f"AtariCatDqnAgent), got {type(agent).__name__}"
            )
        super()._setup(agent, *args, **kwargs)
        agent.give_V_min_max(self.V_min, self.V_max)

    def loss(self, samples):
        """``(cross-entropy loss, KL priorities)`` for a replay batch on the agent's device."""
        p = select_at_indexes(samples.action, self.agent(*samples.agent_inputs))  # [B, atoms]
        with torch.no_grad():
            z = torch.linspace(self.V_min, self.V_max, p.shape[-1], device=p.device)
            target_p = self.agent.target(*samples.target_inputs)  # [B, actions, atoms]
            select_p = self.agent(*samples.target_inputs) if self.double_dqn else target_p
            next_action = torch.tensordot(select_p, z, dims=1).argmax(dim=-1)
            next_p = select_at_indexes(next_action, target_p)
            not_done = 1 - samples.done_n.to(p.dtype)
            discount = self.discount ** self.n_step_return * not_done
            target = categorical_projection(next_p, samples.return_.to(p.dtype), discount, z)
        log_p = p.clamp(min=EPS).log()
        losses = -(target * log_p).sum(dim=-1)
        if self.prioritized_replay:
            losses = losses * samples.is_weights
        loss = self.masked_mean(losses, samples)
        with torch.no_grad():
            kl = (target * (target.clamp(min=EPS).log() - log_p)).sum(dim=-1)
            priorities = kl.clamp(min=EPS)
        return loss, priorities
