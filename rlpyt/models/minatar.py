"""The MinAtar network (Young & Tian 2019) for Q-learning, actor-critic and R2D1 agents.

The paper's agents share one small torso: a 3x3 convolution with 16 channels and
stride 1 (no padding: 10x10 -> 8x8), then a fully connected hidden layer of 128 units,
ReLU after each.  On top of it:

| class | ``forward`` returns |
|---|---|
| ``MinAtarDqnModel(o, a, r)`` | ``q [..., output_size]`` (a linear layer, or dueling) |
| ``MinAtarCatDqnModel(o, a, r)`` | ``p [..., output_size, n_atoms]``: C51's atom probabilities |
| ``MinAtarPgModel(o, a, r)`` | ``(pi, v)``: softmax policy and value heads |
| ``MinAtarR2d1Model(o, a, r, rnn_state)`` | ``(q, next_rnn_state)``: an LSTM after the torso |

Observations are ``[..., C, 10, 10]`` of 0/1 values (any dtype: ``MinAtarEnv`` gives
bool), used as they are (no 1/255 scaling).  Leading dims ``[]``, ``[B]`` or ``[T, B]``
are kept.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F

from rlpyt.models.conv2d import Conv2dHeadModel
from rlpyt.models.dqn.mlp import check_n_atoms, distributional_q_head, q_head
from rlpyt.models.rnn import RnnState, recurrent_q_values
from rlpyt.models.utils import orthogonal_init_
from rlpyt.utils.tensor import infer_leading_dims, restore_leading_dims

__all__ = ["MinAtarCatDqnModel", "MinAtarDqnModel", "MinAtarPgModel", "MinAtarR2d1Model", "MinAtarTorso", "RnnState"]


class MinAtarTorso(Conv2dHeadModel):
    """``[..., C, H, W] -> [..., hidden_size]``: one conv layer, flattened, one hidden layer.

    Args:
        image_shape: ``(C, H, W)`` of one observation.
        channels: conv output channels (default 16, the paper's).
        kernel_size: conv kernel size (default 3), stride 1, no padding.
        hidden_size: width of the fully connected layer (default 128).
    """

    def __init__(
        self, image_shape: Sequence[int], channels: int = 16, kernel_size: int = 3,
        hidden_size: int = 128,
    ):
        super().__init__(image_shape=image_shape, channels=[channels],
                         kernel_sizes=[kernel_size], strides=[1], paddings=[0],
                         hidden_sizes=hidden_size)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return super().forward(input if input.dtype == torch.float32 else input.float())


class MinAtarDqnModel(torch.nn.Module):
    """Q-values from the MinAtar torso (the paper's DQN network).

    Args:
        observation_shape: ``(C, H, W)`` of one observation.
        output_size: number of actions.
        channels, kernel_size, hidden_size: of ``MinAtarTorso`` (defaults 16, 3, 128).
        dueling: a dueling head (value and advantage streams) instead of one linear
            layer (default False, the paper's).

    ``prev_action`` and ``prev_reward`` are unused (``uses_prev_action_reward = False``).
    """

    uses_prev_action_reward = False

    def __init__(
        self,
        observation_shape: Sequence[int],
        output_size: int,
        channels: int = 16,
        kernel_size: int = 3,
        hidden_size: int = 128,
        dueling: bool = False,
    ):
        super().__init__()
        self.torso = MinAtarTorso(observation_shape, channels, kernel_size, hidden_size)
        self.head = q_head(self.torso.output_size, None, output_size, dueling)

    def forward(
        self, observation: torch.Tensor, prev_action: torch.Tensor, prev_reward: torch.Tensor
    ) -> torch.Tensor:
        return self.head(self.torso(observation))


class MinAtarCatDqnModel(torch.nn.Module):
    """A return distribution per action from the MinAtar torso (C51's head on the
    paper's network): probabilities over ``n_atoms`` atoms, softmax over the last dim.

    Args:
        observation_shape: ``(C, H, W)`` of one observation.
        output_size: number of actions.
        n_atoms: atoms of the support per action (default 51).
        channels, kernel_size, hidden_size: of ``MinAtarTorso`` (defaults 16, 3, 128).
        dueling: a dueling head (``DistributionalDuelingHeadModel``) instead of one
            linear layer (default False).
    """

    uses_prev_action_reward = False

    def __init__(
        self,
        observation_shape: Sequence[int],
        output_size: int,
        n_atoms: int = 51,
        channels: int = 16,
        kernel_size: int = 3,
        hidden_size: int = 128,
        dueling: bool = False,
    ):
        super().__init__()
        check_n_atoms(n_atoms)
        self.torso = MinAtarTorso(observation_shape, channels, kernel_size, hidden_size)
        self.head = distributional_q_head(self.torso.output_size, None, output_size, n_atoms,
                                          dueling)

    def forward(
        self, observation: torch.Tensor, prev_action: torch.Tensor, prev_reward: torch.Tensor
    ) -> torch.Tensor:
        return F.softmax(self.head(self.torso(observation)), dim=-1)


class MinAtarPgModel(torch.nn.Module):
    """Softmax policy and value heads on one MinAtar torso (the paper's actor-critic
    network), with orthogonal initialisation of the heads (gain 0.01 for the policy, 1 for
    the value) so that the first policy is near uniform.

    Args:
        observation_shape: ``(C, H, W)`` of one observation.
        action_size: number of actions.
        channels, kernel_size, hidden_size: of ``MinAtarTorso`` (defaults 16, 3, 128).
    """

    def __init__(
        self,
        observation_shape: Sequence[int],
        action_size: int,
        channels: int = 16,
        kernel_size: int = 3,
        hidden_size: int = 128,
    ):
        super().__init__()
        self.torso = MinAtarTorso(observation_shape, channels, kernel_size, hidden_size)
        for layer in self.torso.modules():
            if isinstance(layer, (torch.nn.Linear, torch.nn.Conv2d)):
                orthogonal_init_(layer, math.sqrt(2))
        self.pi = torch.nn.Linear(self.torso.output_size, action_size)
        self.v = torch.nn.Linear(self.torso.output_size, 1)
        orthogonal_init_(self.pi, 0.01)
        orthogonal_init_(self.v, 1.0)

    def forward(
        self, observation: torch.Tensor, prev_action: torch.Tensor, prev_reward: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        features = self.torso(observation)
        return F.softmax(self.pi(features), dim=-1), self.v(features).squeeze(-1)


class MinAtarR2d1Model(torch.nn.Module):
    """MinAtar torso -> LSTM (with the previous action one-hot and reward) -> Q head.

    ``forward(observation, prev_action, prev_reward, init_rnn_state) -> (q,
    next_rnn_state)`` over ``[T, B]`` inputs (``[B]`` or ``[]`` are taken as T=1);
    ``init_rnn_state`` is ``RnnState(h, c)`` of ``[1, B, lstm_size]`` or ``None`` (zeros).

    Args:
        observation_shape: ``(C, H, W)`` of one observation.
        output_size: number of actions.
        channels, kernel_size, hidden_size: of ``MinAtarTorso`` (defaults 16, 3, 128).
        lstm_size: LSTM hidden size (default 128).
        head_sizes: hidden widths of the Q head after the LSTM (default ``None``: linear).
        dueling: a dueling head (default False).
    """

    def __init__(
        self,
        observation_shape: Sequence[int],
        output_size: int,
        channels: int = 16,
        kernel_size: int = 3,
        hidden_size: int = 128,
        lstm_size: int = 128,
        head_sizes: int | Sequence[int] | None = None,
        dueling: bool = False,
    ):
        super().__init__()
        self.output_size = int(output_size)
        self.torso = MinAtarTorso(observation_shape, channels, kernel_size, hidden_size)
        self.lstm = torch.nn.LSTM(self.torso.output_size + self.output_size + 1, lstm_size)
        self.head = q_head(lstm_size, head_sizes, self.output_size, dueling)

    def forward(
        self,
        observation: torch.Tensor,
        prev_action: torch.Tensor,
        prev_reward: torch.Tensor,
        init_rnn_state: RnnState | None,
    ) -> tuple[torch.Tensor, RnnState]:
        lead_dim, T, B, _ = infer_leading_dims(observation, 3)
        features = self.torso(observation.reshape(T * B, *observation.shape[-3:]))
        features = features.reshape(T, B, -1)
        q, next_rnn_state = recurrent_q_values(self.lstm, self.head, features, prev_action,
                                               prev_reward, self.output_size, init_rnn_state)
        return restore_leading_dims(q, lead_dim, T, B), next_rnn_state
