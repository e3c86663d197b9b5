"""Recurrent Gaussian actor-critic for continuous control (e.g. MuJoCo)."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from rlpyt.models.mlp import MlpModel
from rlpyt.models.rnn import RnnState, prev_action_features, run_lstm
from rlpyt.models.running_mean_std import ObservationNormalizerMixin
from rlpyt.utils.tensor import infer_leading_dims, restore_leading_dims

__all__ = ["MujocoLstmModel", "RnnState"]


class MujocoLstmModel(ObservationNormalizerMixin, torch.nn.Module):
    """An observation MLP feeds an LSTM together with the previous action and reward; one
    linear head on the LSTM output gives the action mean, a state-dependent log standard
    deviation and the value.

    ``forward(observation, prev_action, prev_reward, init_rnn_state) ->
    (mu, log_std, v, next_rnn_state)``: inputs have leading dims ``[T, B]`` (or ``[B]`` /
    ``[]``, taken as T=1); ``init_rnn_state`` is ``RnnState(h, c)`` of ``[N, B, H]`` or
    ``None`` (zeros).  ``mu`` and ``log_std`` are ``[..., action_size]``, ``v`` is ``[...]``
    (input leading dims) and ``next_rnn_state`` is ``RnnState`` of ``[N, B, H]``.

    Args:
        observation_shape: shape of one observation (flattened inside).
        action_size: number of action dimensions.
        hidden_sizes: hidden widths of the observation MLP (default ``[256, 256]``).
        lstm_size: LSTM hidden size (default 256).
        nonlinearity: module class after each MLP layer (default ``torch.nn.ReLU``).
        normalize_observation, norm_obs_clip, norm_obs_var_clip: as ``MujocoFfModel``.
    """

    def __init__(
        self,
        observation_shape: Sequence[int],
        action_size: int,
        hidden_sizes: int | Sequence[int] | None = None,
        lstm_size: int = 256,
        nonlinearity: type[torch.nn.Module] = torch.nn.ReLU,
        normalize_observation: bool = False,
        norm_obs_clip: float = 10,
        norm_obs_var_clip: float = 1e-6,
    ):
        super().__init__()
        self._obs_ndim = len(observation_shape)
        self.action_size = action_size
        input_size = int(torch.Size(observation_shape).numel())
        hidden_sizes = [256, 256] if hidden_sizes is None else hidden_sizes
        self.mlp = MlpModel(input_size, hidden_sizes, nonlinearity=nonlinearity)
        self.lstm = torch.nn.LSTM(self.mlp.output_size + action_size + 1, lstm_size)
        self.head = torch.nn.Linear(lstm_size, 2 * action_size + 1)
        self.init_observation_normalizer(
            observation_shape, normalize_observation, norm_obs_clip, norm_obs_var_clip
        )

    def forward(
        self,
        observation: torch.Tensor,
        prev_action: torch.Tensor,
        prev_reward: torch.Tensor,
        init_rnn_state: RnnState | None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, RnnState]:
        lead_dim, T, B, _ = infer_leading_dims(observation, self._obs_ndim)
        obs = self.normalize_obs(observation).reshape(T * B, -1)
        features = self.mlp(obs).reshape(T, B, -1)
        lstm_input = torch.cat(
            [
                features,
                prev_action_features(
                    prev_action, T, B, self.action_size, discrete=False, dtype=features.dtype
                ),
                prev_reward.reshape(T, B, 1).to(features.dtype),
            ],
            dim=2,
        )
        lstm_out, next_rnn_state = run_lstm(self.lstm, lstm_input, init_rnn_state)
        output = self.head(lstm_out.reshape(T * B, -1))
        mu, log_std, v = output.split([self.action_size, self.action_size, 1], dim=-1)
        mu, log_std, v = restore_leading_dims((mu, log_std, v.squeeze(-1)), lead_dim, T, B)
        return mu, log_std, v, next_rnn_state
