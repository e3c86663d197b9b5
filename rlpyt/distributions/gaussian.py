"""Diagonal Gaussian over continuous actions, optionally clipped or tanh-squashed."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from rlpyt.distributions.base import Distribution
from rlpyt.utils.collections import namedarraytuple

DistInfo = namedarraytuple("DistInfo", ["mean"], module=__name__)
DistInfoStd = namedarraytuple("DistInfoStd", ["mean", "log_std"], module=__name__)

LOG_2 = math.log(2.0)
HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
# Keeps atanh finite when inverting a squashed action that sits on the bound.
SQUASH_EDGE = 1e-6


def _check_positive(name: str, value) -> None:
    if value is not None and not (torch.as_tensor(value) > 0).all():
        raise ValueError(f"{name} must be positive or None, got {value!r}")


class Gaussian(Distribution):
    """Diagonal Gaussian over ``dim`` action dimensions.

    ``dist_info`` is ``DistInfoStd(mean, log_std)`` with both ``[..., dim]`` (a learned std),
    or, when the distribution has a fixed ``std``, anything with a ``mean`` field (e.g.
    ``DistInfo(mean)``; a ``log_std`` field is then ignored).  Statistics are summed over the
    action dimensions, so every method returns ``[...]``.

    Args:
        dim: number of action dimensions.
        std: fixed standard deviation (scalar or ``[dim]``), used instead of ``log_std``
            (e.g. DDPG/TD3 exploration noise); ``None`` (default) uses ``dist_info.log_std``.
        clip: if given, sampled actions are clipped to ``[-clip, clip]``.
        noise_clip: if given, the sampled noise ``std * eps`` is clipped to
            ``[-noise_clip, noise_clip]`` before adding it to the mean (TD3 target smoothing).
        min_std, max_std: if given, the standard deviation is clamped to these bounds in every
            method.
        squash: if given (a positive scale, usually 1), actions are ``squash * tanh(u)`` with
            ``u`` Gaussian; ``log_likelihood`` and ``sample_loglikelihood`` then include the
            change-of-variables correction.  ``kl`` and ``entropy`` stay those of the Gaussian
            ``u`` (the squashed entropy has no closed form).  Exclusive with ``clip``.
    """

    def __init__(
        self,
        dim: int,
        std: float | torch.Tensor | None = None,
        clip: float | None = None,
        noise_clip: float | None = None,
        min_std: float | None = None,
        max_std: float | None = None,
        squash: float | None = None,
    ):
        if not isinstance(dim, int) or isinstance(dim, bool) or dim < 1:
            raise ValueError(f"dim (action dimensions) must be a positive int, got {dim!r}")
        for name, value in [("clip", clip), ("min_std", min_std), ("max_std", max_std)]:
            _check_positive(name, value)
        _check_positive("squash", squash)
        if clip is not None and squash is not None:
            raise ValueError(f"choose clip ({clip}) or squash ({squash}), not both")
        if min_std is not None and max_std is not None and min_std > max_std:
            raise ValueError(f"min_std ({min_std}) must not exceed max_std ({max_std})")
        self._dim = dim
        self.clip = clip
        self.squash = squash
        self.min_log_std = None if min_std is None else math.log(min_std)
        self.max_log_std = None if max_std is None else math.log(max_std)
        self.set_std(std)
        self.set_noise_clip(noise_clip)

    @property
    def dim(self) -> int:
        return self._dim

    def set_std(self, std: float | torch.Tensor | None) -> None:
        """Fix the standard deviation (scalar or ``[dim]``), or ``None`` to use ``log_std``
        from ``dist_info``; e.g. to anneal exploration noise."""
        _check_positive("std", std)
        self.std = None if std is None else torch.as_tensor(std, dtype=torch.float32)

    def set_noise_clip(self, noise_clip: float | None) -> None:
        _check_positive("noise_clip", noise_clip)
        self.noise_clip = noise_clip

    def log_std_of(self, dist_info) -> torch.Tensor:
        """The effective log std ``[..., dim]``: the fixed one or ``dist_info.log_std``,
        clamped to ``[log(min_std), log(max_std)]`` when those are set."""
        mean = dist_info.mean
        if self.std is not None:
            std = self.std.to(device=mean.device, dtype=mean.dtype)
            log_std = torch.log(std).expand_as(mean)
        else:
            log_std = dist_info.log_std
        if self.min_log_std is not None or self.max_log_std is not None:
            log_std = log_std.clamp(min=self.min_log_std, max=self.max_log_std)
        return log_std

    def sample(self, dist_info) -> torch.Tensor:
        """One action per leading index, ``mean + std * eps`` (so gradients reach ``mean`` and
        ``log_std`` when autograd is on; agents sample under ``torch.no_grad``)."""
        noise = torch.exp(self.log_std_of(dist_info)) * torch.randn_like(dist_info.mean)
        if self.noise_clip is not None:
            noise = noise.clamp(-self.noise_clip, self.noise_clip)
        return self._bound(dist_info.mean + noise)

    def mode(self, dist_info) -> torch.Tensor:
        """The most likely action: the mean, bounded (clipped or squashed) as samples are."""
        return self._bound(dist_info.mean)

    def sample_loglikelihood(self, dist_info) -> tuple[torch.Tensor, torch.Tensor]:
        """A reparameterised sample (gradients flow to ``mean`` and ``log_std``, as SAC needs)
        and its log-likelihood, including the tanh correction when squashing.  ``noise_clip``
        is not applied here (it would change the density); ``clip`` clips the returned action
        but the log-likelihood is that of the unclipped sample."""
        log_std = self.log_std_of(dist_info)
        mean = dist_info.mean
        noise = torch.randn_like(mean)
        pre_squash = torch.addcmul(mean, torch.exp(log_std), noise)
        # -log density per dim, summed once; the constant terms are added after the sum.
        # Fewer, fused ops than _normal_log_prob_from_noise - _squash_log_det (SAC calls
        # this twice per update): same value, checked against them in the tests.
        neg_logli = torch.addcmul(log_std, noise, noise, value=0.5)
        constant = HALF_LOG_2PI
        if self.squash is not None:
            # log|d tanh(u)/du| = 2 (log 2 - u - softplus(-2u)) = 2 log 2 + v - 2 softplus(v)
            # with v = -2u: stable for large |u|.
            v = pre_squash * -2.0
            neg_logli = (neg_logli + v).add_(F.softplus(v), alpha=-2.0)
            constant += 2 * LOG_2 + math.log(self.squash)
        logli = torch.rsub(neg_logli.sum(dim=-1), -mean.shape[-1] * constant)
        return self._bound(pre_squash), logli

    def log_likelihood(self, x: torch.Tensor, dist_info) -> torch.Tensor:
        """log density of actions ``x`` ``[..., dim]``.  With ``squash``, ``x`` is a squashed
        action: it is mapped back by ``atanh(x / squash)`` (kept just inside the bounds)."""
        log_std = self.log_std_of(dist_info)
        if self.squash is None:
            return self._normal_log_prob(x, dist_info.mean, log_std)
        scaled = (x / self.squash).clamp(-1 + SQUASH_EDGE, 1 - SQUASH_EDGE)
        pre_squash = torch.atanh(scaled)
        logli = self._normal_log_prob(pre_squash, dist_info.mean, log_std)
        return logli - self._squash_log_det(pre_squash)

    def likelihood_ratio(self, x: torch.Tensor, old_dist_info, new_dist_info) -> torch.Tensor:
        return torch.exp(
            self.log_likelihood(x, new_dist_info) - self.log_likelihood(x, old_dist_info)
        )

    def kl(self, old_dist_info, new_dist_info) -> torch.Tensor:
        """KL(old || new) of the (unsquashed) Gaussians, summed over action dims."""
        old_log_std = self.log_std_of(old_dist_info)
        new_log_std = self.log_std_of(new_dist_info)
        old_var = torch.exp(2 * old_log_std)
        new_var = torch.exp(2 * new_log_std)
        mean_sq = (old_dist_info.mean - new_dist_info.mean) ** 2
        per_dim = new_log_std - old_log_std + (old_var + mean_sq) / (2 * new_var) - 0.5
        return per_dim.sum(dim=-1)

    def entropy(self, dist_info) -> torch.Tensor:
        """Entropy of the (unsquashed) Gaussian, summed over action dims."""
        return (self.log_std_of(dist_info) + HALF_LOG_2PI + 0.5).sum(dim=-1)

    def _bound(self, action: torch.Tensor) -> torch.Tensor:
        if self.clip is not None:
            return action.clamp(-self.clip, self.clip)
        if self.squash is not None:
            action = torch.tanh(action)
            return action if self.squash == 1 else self.squash * action
        return action

    @staticmethod
    def _normal_log_prob(x, mean, log_std) -> torch.Tensor:
        z = (x - mean) * torch.exp(-log_std)
        return Gaussian._normal_log_prob_from_noise(z, log_std)

    @staticmethod
    def _normal_log_prob_from_noise(z, log_std) -> torch.Tensor:
        """log N(x; mean, std) summed over the last dim, given z = (x - mean) / std."""
        return -(0.5 * z**2 + log_std + HALF_LOG_2PI).sum(dim=-1)

    def _squash_log_det(self, pre_squash: torch.Tensor) -> torch.Tensor:
        """log |d(squash * tanh(u)) / du| summed over action dims, with
        log(1 - tanh(u)^2) = 2 * (log 2 - u - softplus(-2u)), stable for large |u|."""
        log_det = 2 * (LOG_2 - pre_squash - F.softplus(-2 * pre_squash)) + math.log(self.squash)
        return log_det.sum(dim=-1)
