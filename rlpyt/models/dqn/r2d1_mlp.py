"""Default recurrent Q-network of ``R2d1Agent`` for any Box observation and Discrete action."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from rlpyt.models.dqn.mlp import q_head
from rlpyt.models.mlp import MlpModel
from rlpyt.models.rnn import RnnState, recurrent_q_values
from rlpyt.utils.tensor import infer_leading_dims, restore_leading_dims

__all__ = ["R2d1MlpModel", "RnnState"]


class R2d1MlpModel(torch.nn.Module):
    """Observation MLP -> LSTM (with the previous action one-hot and previous reward) -> Q head.

    ``forward(observation, prev_action, prev_reward, init_rnn_state) -> (q, next_rnn_state)``:
    inputs with leading dims ``[T, B]`` (``[B]`` or ``[]`` are taken as T=1); ``prev_action``
    holds integer action indexes; ``init_rnn_state`` is ``RnnState(h, c)`` of ``[N, B, H]`` or
    ``None`` (zeros).  ``q`` is ``[..., output_size]`` with the input's leading dims and
    ``next_rnn_state`` is the ``RnnState`` after the last step.

    Args:
        observation_shape: shape of one observation (flattened inside).
        output_size: number of discrete actions.
        hidden_sizes: widths of the observation MLP before the LSTM (default ``(64,)``).
        lstm_size: LSTM hidden size (default 64).
        head_sizes: hidden widths of the Q head after the LSTM (default ``(64,)``).
        dueling: use a dueling head (value + advantage streams; default False).
        nonlinearity: module class after each layer of the observation MLP (default
            ``torch.nn.ReLU``; the head uses ReLU).
    """

    def __init__(
        self,
        observation_shape: Sequence[int],
        output_size: int,
        hidden_sizes: int | Sequence[int] | None = (64,),
        lstm_size: int = 64,
        head_sizes: int | Sequence[int] | None = (64,),
        dueling: bool = False,
        nonlinearity: type[torch.nn.Module] = torch.nn.ReLU,
    ):
        super().__init__()
        self._obs_ndim = len(observation_shape)
        self.output_size = int(output_size)
        input_size = int(torch.Size(observation_shape).numel())
        self.mlp = MlpModel(input_size, hidden_sizes, None, nonlinearity)
        self.lstm = torch.nn.LSTM(self.mlp.output_size + self.output_size + 1, lstm_size)
        self.head = q_head(lstm_size, head_sizes, self.output_size, dueling)

    def forward(
        self,
        observation: torch.Tensor,
        prev_action: torch.Tensor,
        prev_reward: torch.Tensor,
        init_rnn_state: RnnState | None,
    ) -> tuple[torch.Tensor, RnnState]:
        lead_dim, T, B, _ = infer_leading_dims(observation, self._obs_ndim)
        features = self.mlp(observation.reshape(T * B, -1).float()).reshape(T, B, -1)
        q, next_rnn_state = recurrent_q_values(self.lstm, self.head, features, prev_action,
                                               prev_reward, self.output_size, init_rnn_state)
        return restore_leading_dims(q, lead_dim, T, B), next_rnn_state
