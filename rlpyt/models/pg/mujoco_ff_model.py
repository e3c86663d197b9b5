"""Feed-forward Gaussian actor-critic for continuous control (e.g. MuJoCo)."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from rlpyt.models.mlp import MlpModel
from rlpyt.models.running_mean_std import ObservationNormalizerMixin
from rlpyt.utils.tensor import infer_leading_dims, restore_leading_dims


class MujocoFfModel(ObservationNormalizerMixin, torch.nn.Module):
    """Separate MLPs for the action mean and the value, plus a learned, state-independent
    log standard deviation.

    ``forward(observation, prev_action, prev_reward) -> (mu, log_std, v)`` with ``mu`` and
    ``log_std`` ``[..., action_size]`` and ``v`` ``[...]``; leading dims ``[]``, ``[B]`` or
    ``[T, B]`` are kept.  ``prev_action`` and ``prev_reward`` are unused.  Multi-dim
    observations are flattened.

    Args:
        observation_shape: shape of one observation.
        action_size: number of action dimensions.
        hidden_sizes: hidden widths of both MLPs (default ``[64, 64]``).
        hidden_nonlinearity: module class after each hidden layer (default ``torch.nn.Tanh``).
        mu_nonlinearity: module class applied to the mean output (default ``torch.nn.Tanh``,
            keeping means in [-1, 1]); ``None`` leaves the mean linear.
        init_log_std: initial value of every log standard deviation (default 0).
        normalize_observation: normalise observations by running statistics (default False);
            the statistics are updated by ``update_obs_rms``.
        norm_obs_clip: bound of normalised observations (default 10).
        norm_obs_var_clip: lower bound on the variance used to normalise (default 1e-6).
    """

    def __init__(
        self,
        observation_shape: Sequence[int],
        action_size: int,
        hidden_sizes: int | Sequence[int] | None = None,
        hidden_nonlinearity: type[torch.nn.Module] = torch.nn.Tanh,
        mu_nonlinearity: type[torch.nn.Module] | None = torch.nn.Tanh,
        init_log_std: float = 0.0,
        normalize_observation: bool = False,
        norm_obs_clip: float = 10,
        norm_obs_var_clip: float = 1e-6,
    ):
        super().__init__()
        self._obs_ndim = len(observation_shape)
        input_size = int(torch.Size(observation_shape).numel())
        hidden_sizes = [64, 64] if hidden_sizes is None else hidden_sizes
        mu_mlp = MlpModel(input_size, hidden_sizes, action_size, hidden_nonlinearity)
        self.mu = (
            mu_mlp if mu_nonlinearity is None else torch.nn.Sequential(mu_mlp, mu_nonlinearity())
        )
        self.v = MlpModel(input_size, hidden_sizes, 1, hidden_nonlinearity)
        self.log_std = torch.nn.Parameter(torch.full((action_size,), float(init_log_std)))
        self.init_observation_normalizer(
            observation_shape, normalize_observation, norm_obs_clip, norm_obs_var_clip
        )

    def forward(
        self, observation: torch.Tensor, prev_action: torch.Tensor, prev_reward: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        lead_dim, T, B, _ = infer_leading_dims(observation, self._obs_ndim)
        obs = self.normalize_obs(observation).reshape(T * B, -1)
        mu = self.mu(obs)
        v = self.v(obs).squeeze(-1)
        log_std = self.log_std.expand_as(mu)
        return restore_leading_dims((mu, log_std, v), lead_dim, T, B)
