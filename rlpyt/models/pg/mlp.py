"""Default actor-critic models for any Box observation with Discrete or Box actions.

These are what the generic PG agents build when given no ``ModelCls``.  The feed-forward
models follow the PPO reference setup (separate tanh MLPs for policy and value, orthogonal
initialisation with gain sqrt(2) on hidden layers, 0.01 on the policy output and 1 on the value
output), which learns classic-control tasks such as CartPole and Pendulum reliably.

| class | forward returns |
|---|---|
| ``CategoricalPgMlpModel`` | ``(pi, v)`` |
| ``GaussianPgMlpModel`` | ``(mu, log_std, v)`` |
| ``CategoricalPgLstmModel`` | ``(pi, v, next_rnn_state)`` |
| ``GaussianPgLstmModel`` | ``(mu, log_std, v, next_rnn_state)`` |
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F

from rlpyt.models.mlp import MlpModel, run_mlp
from rlpyt.models.rnn import RnnState, prev_action_features, run_lstm
from rlpyt.models.running_mean_std import ObservationNormalizerMixin
from rlpyt.models.utils import orthogonal_init_
from rlpyt.utils.tensor import infer_leading_dims, restore_leading_dims

__all__ = [
    "CategoricalPgLstmModel",
    "CategoricalPgMlpModel",
    "GaussianPgLstmModel",
    "GaussianPgMlpModel",
    "RnnState",
]

HIDDEN_GAIN = math.sqrt(2)
POLICY_GAIN = 0.01
VALUE_GAIN = 1.0


def orthogonal_mlp(
    input_size: int,
    hidden_sizes: int | Sequence[int] | None,
    output_size: int | None,
    nonlinearity: type[torch.nn.Module],
    output_gain: float,
) -> MlpModel:
    """``MlpModel`` with orthogonal init: gain sqrt(2) on hidden layers, ``output_gain`` on the
    output layer (or sqrt(2) on all layers if there is no output layer)."""
    mlp = MlpModel(input_size, hidden_sizes, output_size, nonlinearity)
    linears = [m for m in mlp.modules() if isinstance(m, torch.nn.Linear)]
    for i, layer in enumerate(linears):
        is_output = output_size is not None and i == len(linears) - 1
        orthogonal_init_(layer, output_gain if is_output else HIDDEN_GAIN)
    return mlp


class _FfActorCritic(ObservationNormalizerMixin, torch.nn.Module):
    """Separate policy and value MLPs on the flattened (optionally normalised) observation."""

    def __init__(
        self,
        observation_shape,
        policy_output_size,
        hidden_sizes,
        nonlinearity,
        normalize_observation,
        norm_obs_clip,
        norm_obs_var_clip,
    ):
        super().__init__()
        self._obs_ndim = len(observation_shape)
        input_size = int(torch.Size(observation_shape).numel())
        self.pi = orthogonal_mlp(
            input_size, hidden_sizes, policy_output_size, nonlinearity, POLICY_GAIN
        )
        self.v = orthogonal_mlp(input_size, hidden_sizes, 1, nonlinearity, VALUE_GAIN)
        self.init_observation_normalizer(
            observation_shape, normalize_observation, norm_obs_clip, norm_obs_var_clip
        )

    def _trunk_inputs(self, observation):
        lead_dim, T, B, _ = infer_leading_dims(observation, self._obs_ndim)
        obs = self.normalize_obs(observation)
        if lead_dim != 1 or self._obs_ndim != 1:  # [B, features] is already the MLP's input
            obs = obs.reshape(T * B, -1)
        return obs, (lead_dim, T, B)

    def _heads(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Outputs of the policy and value MLPs on ``obs`` ``[N, input_size]``."""
        return run_mlp(self.pi, obs), run_mlp(self.v, obs)

    def _value(self, observation: torch.Tensor) -> torch.Tensor:
        """The value MLP alone, leading dims kept: ``[..., *observation_shape] -> [...]``."""
        obs, lead = self._trunk_inputs(observation)
        return restore_leading_dims(run_mlp(self.v, obs).squeeze(-1), *lead)


class CategoricalPgMlpModel(_FfActorCritic):
    """Softmax policy and value MLPs for discrete actions.

    ``forward(observation, prev_action, prev_reward) -> (pi, v)``: ``pi`` ``[..., action_size]``
    probabilities, ``v`` ``[...]``; leading dims ``[]``, ``[B]`` or ``[T, B]`` are kept;
    ``prev_action`` and ``prev_reward`` are unused.

    Args:
        observation_shape: shape of one observation (flattened inside).
        action_size: number of discrete actions.
        hidden_sizes: hidden widths of each MLP (default ``(64, 64)``).
        nonlinearity: module class after each hidden layer (default ``torch.nn.Tanh``).
        normalize_observation: normalise observations by running statistics updated by
            ``update_obs_rms`` (default False).
        norm_obs_clip: bound of normalised observations (default 10).
        norm_obs_var_clip: lower bound on the variance used to normalise (default 1e-6).
    """

    def __init__(
        self,
        observation_shape: Sequence[int],
        action_size: int,
        hidden_sizes: int | Sequence[int] | None = (64, 64),
        nonlinearity: type[torch.nn.Module] = torch.nn.Tanh,
        normalize_observation: bool = False,
        norm_obs_clip: float = 10,
        norm_obs_var_clip: float = 1e-6,
    ):
        super().__init__(
            observation_shape,
            action_size,
            hidden_sizes,
            nonlinearity,
            normalize_observation,
            norm_obs_clip,
            norm_obs_var_clip,
        )

    def forward(
        self, observation: torch.Tensor, prev_action: torch.Tensor, prev_reward: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        obs, lead = self._trunk_inputs(observation)
        logits, v = self._heads(obs)
        return restore_leading_dims((F.softmax(logits, dim=-1), v.squeeze(-1)), *lead)

    def value(
        self, observation: torch.Tensor, prev_action: torch.Tensor, prev_reward: torch.Tensor
    ) -> torch.Tensor:
        """``forward(...)[-1]`` without running the policy MLP (bootstrap values)."""
        return self._value(observation)


class GaussianPgMlpModel(_FfActorCritic):
    """Gaussian policy-mean and value MLPs with a learned, state-independent log std.

    ``forward(observation, prev_action, prev_reward) -> (mu, log_std, v)``: ``mu`` and
    ``log_std`` ``[..., action_size]``, ``v`` ``[...]``; the mean is linear (unbounded; the
    agent or env clips actions to the action space).

    Args:
        observation_shape, action_size, hidden_sizes, nonlinearity, normalize_observation,
            norm_obs_clip, norm_obs_var_clip: as ``CategoricalPgMlpModel`` (``action_size`` is
            the number of action dimensions).
        init_log_std: initial log standard deviation of every action dimension (default 0).
    """

    def __init__(
        self,
        observation_shape: Sequence[int],
        action_size: int,
        hidden_sizes: int | Sequence[int] | None = (64, 64),
        nonlinearity: type[torch.nn.Module] = torch.nn.Tanh,
        init_log_std: float = 0.0,
        normalize_observation: bool = False,
        norm_obs_clip: float = 10,
        norm_obs_var_clip: float = 1e-6,
    ):
        super().__init__(
            observation_shape,
            action_size,
            hidden_sizes,
            nonlinearity,
            normalize_observation,
            norm_obs_clip,
            norm_obs_var_clip,
        )
        self.log_std = torch.nn.Parameter(torch.full((action_size,), float(init_log_std)))

    def forward(
        self, observation: torch.Tensor, prev_action: torch.Tensor, prev_reward: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        obs, lead = self._trunk_inputs(observation)
        mu, v = self._heads(obs)
        return restore_leading_dims((mu, self.log_std.expand_as(mu), v.squeeze(-1)), *lead)

    def value(
        self, observation: torch.Tensor, prev_action: torch.Tensor, prev_reward: torch.Tensor
    ) -> torch.Tensor:
        """``forward(...)[-1]`` without running the policy MLP (bootstrap values)."""
        return self._value(observation)


class _LstmActorCritic(ObservationNormalizerMixin, torch.nn.Module):
    """Observation MLP -> LSTM (with previous action and reward) -> policy and value heads."""

    def __init__(
        self,
        observation_shape,
        action_size,
        discrete,
        hidden_sizes,
        lstm_size,
        nonlinearity,
        normalize_observation,
        norm_obs_clip,
        norm_obs_var_clip,
        head_sizes=(64,),
    ):
        super().__init__()
        self._obs_ndim = len(observation_shape)
        self.action_size = action_size
        self.discrete = discrete
        input_size = int(torch.Size(observation_shape).numel())
        self.mlp = orthogonal_mlp(input_size, hidden_sizes, None, nonlinearity, HIDDEN_GAIN)
        self.lstm = torch.nn.LSTM(self.mlp.output_size + action_size + 1, lstm_size)
        # Separate MLP heads after the LSTM: LSTM outputs start small, and a linear policy
        # head on them (gain 0.01) barely moves the logits per update.
        self.pi = orthogonal_mlp(lstm_size, head_sizes, action_size, nonlinearity, POLICY_GAIN)
        self.v = orthogonal_mlp(lstm_size, head_sizes, 1, nonlinearity, VALUE_GAIN)
        self.init_observation_normalizer(
            observation_shape, normalize_observation, norm_obs_clip, norm_obs_var_clip
        )

    def _lstm_features(self, observation, prev_action, prev_reward, init_rnn_state):
        """LSTM outputs ``[T * B, lstm_size]``, the leading-dim info and the next state."""
        lead_dim, T, B, _ = infer_leading_dims(observation, self._obs_ndim)
        obs = self.normalize_obs(observation).reshape(T * B, -1)
        features = self.mlp(obs).reshape(T, B, -1)
        action = prev_action_features(
            prev_action, T, B, self.action_size, self.discrete, dtype=features.dtype
        )
        reward = prev_reward.reshape(T, B, 1).to(features.dtype)
        lstm_input = torch.cat([features, action, reward], dim=2)
        lstm_out, next_rnn_state = run_lstm(self.lstm, lstm_input, init_rnn_state)
        return lstm_out.reshape(T * B, -1), (lead_dim, T, B), next_rnn_state


class CategoricalPgLstmModel(_LstmActorCritic):
    """Recurrent softmax policy and value for discrete actions.

    ``forward(observation, prev_action, prev_reward, init_rnn_state) -> (pi, v,
    next_rnn_state)``: inputs with leading dims ``[T, B]`` (``[B]`` / ``[]`` taken as T=1),
    ``prev_action`` integer indexes, ``init_rnn_state`` ``RnnState(h, c)`` of ``[N, B, H]`` or
    ``None`` (zeros).  ``pi`` ``[..., action_size]`` and ``v`` ``[...]`` keep the input's leading
    dims; ``next_rnn_state`` is ``RnnState`` of ``[N, B, H]``.

    Args:
        observation_shape: shape of one observation (flattened inside).
        action_size: number of discrete actions.
        hidden_sizes: hidden widths of the observation MLP before the LSTM (default ``(64,)``).
        lstm_size: LSTM hidden size (default 64).
        nonlinearity: module class after each MLP layer (default ``torch.nn.Tanh``).
        head_sizes: hidden widths of the separate policy and value MLPs after the LSTM
            (default ``(64,)``; ``None`` gives linear heads).
        normalize_observation, norm_obs_clip, norm_obs_var_clip: as ``CategoricalPgMlpModel``.
    """

    def __init__(
        self,
        observation_shape: Sequence[int],
        action_size: int,
        hidden_sizes: int | Sequence[int] | None = (64,),
        lstm_size: int = 64,
        nonlinearity: type[torch.nn.Module] = torch.nn.Tanh,
        normalize_observation: bool = False,
        norm_obs_clip: float = 10,
        norm_obs_var_clip: float = 1e-6,
        head_sizes: int | Sequence[int] | None = (64,),
    ):
        super().__init__(
            observation_shape,
            action_size,
            True,
            hidden_sizes,
            lstm_size,
            nonlinearity,
            normalize_observation,
            norm_obs_clip,
            norm_obs_var_clip,
            head_sizes,
        )

    def forward(
        self,
        observation: torch.Tensor,
        prev_action: torch.Tensor,
        prev_reward: torch.Tensor,
        init_rnn_state: RnnState | None,
    ) -> tuple[torch.Tensor, torch.Tensor, RnnState]:
        features, lead, next_rnn_state = self._lstm_features(
            observation, prev_action, prev_reward, init_rnn_state
        )
        pi = F.softmax(self.pi(features), dim=-1)
        v = self.v(features).squeeze(-1)
        pi, v = restore_leading_dims((pi, v), *lead)
        return pi, v, next_rnn_state


class GaussianPgLstmModel(_LstmActorCritic):
    """Recurrent Gaussian policy mean and value with a learned, state-independent log std.

    ``forward(observation, prev_action, prev_reward, init_rnn_state) -> (mu, log_std, v,
    next_rnn_state)``, shapes as ``CategoricalPgLstmModel`` with ``prev_action`` the previous
    continuous action ``[..., action_size]``.

    Args:
        observation_shape, action_size, hidden_sizes, lstm_size, nonlinearity,
            normalize_observation, norm_obs_clip, norm_obs_var_clip: as
            ``CategoricalPgLstmModel`` (``action_size`` is the number of action dimensions).
        init_log_std: initial log standard deviation of every action dimension (default 0).
    """

    def __init__(
        self,
        observation_shape: Sequence[int],
        action_size: int,
        hidden_sizes: int | Sequence[int] | None = (64,),
        lstm_size: int = 64,
        nonlinearity: type[torch.nn.Module] = torch.nn.Tanh,
        init_log_std: float = 0.0,
        normalize_observation: bool = False,
        norm_obs_clip: float = 10,
        norm_obs_var_clip: float = 1e-6,
        head_sizes: int | Sequence[int] | None = (64,),
    ):
        super().__init__(
            observation_shape,
            action_size,
            False,
            hidden_sizes,
            lstm_size,
            nonlinearity,
            normalize_observation,
            norm_obs_clip,
            norm_obs_var_clip,
            head_sizes,
        )
        self.log_std = torch.nn.Parameter(torch.full((action_size,), float(init_log_std)))

    def forward(
        self,
        observation: torch.Tensor,
        prev_action: torch.Tensor,
        prev_reward: torch.Tensor,
        init_rnn_state: RnnState | None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, RnnState]:
        features, lead, next_rnn_state = self._lstm_features(
            observation, prev_action, prev_reward, init_rnn_state
        )
        mu = self.pi(features)
        v = self.v(features).squeeze(-1)
        mu, log_std, v = restore_leading_dims((mu, self.log_std.expand_as(mu), v), *lead)
        return mu, log_std, v, next_rnn_state
