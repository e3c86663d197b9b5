"""An ensemble of equally shaped MLPs evaluated as one batched computation.

``EnsembleMlp`` holds ``n`` independent MLPs with stacked weights.  The first layer,
which sees the same input in every member, is one wide ``Linear``; the later layers
are batched matrix products (``baddbmm``) over the members.  Twin critics (TD3,
SAC) then cost one forward and one backward pass instead of two, which halves the
number of kernel launches and autograd nodes of the update's largest part.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from rlpyt.models.mlp import _as_size_list

__all__ = ["EnsembleLinear", "EnsembleMlp"]


class EnsembleLinear(torch.nn.Module):
    """``n`` independent linear layers applied to ``[n, N, in_features]`` inputs.

    Each member is initialised like ``torch.nn.Linear`` (uniform in
    ``±1/sqrt(in_features)`` for weights and biases).

    Args:
        n: number of members.
        in_features: input width of every member.
        out_features: output width of every member.
    """

    def __init__(self, n: int, in_features: int, out_features: int):
        super().__init__()
        self.n, self.in_features, self.out_features = n, in_features, out_features
        self.weight = torch.nn.Parameter(torch.empty(n, in_features, out_features))
        self.bias = torch.nn.Parameter(torch.empty(n, 1, out_features))
        bound = 1 / math.sqrt(in_features)
        torch.nn.init.uniform_(self.weight, -bound, bound)
        torch.nn.init.uniform_(self.bias, -bound, bound)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``[n, N, in_features] -> [n, N, out_features]``."""
        return torch.baddbmm(self.bias, x, self.weight)

    def extra_repr(self) -> str:
        return f"n={self.n}, in_features={self.in_features}, out_features={self.out_features}"


class EnsembleMlp(torch.nn.Module):
    """``n`` MLPs with the same layer sizes, all fed the same input.

    ``forward(x)`` maps ``[N, input_size]`` to ``[n, N, output_size]``: member ``i``'s
    output is ``out[i]``, exactly what a separate ``MlpModel`` with member ``i``'s
    weights would return.

    Args:
        n: number of members (2 for twin critics).
        input_size: input width.
        hidden_sizes: hidden layer widths (at least one).
        output_size: output width of every member.
        nonlinearity: module class applied after each hidden layer (default ``ReLU``).
    """

    def __init__(
        self,
        n: int,
        input_size: int,
        hidden_sizes: int | Sequence[int],
        output_size: int,
        nonlinearity: type[torch.nn.Module] = torch.nn.ReLU,
    ):
        super().__init__()
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"EnsembleMlp: n={n!r} must be a positive int")
        hidden_sizes = _as_size_list(hidden_sizes, "hidden_sizes")
        if not hidden_sizes:
            raise ValueError("EnsembleMlp: hidden_sizes must name at least one hidden layer")
        self.n = n
        self.first = torch.nn.Linear(input_size, n * hidden_sizes[0])
        sizes = hidden_sizes + [output_size]
        self.layers = torch.nn.ModuleList(
            EnsembleLinear(n, size_in, size_out) for size_in, size_out in zip(sizes, sizes[1:])
        )
        self.nonlinearity = nonlinearity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        N = x.shape[0]
        h = self.nonlinearity(self.first(x))
        h = h.view(N, self.n, -1).transpose(0, 1)  # [n, N, hidden]: member-major view
        for i, layer in enumerate(self.layers):
            h = layer(h)
            if i < len(self.layers) - 1:
                h = self.nonlinearity(h)
        return h

    def member_state_dict(self, i: int) -> dict[str, torch.Tensor]:
        """Member ``i``'s weights as the state dict of an equivalent ``MlpModel``
        (keys ``model.0.weight``, ``model.0.bias``, ``model.2.weight``, ...)."""
        hidden0 = self.first.out_features // self.n
        rows = slice(i * hidden0, (i + 1) * hidden0)
        state = {"model.0.weight": self.first.weight[rows], "model.0.bias": self.first.bias[rows]}
        for k, layer in enumerate(self.layers, start=1):
            state[f"model.{2 * k}.weight"] = layer.weight[i].t()
            state[f"model.{2 * k}.bias"] = layer.bias[i, 0]
        return {key: value.detach().clone() for key, value in state.items()}
