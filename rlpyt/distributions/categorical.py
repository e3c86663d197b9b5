"""Categorical distribution over discrete actions, parameterised by probabilities."""

from __future__ import annotations

import torch

from rlpyt.distributions.base import Distribution
from rlpyt.distributions.discrete import DiscreteMixin
from rlpyt.utils.collections import namedarraytuple
from rlpyt.utils.tensor import select_at_indexes

# Guards log(0) for actions of zero probability.
EPS = 1e-8

DistInfo = namedarraytuple("DistInfo", ["prob"], module=__name__)


class Categorical(DiscreteMixin, Distribution):
    """Distribution over ``dim`` actions; ``dist_info`` is ``DistInfo(prob)`` with ``prob``
    ``[..., dim]`` (rows summing to 1, e.g. a softmax output).  Logs use ``log(p + 1e-8)`` so
    that zero-probability actions give large finite values instead of ``-inf``.

    Args:
        dim: number of actions.
        dtype: dtype of sampled actions (default ``torch.long``).
        onehot_dtype: dtype of ``to_onehot`` output (default ``torch.float``).
    """

    def sample(self, dist_info: DistInfo) -> torch.Tensor:
        """One action index per row of ``prob``: ``[..., dim] -> [...]``.

        Each row draws ``argmax_i(prob_i / E_i)`` with ``E_i ~ Exp(1)`` independent: the
        first of independent exponential clocks of rates ``prob_i`` rings at ``i`` with
        probability ``prob_i / sum(prob)``, and a zero-probability entry never wins.  This
        is the draw ``torch.multinomial`` makes for one sample on the CPU (the same random
        numbers give the same actions), minus its validation pass over ``prob``, which
        costs twice the draw itself at sampler batch sizes.
        """
        prob = dist_info.prob
        if prob.shape[-1] != self.dim:
            raise ValueError(f"prob of shape {list(prob.shape)} must end in dim={self.dim}")
        clocks = torch.empty_like(prob).exponential_()
        sample = torch.argmax(prob / clocks, dim=-1)
        return sample if sample.dtype == self.dtype else sample.to(self.dtype)

    def kl(self, old_dist_info: DistInfo, new_dist_info: DistInfo) -> torch.Tensor:
        p, q = old_dist_info.prob, new_dist_info.prob
        return torch.sum(p * (torch.log(p + EPS) - torch.log(q + EPS)), dim=-1)

    def log_likelihood(self, x: torch.Tensor, dist_info: DistInfo) -> torch.Tensor:
        """log prob of action indexes ``x`` ``[...]``."""
        prob = dist_info.prob
        if x.shape != prob.shape[:-1]:  # gather would silently read a sub-block
            select_at_indexes(x, prob)  # raises, naming both shapes
        # One gather on the last dim (what select_at_indexes does, minus its generality):
        # this runs once per gradient step.
        return torch.log(prob.gather(-1, x.long().unsqueeze(-1)).squeeze(-1) + EPS)

    def likelihood_ratio(
        self, x: torch.Tensor, old_dist_info: DistInfo, new_dist_info: DistInfo
    ) -> torch.Tensor:
        p_new = select_at_indexes(x, new_dist_info.prob)
        p_old = select_at_indexes(x, old_dist_info.prob)
        return (p_new + EPS) / (p_old + EPS)

    def entropy(self, dist_info: DistInfo) -> torch.Tensor:
        p = dist_info.prob
        return -torch.sum(p * torch.log(p + EPS), dim=-1)
