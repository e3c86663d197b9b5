"""Epsilon-greedy action selection from Q-values (DQN) or value distributions (C51)."""

from __future__ import annotations

import torch

from rlpyt.distributions.base import Distribution
from rlpyt.distributions.categorical import Categorical, DistInfo
from rlpyt.distributions.discrete import DiscreteMixin


class EpsilonGreedy(DiscreteMixin, Distribution):
    """Greedy action w.p. ``1 - epsilon``, uniform random action w.p. ``epsilon``.

    ``dist_info`` is the Q-value tensor ``[..., dim]`` itself.  ``epsilon`` is a scalar or a
    per-environment vector ``[B]`` (e.g. Ape-X style exploration), which broadcasts over the
    leading dims ``[T, B]`` or ``[B]``.  The statistics (``kl``, ``log_likelihood``, ``entropy``,
    ...) are those of the implied categorical policy
    ``p = epsilon / dim + (1 - epsilon) * onehot(argmax q)``.

    Args:
        dim: number of actions.
        epsilon: initial exploration probability (default 1); change with ``set_epsilon``.
        dtype, onehot_dtype: as ``Categorical``.
    """

    def __init__(
        self,
        dim: int,
        epsilon: float | torch.Tensor = 1,
        dtype: torch.dtype = torch.long,
        onehot_dtype: torch.dtype = torch.float,
    ):
        super().__init__(dim, dtype=dtype, onehot_dtype=onehot_dtype)
        self._categorical = Categorical(dim, dtype=dtype, onehot_dtype=onehot_dtype)
        self._env_slice = None  # Envs of a per-env epsilon the next samples act on.
        self.set_epsilon(epsilon)

    def set_epsilon(self, epsilon: float | torch.Tensor) -> None:
        """A probability in [0, 1], or a vector ``[B]`` of them (one per environment)."""
        eps = torch.as_tensor(epsilon, dtype=torch.float32)
        if eps.dim() > 1 or not ((eps >= 0) & (eps <= 1)).all():
            raise ValueError(
                f"epsilon must be a probability or a [B] vector of them, got {epsilon!r}"
            )
        self._epsilon = eps
        self._epsilon_device = eps  # epsilon on the device of the last sample

    def select_envs(self, envs: slice | None) -> None:
        """Act on envs ``envs`` of a per-environment epsilon's ``[B]`` only (a sampler
        stepping part of its envs at a time); None: all of them.  A scalar epsilon is
        unaffected."""
        if envs is not None and not isinstance(envs, slice):
            raise TypeError(f"envs={envs!r} must be a slice of env indices or None")
        self._env_slice = envs

    @property
    def epsilon(self) -> torch.Tensor:
        return self._epsilon

    def _greedy_values(self, dist_info: torch.Tensor) -> torch.Tensor:
        """Values ``[..., dim]`` whose argmax is the greedy action."""
        return dist_info

    def _epsilon_on(self, lead_shape: torch.Size, device: torch.device) -> torch.Tensor:
        eps = self._epsilon_device
        if eps.device != device:  # Copied once per device change, not every step.
            eps = self._epsilon_device = self._epsilon.to(device)
        envs = getattr(self, "_env_slice", None)
        if envs is not None and eps.dim() == 1:
            eps = eps[envs]
        if eps.dim() == 1 and (len(lead_shape) == 0 or lead_shape[-1] != eps.shape[0]):
            raise ValueError(
                f"per-environment epsilon of shape {list(eps.shape)} does not match the last "
                f"leading dim (B) of values with leading dims {list(lead_shape)}"
            )
        return eps

    def sample(self, dist_info: torch.Tensor) -> torch.Tensor:
        """Greedy actions, each replaced by a uniform random action w.p. epsilon."""
        greedy = self._greedy_values(dist_info).argmax(-1)
        device = greedy.device
        explore = torch.rand(greedy.shape, device=device) < self._epsilon_on(greedy.shape, device)
        action = torch.randint_like(greedy, high=self.dim).where(explore, greedy)
        return action if action.dtype == self.dtype else action.to(self.dtype)

    def probs(self, dist_info: torch.Tensor) -> torch.Tensor:
        """Action probabilities ``[..., dim]`` of the epsilon-greedy policy."""
        values = self._greedy_values(dist_info)
        greedy = self.to_onehot(torch.argmax(values, dim=-1), dtype=values.dtype)
        eps = self._epsilon_on(greedy.shape[:-1], greedy.device).to(values.dtype).unsqueeze(-1)
        return eps / self.dim + (1 - eps) * greedy

    def _as_categorical(self, dist_info: torch.Tensor) -> DistInfo:
        return DistInfo(prob=self.probs(dist_info))

    def kl(self, old_dist_info, new_dist_info) -> torch.Tensor:
        return self._categorical.kl(
            self._as_categorical(old_dist_info), self._as_categorical(new_dist_info)
        )

    def log_likelihood(self, x: torch.Tensor, dist_info) -> torch.Tensor:
        return self._categorical.log_likelihood(x, self._as_categorical(dist_info))

    def likelihood_ratio(self, x: torch.Tensor, old_dist_info, new_dist_info) -> torch.Tensor:
        return self._categorical.likelihood_ratio(
            x, self._as_categorical(old_dist_info), self._as_categorical(new_dist_info)
        )

    def entropy(self, dist_info) -> torch.Tensor:
        return self._categorical.entropy(self._as_categorical(dist_info))


class CategoricalEpsilonGreedy(EpsilonGreedy):
    """Epsilon-greedy over the expected values of return distributions (C51).

    ``dist_info`` is ``p`` ``[..., dim, n_atoms]``, the probability of each atom of the
    support ``z`` per action; the greedy action maximises ``sum_j p[..., a, j] * z[j]``.

    Args:
        dim: number of actions.
        z: the support (atom values) ``[n_atoms]``, e.g. ``torch.linspace(V_min, V_max, 51)``;
            may also be set later with ``set_z``.
        epsilon, dtype, onehot_dtype: as ``EpsilonGreedy``.
    """

    def __init__(
        self,
        dim: int,
        z: torch.Tensor | None = None,
        epsilon: float | torch.Tensor = 1,
        dtype: torch.dtype = torch.long,
        onehot_dtype: torch.dtype = torch.float,
    ):
        super().__init__(dim, epsilon=epsilon, dtype=dtype, onehot_dtype=onehot_dtype)
        self.z = None
        if z is not None:
            self.set_z(z)

    def set_z(self, z: torch.Tensor) -> None:
        z = torch.as_tensor(z)
        if z.dim() != 1:
            raise ValueError(f"z must be a 1-D support of atoms, got shape {list(z.shape)}")
        self.z = z

    def _greedy_values(self, dist_info: torch.Tensor) -> torch.Tensor:
        if self.z is None:
            raise ValueError("CategoricalEpsilonGreedy needs the support z: pass z= or set_z(z)")
        if dist_info.shape[-1] != self.z.shape[0]:
            raise ValueError(
                f"value distributions have {dist_info.shape[-1]} atoms but z has {self.z.shape[0]}"
            )
        z = self.z.to(device=dist_info.device, dtype=dist_info.dtype)
        return torch.tensordot(dist_info, z, dims=1)
