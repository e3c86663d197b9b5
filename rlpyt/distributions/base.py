"""Interface shared by action distributions.

A distribution object holds no parameters of its own: the model outputs a ``dist_info``
(e.g. ``DistInfo(prob)``) and the distribution computes samples and statistics from it.
All methods work elementwise over any leading dims ``[...]`` and return ``[...]``.
"""

from __future__ import annotations

import abc

import torch

from rlpyt.utils.tensor import valid_mean


class Distribution(abc.ABC):
    """Base class: subclasses provide ``dim``, ``sample``, ``kl``, ``log_likelihood``,
    ``likelihood_ratio`` and ``entropy``; the means and perplexities follow from those."""

    @property
    @abc.abstractmethod
    def dim(self) -> int:
        """Number of actions (discrete) or action dimensions (continuous)."""

    @abc.abstractmethod
    def sample(self, dist_info) -> torch.Tensor:
        """Draw one action per leading index."""

    @abc.abstractmethod
    def kl(self, old_dist_info, new_dist_info) -> torch.Tensor:
        """KL(old || new) per leading index."""

    @abc.abstractmethod
    def log_likelihood(self, x: torch.Tensor, dist_info) -> torch.Tensor:
        """log p(x) per leading index."""

    @abc.abstractmethod
    def likelihood_ratio(self, x: torch.Tensor, old_dist_info, new_dist_info) -> torch.Tensor:
        """p_new(x) / p_old(x) per leading index."""

    @abc.abstractmethod
    def entropy(self, dist_info) -> torch.Tensor:
        """Entropy per leading index."""

    def perplexity(self, dist_info) -> torch.Tensor:
        """exp(entropy): the effective number of equally likely choices."""
        return torch.exp(self.entropy(dist_info))

    def mean_kl(self, old_dist_info, new_dist_info, valid: torch.Tensor | None = None):
        """Mean KL over the entries where ``valid`` is nonzero (all if ``None``)."""
        return valid_mean(self.kl(old_dist_info, new_dist_info), valid)

    def mean_entropy(self, dist_info, valid: torch.Tensor | None = None) -> torch.Tensor:
        return valid_mean(self.entropy(dist_info), valid)

    def mean_perplexity(self, dist_info, valid: torch.Tensor | None = None) -> torch.Tensor:
        return valid_mean(self.perplexity(dist_info), valid)
