"""MLP policies and critics for continuous control (DDPG, TD3, SAC).

Every model takes the agent's inputs ``(observation, prev_action, prev_reward)``
(critics also an ``action``) with leading dims ``[]``, ``[B]`` or ``[T, B]`` and
returns outputs with the same leading dims.  ``prev_action`` and ``prev_reward``
are accepted for interface compatibility and ignored.  Actions are in the model's
units: each dimension in ``[-1, 1]``; agents scale them to the env's bounds.

| class | forward returns |
|---|---|
| ``MuMlpModel`` | ``mu`` ``[.., A]``: deterministic action, ``output_max * tanh(.)`` |
| ``PiMlpModel`` | ``(mean, log_std)`` ``[.., A]`` each: pre-squash Gaussian |
| ``QofMuMlpModel`` | ``q`` ``[..]``: Q(observation, action) |
| ``TwinQofMuMlpModel`` | ``(q1, q2)`` ``[..]`` each: two independent critics in one module |
| ``VMlpModel`` | ``v`` ``[..]``: V(observation) |

Hidden layers default to ``(256, 256)`` with ReLU and PyTorch's default
initialisation (the SAC and TD3 reference setups).  The layers are ``DenseMlp``s,
which store each weight input-major (``[in, out]``): the same function as
``MlpModel``, but every matrix product of the forward and backward pass runs in the
CPU BLAS's fast layout, where no operand needs the transposed access that the BLAS
handles slowly (docs/notes/code_figures.md has the timings).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F

from rlpyt.models.mlp import _as_size_list
from rlpyt.models.qpg.ensemble import EnsembleMlp
from rlpyt.utils.tensor import infer_leading_dims, restore_leading_dims

__all__ = [
    "DenseMlp", "MuMlpModel", "PiMlpModel", "QofMuMlpModel", "TwinQofMuMlpModel", "VMlpModel",
]

DEFAULT_HIDDEN = (256, 256)


def _flat_size(observation_shape) -> int:
    shape = tuple(observation_shape)
    size = 1
    for dim in shape:
        size *= int(dim)
    if size < 1:
        raise ValueError(f"observation_shape={observation_shape!r} must have positive dims")
    return size


def _check_action_size(owner: str, action_size) -> int:
    if isinstance(action_size, bool) or not isinstance(action_size, int) or action_size < 1:
        raise ValueError(f"{owner}: action_size={action_size!r} must be a positive int")
    return action_size


class _ObservationMlp(torch.nn.Module):
    """Flattens the observation's data dims and handles the leading dims.

    ``uses_prev_action_reward = False``: these models ignore ``prev_action`` and
    ``prev_reward``, so the replay buffer of DDPG, TD3 and SAC skips gathering them (they
    arrive as ``None``).
    """

    uses_prev_action_reward = False

    def __init__(self, observation_shape):
        super().__init__()
        self._obs_ndim = len(tuple(observation_shape))
        self._obs_size = _flat_size(observation_shape)

    def _flatten(self, observation: torch.Tensor):
        lead_dim, T, B, _ = infer_leading_dims(observation, self._obs_ndim)
        return observation.reshape(T * B, self._obs_size), lead_dim, T, B


class DenseMlp(torch.nn.Module):
    """ReLU MLP ``[N, input_size] -> [N, output_size]`` with BLAS-friendly weight layouts.

    Computes exactly what ``MlpModel(input_size, hidden_sizes, output_size)`` computes
    (``relu`` after every hidden layer, none after the output layer).  Each hidden
    layer ``k`` stores its weight input-major, as ``weight{k}`` of shape ``[in, out]``,
    so that its forward product is ``addmm(bias, x, weight)`` and the backward
    products need no transposed operand that the BLAS handles slowly.  The output
    layer stores its weight output-major, as ``out_weight{k}`` of shape ``[out, in]``
    (``torch.nn.Linear``'s layout): with the few outputs of a policy the input-major
    products are the slow ones on CPU (docs/notes/code_figures.md has the timings).
    The ReLU runs in place on the product (the product's backward does not need its
    output).
    Initialisation draws the same numbers as ``torch.nn.Linear`` (so a seed gives the
    ``MlpModel`` weights, hidden ones transposed).  ``load_mlp_state_dict`` loads an
    ``MlpModel`` state dict; a state dict with the output weight input-major under
    ``weight{k}`` (the hidden layers' layout) also loads, transposed on the way in, so
    that every checkpoint of a ``DenseMlp`` resumes.

    Args:
        input_size: input width.
        hidden_sizes: hidden layer widths (None or ``[]`` for a single linear layer).
        output_size: output width.
    """

    def __init__(
        self, input_size: int, hidden_sizes: int | Sequence[int] | None, output_size: int
    ):
        super().__init__()
        sizes = [input_size, *_as_size_list(hidden_sizes, "hidden_sizes"), output_size]
        self.n_layers = len(sizes) - 1
        for k, (size_in, size_out) in enumerate(zip(sizes, sizes[1:])):
            weight, bias = _linear_init(size_in, size_out)
            if k < self.n_layers - 1:
                self.register_parameter(f"weight{k}", torch.nn.Parameter(weight.t().contiguous()))
            else:
                self.register_parameter(f"out_weight{k}", torch.nn.Parameter(weight))
            self.register_parameter(f"bias{k}", torch.nn.Parameter(bias))
        self._layers = None  # cached (weight, bias) pairs: no module lookups per call

    def layers(self) -> list[tuple[torch.nn.Parameter, torch.nn.Parameter]]:
        if self._layers is None:
            last = self.n_layers - 1
            self._layers = [
                (getattr(self, f"weight{k}" if k < last else f"out_weight{k}"),
                 getattr(self, f"bias{k}"))
                for k in range(self.n_layers)
            ]
        return self._layers

    def _apply(self, fn, recurse=True):
        self._layers = None  # .to(device) may replace the parameters
        return super()._apply(fn, recurse)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        *hidden, (weight, bias) = self.layers()
        for w, b in hidden:
            x = torch.addmm(b, x, w).relu_()
        return F.linear(x, weight, bias)  # the output layer is output-major

    @torch.no_grad()
    def load_mlp_state_dict(self, state_dict: dict[str, torch.Tensor]) -> None:
        """Copy the weights of an equivalent ``MlpModel`` (keys ``model.0.weight``,
        ``model.0.bias``, ``model.2.weight``, ...)."""
        last = self.n_layers - 1
        for k, (weight, bias) in enumerate(self.layers()):
            mlp_weight = state_dict[f"model.{2 * k}.weight"]
            weight.copy_(mlp_weight if k == last else mlp_weight.t())
            bias.copy_(state_dict[f"model.{2 * k}.bias"])

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        last = self.n_layers - 1
        old_key, key = f"{prefix}weight{last}", f"{prefix}out_weight{last}"
        if old_key in state_dict and key not in state_dict:  # output weight stored input-major
            state_dict[key] = state_dict.pop(old_key).t()
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)


def _linear_init(size_in: int, size_out: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``torch.nn.Linear``'s initial ``[out, in]`` weight and bias, drawn in its order."""
    weight = torch.empty(size_out, size_in)
    torch.nn.init.kaiming_uniform_(weight, a=math.sqrt(5))
    bound = 1 / math.sqrt(size_in)
    bias = torch.empty(size_out).uniform_(-bound, bound)
    return weight, bias


class MuMlpModel(_ObservationMlp):
    """Deterministic policy ``mu(s) = output_max * tanh(MLP(s))`` (DDPG, TD3).

    Args:
        observation_shape: shape of one observation (flattened for the MLP).
        hidden_sizes: hidden layer widths (default ``(256, 256)``).
        action_size: number of action dimensions.
        output_max: bound of each output (default 1: the agent's model units).
    """

    def __init__(
        self,
        observation_shape,
        hidden_sizes: int | Sequence[int] | None = DEFAULT_HIDDEN,
        action_size: int | None = None,
        output_max: float = 1.0,
    ):
        super().__init__(observation_shape)
        action_size = _check_action_size("MuMlpModel", action_size)
        if not output_max > 0:
            raise ValueError(f"MuMlpModel: output_max={output_max!r} must be positive")
        self.output_max = float(output_max)
        self.mlp = DenseMlp(self._obs_size, hidden_sizes, action_size)

    def forward(self, observation, prev_action=None, prev_reward=None) -> torch.Tensor:
        x, lead_dim, T, B = self._flatten(observation)
        mu = self.output_max * torch.tanh(self.mlp(x))
        return restore_leading_dims(mu, lead_dim, T, B)


class PiMlpModel(_ObservationMlp):
    """Gaussian policy head: ``(mean, log_std)`` of the pre-squash action (SAC).

    The agent's distribution clamps ``log_std`` and applies the tanh squash.

    Args:
        observation_shape: shape of one observation.
        hidden_sizes: hidden layer widths (default ``(256, 256)``).
        action_size: number of action dimensions.
    """

    def __init__(
        self,
        observation_shape,
        hidden_sizes: int | Sequence[int] | None = DEFAULT_HIDDEN,
        action_size: int | None = None,
    ):
        super().__init__(observation_shape)
        self.action_size = _check_action_size("PiMlpModel", action_size)
        self.mlp = DenseMlp(self._obs_size, hidden_sizes, 2 * self.action_size)

    def forward(self, observation, prev_action=None, prev_reward=None):
        x, lead_dim, T, B = self._flatten(observation)
        mean, log_std = self.mlp(x).chunk(2, dim=-1)
        return restore_leading_dims((mean, log_std), lead_dim, T, B)


class QofMuMlpModel(_ObservationMlp):
    """Critic ``Q(s, a)``: an MLP on the concatenated observation and action.

    Args:
        observation_shape: shape of one observation.
        hidden_sizes: hidden layer widths (default ``(256, 256)``).
        action_size: number of action dimensions.
    """

    def __init__(
        self,
        observation_shape,
        hidden_sizes: int | Sequence[int] | None = DEFAULT_HIDDEN,
        action_size: int | None = None,
    ):
        super().__init__(observation_shape)
        action_size = _check_action_size("QofMuMlpModel", action_size)
        self.mlp = DenseMlp(self._obs_size + action_size, hidden_sizes, 1)

    def forward(self, observation, prev_action, prev_reward, action) -> torch.Tensor:
        x, lead_dim, T, B = self._flatten(observation)
        q = self.mlp(torch.cat([x, action.reshape(T * B, -1)], dim=-1)).squeeze(-1)
        return restore_leading_dims(q, lead_dim, T, B)


class TwinQofMuMlpModel(_ObservationMlp):
    """Two independent critics ``(Q1(s, a), Q2(s, a))`` in one module (TD3 and SAC).

    Each critic is a ``QofMuMlpModel``-shaped MLP with its own weights and PyTorch's
    default initialisation.  Both take the same input, so the agent evaluates them with
    one call, trains them with one loss, one backward pass and one optimizer.

    Two layouts compute the same function:

    * ``fused=False`` (default): two ``DenseMlp``s, one after the other.  Fastest on
      CPU, where a 256-wide layer is one efficient matrix product per critic and the
      batched kernels are slower (docs/notes/code_figures.md has the timing).
    * ``fused=True``: stacked weights evaluated as one batched matrix product per layer
      (``rlpyt.models.qpg.ensemble``), half the kernel launches and autograd nodes; for
      GPUs, where launches rather than arithmetic bound these small networks.

    Args:
        observation_shape: shape of one observation.
        hidden_sizes: hidden layer widths, at least one (default ``(256, 256)``).
        action_size: number of action dimensions.
        fused: choose the batched layout (default False).
    """

    n_q = 2

    def __init__(
        self,
        observation_shape,
        hidden_sizes: int | Sequence[int] = DEFAULT_HIDDEN,
        action_size: int | None = None,
        fused: bool = False,
    ):
        super().__init__(observation_shape)
        action_size = _check_action_size("TwinQofMuMlpModel", action_size)
        input_size = self._obs_size + action_size
        self.fused = bool(fused)
        if self.fused:
            self.mlp = EnsembleMlp(self.n_q, input_size, hidden_sizes, 1)
        else:
            self.q1 = DenseMlp(input_size, hidden_sizes, 1)
            self.q2 = DenseMlp(input_size, hidden_sizes, 1)

    def forward(self, observation, prev_action, prev_reward, action):
        x, lead_dim, T, B = self._flatten(observation)
        x = torch.cat([x, action.reshape(T * B, -1)], dim=-1)
        if self.fused:
            q1, q2 = self.mlp(x).squeeze(-1).unbind(0)
        else:
            q1, q2 = self.q1(x).squeeze(-1), self.q2(x).squeeze(-1)
        return restore_leading_dims((q1, q2), lead_dim, T, B)


class VMlpModel(_ObservationMlp):
    """State value ``V(s)``.

    Args:
        observation_shape: shape of one observation.
        hidden_sizes: hidden layer widths (default ``(256, 256)``).
        action_size: accepted for a uniform model signature; unused (default None).
    """

    def __init__(
        self,
        observation_shape,
        hidden_sizes: int | Sequence[int] | None = DEFAULT_HIDDEN,
        action_size: int | None = None,
    ):
        super().__init__(observation_shape)
        self.mlp = DenseMlp(self._obs_size, hidden_sizes, 1)

    def forward(self, observation, prev_action=None, prev_reward=None) -> torch.Tensor:
        x, lead_dim, T, B = self._flatten(observation)
        return restore_leading_dims(self.mlp(x).squeeze(-1), lead_dim, T, B)
