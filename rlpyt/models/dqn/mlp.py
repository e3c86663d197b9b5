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
    "layer_plan",
    "q_head",
    "plan_sources",
    "run_plan",
]


_LINEAR, _RELU, _MODULE = 0, 1, 2


def layer_plan(module: torch.nn.Module) -> tuple[tuple[int, object], ...]:
    """The steps ``run_plan`` takes to compute ``module(x)``.

    For an ``MlpModel``, each layer becomes a direct ``F.linear`` (reading the layer's
    parameter dict at call time, so replaced or moved parameters are picked up; the
    models plan again when a layer itself is replaced, see ``plan_sources``) or
    ``torch.relu`` call: skipping ``nn.Module.__call__`` and each layer's ``forward``
    saves their per-call overhead, much of a small MLP's time on CPU (forward
    hooks on those inner layers do not run).  Any other module is one step, called
    normally.
    """
    if not isinstance(module, MlpModel):
        return ((_MODULE, module),)
    plan = []
    for layer in module.model:
        if type(layer) is torch.nn.Linear:
            plan.append((_LINEAR, layer._parameters))
        elif type(layer) is torch.nn.ReLU and not layer.inplace:
            plan.append((_RELU, None))
        else:
            plan.append((_MODULE, layer))
    return tuple(plan)


def plan_sources(module: torch.nn.Module) -> tuple[torch.nn.Module, ...]:
    """The modules ``layer_plan(module)`` reads: an ``MlpModel``'s layers, else the
    module itself.  A plan is current while these are the same objects."""
    if isinstance(module, MlpModel):
        return tuple(module._modules["model"]._modules.values())
    return (module,)


def _current_plan(model: torch.nn.Module, names: tuple[str, ...]) -> tuple:
    """The plan of ``model``'s submodules ``names`` in order, kept in ``model._plan`` and
    made again whenever one of their ``plan_sources`` has been replaced."""
    sources = ()
    for name in names:
        sources += plan_sources(model._modules[name])
    if sources != model._plan_sources:
        plan = ()
        for name in names:
            plan += layer_plan(model._modules[name])
        model._plan, model._plan_sources = plan, sources
    return model._plan


def run_plan(plan: tuple[tuple[int, object], ...], x: torch.Tensor) -> torch.Tensor:
    """``module(x)`` by the steps of ``layer_plan(module)``."""
    for kind, item in plan:
        if kind == _LINEAR:
            x = F.linear(x, item["weight"], item["bias"])
        elif kind == _RELU:
            x = torch.relu(x)
        else:
            x = item(x)
    return x


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


def _flat_float(observation: torch.Tensor, obs_ndim: int) -> torch.Tensor:
    """``observation [..., *obs_shape]`` as float32 ``[..., prod(obs_shape)]`` (no call
    where nothing changes: vector observations that are float32 already)."""
    if obs_ndim != 1:
        lead_shape = observation.shape[: observation.dim() - obs_ndim]
        observation = observation.reshape(*lead_shape, -1)
    return observation if observation.dtype == torch.float32 else observation.float()


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

    ``uses_prev_action_reward = False``: ``DQN`` then lets the replay buffer skip
    gathering those inputs (they arrive as ``None``).
    """

    uses_prev_action_reward = False

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
        self._plan, self._plan_sources = (), None

    def forward(
        self, observation: torch.Tensor, prev_action: torch.Tensor, prev_reward: torch.Tensor
    ) -> torch.Tensor:
        # Trunk and head as one sequence of direct calls (the hot path of DQN on CPU).
        plan = _current_plan(self, ("trunk", "head"))
        return run_plan(plan, _flat_float(observation, self._obs_ndim))


class CatDqnMlpModel(torch.nn.Module):
    """Return distributions (C51) by an MLP on the flattened observation.

    Args:
        observation_shape, output_size, hidden_sizes, dueling: as ``DqnMlpModel`` (the
            dueling head is ``DistributionalDuelingHeadModel``, linear streams on the trunk).
        n_atoms: atoms of the support per action (default 51).

    ``prev_action`` / ``prev_reward`` are unused (``uses_prev_action_reward = False``).
    """

    uses_prev_action_reward = False

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
        self._plan, self._plan_sources = (), None

    def forward(
        self, observation: torch.Tensor, prev_action: torch.Tensor, prev_reward: torch.Tensor
    ) -> torch.Tensor:
        plan = _current_plan(self, ("trunk",))
        features = run_plan(plan, _flat_float(observation, self._obs_ndim))
        return F.softmax(self.head(features), dim=-1)
