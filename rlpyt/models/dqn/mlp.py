"""Default Q models for any Box observation and Discrete actions (``DqnAgent()``, ``CatDqnAgent()``).

| class | ``forward(observation, prev_action, prev_reward)`` returns |
|---|---|
| ``DqnMlpModel`` | ``q [..., output_size]`` |
| ``CatDqnMlpModel`` | ``p [..., output_size, n_atoms]`` (softmax over atoms) |

The observation is flattened; leading dims ``[]``, ``[B]`` or ``[T, B]`` are kept.
``prev_action`` and ``prev_reward`` belong to the common agent interface and are unused.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F

from rlpyt.models.dqn.dueling import DistributionalDuelingHeadModel, DuelingHeadModel
from rlpyt.models.mlp import MlpModel

__all__ = [
    "CatDqnMlpModel",
    "DqnMlpModel",
    "check_n_atoms",
    "distributional_q_head",
    "q_head",
    "run_layers",
]


def run_layers(module: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    """``module(x)``, calling each layer's ``forward`` directly when ``module`` is an
    ``MlpModel``: skipping ``nn.Module.__call__`` saves several microseconds per layer,
    which is much of a small MLP's time on CPU (hooks on those inner layers do not run)."""
    if isinstance(module, MlpModel):
        for layer in module.model:
            x = layer.forward(x)
        return x
    return module(x)


def q_head(
    input_size: int, hidden_sizes, output_size: int, dueling: bool = False
) -> torch.nn.Module:
    """``[..., input_size] -> q [..., output_size]``: an MLP, or a dueling head."""
    if dueling:
        return DuelingHeadModel(input_size, hidden_sizes, output_size)
    return MlpModel(input_size, hidden_sizes, output_size)


def distributional_q_head(
    input_size: int, hidden_sizes, output_size: int, n_atoms: int, dueling: bool = False
) -> torch.nn.Module:
    """``[..., input_size] -> logits [..., output_size, n_atoms]``: an MLP, or a dueling head."""
    if dueling:
        return DistributionalDuelingHeadModel(input_size, hidden_sizes, output_size, n_atoms)
    mlp = MlpModel(input_size, hidden_sizes, output_size * n_atoms)
    return torch.nn.Sequential(mlp, torch.nn.Unflatten(-1, (output_size, n_atoms)))


def check_n_atoms(n_atoms) -> None:
    if isinstance(n_atoms, bool) or not isinstance(n_atoms, int) or n_atoms < 2:
        raise ValueError(f"n_atoms={n_atoms!r} must be an int >= 2 (atoms of the support)")


class DqnMlpModel(torch.nn.Module):
    """Q-values by an MLP on the flattened observation.

    The hidden layers form a trunk; a linear layer maps its features to Q-values, or
    with ``dueling`` a ``DuelingHeadModel`` whose value and advantage streams are
    linear layers on the shared trunk (cheaper than two full MLPs, and as good on
    classic control).

    Args:
        observation_shape: shape of one observation.
        output_size: number of actions.
        hidden_sizes: hidden layer widths of the trunk (default ``(64, 64)``).
        dueling: dueling head instead of one linear output layer (default False).
    """

    def __init__(
        self,
        observation_shape: Sequence[int],
        output_size: int,
        hidden_sizes: int | Sequence[int] | None = (64, 64),
        dueling: bool = False,
    ):
        super().__init__()
        self._obs_ndim = len(observation_shape)
        self.trunk = MlpModel(int(torch.Size(observation_shape).numel()), hidden_sizes)
        self.head = q_head(self.trunk.output_size, None, output_size, dueling)

    def forward(
        self, observation: torch.Tensor, prev_action: torch.Tensor, prev_reward: torch.Tensor
    ) -> torch.Tensor:
        lead_shape = observation.shape[: observation.dim() - self._obs_ndim]
        features = run_layers(self.trunk, observation.reshape(*lead_shape, -1).float())
        return run_layers(self.head, features)


class CatDqnMlpModel(torch.nn.Module):
    """Return distributions (C51) by an MLP on the flattened observation.

    Args:
        observation_shape, output_size, hidden_sizes, dueling: as ``DqnMlpModel`` (the
            dueling head is ``DistributionalDuelingHeadModel``, linear streams on the trunk).
        n_atoms: atoms of the support per action (default 51).
    """

    def __init__(
        self,
        observation_shape: Sequence[int],
        output_size: int,
        n_atoms: int = 51,
        hidden_sizes: int | Sequence[int] | None = (64, 64),
        dueling: bool = False,
    ):
        super().__init__()
        check_n_atoms(n_atoms)
        self._obs_ndim = len(observation_shape)
        self.trunk = MlpModel(int(torch.Size(observation_shape).numel()), hidden_sizes)
        self.head = distributional_q_head(self.trunk.output_size, None, output_size, n_atoms,
                                          dueling)

    def forward(
        self, observation: torch.Tensor, prev_action: torch.Tensor, prev_reward: torch.Tensor
    ) -> torch.Tensor:
        lead_shape = observation.shape[: observation.dim() - self._obs_ndim]
        features = run_layers(self.trunk, observation.reshape(*lead_shape, -1).float())
        return F.softmax(self.head(features), dim=-1)
