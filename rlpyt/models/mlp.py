"""Multi-layer perceptron: the fully connected building block of most models."""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F


def _as_size_list(sizes: int | Sequence[int] | None, name: str) -> list[int]:
    """Accept ``None``, one int or a sequence of ints; validate every entry."""
    if sizes is None:
        return []
    as_list = [sizes] if isinstance(sizes, int) else list(sizes)
    # A string is refused whole (and shown as given), not read as a list of characters.
    if isinstance(sizes, str) or not all(
            isinstance(size, int) and not isinstance(size, bool) and size >= 1
            for size in as_list):
        raise ValueError(f"{name} must be a positive int or a sequence of positive ints, "
                         f"got {sizes!r}")
    return as_list


def has_hooks(module: torch.nn.Module) -> bool:
    """Whether ``module`` itself carries forward or backward hooks (which a direct call
    of its layers or methods would skip)."""
    return bool(
        module._forward_pre_hooks
        or module._forward_hooks
        or module._backward_pre_hooks
        or module._backward_hooks
    )


# Activations that run in place on a tensor the MLP itself just made.
_IN_PLACE = {
    torch.nn.Tanh: torch.Tensor.tanh_,
    torch.nn.ReLU: torch.Tensor.relu_,
    torch.nn.Sigmoid: torch.Tensor.sigmoid_,
}


def run_layers(sequential: torch.nn.Sequential, x: torch.Tensor) -> torch.Tensor:
    """``sequential(x)``, with less Python per layer for the small MLPs of classic control.

    At sampling batch sizes the dispatch around each torch call costs more than its
    arithmetic, so each layer skips ``nn.Module.__call__``: a plain ``Linear`` calls
    ``F.linear`` on its current parameters, and a ``Tanh``/``ReLU``/``Sigmoid`` right after
    one, outside autograd, overwrites that fresh output in place instead of allocating
    another tensor (the same values).  Any layer carrying hooks goes through ``__call__``
    (and its output is never overwritten, since a hook may keep it); other layer types,
    subclasses included, run their own ``forward``.
    """
    fresh = False  # x was made here, and nothing else holds it
    for layer in sequential._modules.values():
        if has_hooks(layer):
            x, fresh = layer(x), False
            continue
        kind = type(layer)
        if kind is torch.nn.Linear:
            params = layer._parameters
            x, fresh = F.linear(x, params["weight"], params["bias"]), True
        elif fresh and kind in _IN_PLACE and not x.requires_grad:
            x = _IN_PLACE[kind](x)
        else:
            x, fresh = layer.forward(x), False
    return x


def run_mlp(module: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    """``module(x)``; an ``MlpModel`` without hooks also skips its own
    ``nn.Module.__call__`` (its layers run by ``run_layers``, which reads the current
    layers and parameters at every call)."""
    if type(module) is not MlpModel or has_hooks(module):
        return module(x)
    return run_layers(module._modules["model"], x)


class MlpModel(torch.nn.Module):
    """Linear layers with a nonlinearity after every hidden layer.

    Works on inputs with any leading dims: ``[..., input_size] -> [..., output_size]``.

    Args:
        input_size: number of input features.
        hidden_sizes: width of each hidden layer; an int for one layer, a sequence for several,
            ``None`` or ``[]`` for none (then the model is one linear layer, or the identity if
            ``output_size`` is also ``None``).
        output_size: width of a final linear layer without a nonlinearity. ``None`` (default)
            leaves it out, so the output is the last hidden layer's activations.
        nonlinearity: module class applied after each hidden layer (default ``torch.nn.ReLU``).
    """

    def __init__(
        self,
        input_size: int,
        hidden_sizes: int | Sequence[int] | None,
        output_size: int | None = None,
        nonlinearity: type[torch.nn.Module] = torch.nn.ReLU,
    ):
        super().__init__()
        if not isinstance(input_size, int) or input_size < 1:
            raise ValueError(f"input_size must be a positive int, got {input_size!r}")
        hidden_sizes = _as_size_list(hidden_sizes, "hidden_sizes")
        if output_size is not None:
            _as_size_list(output_size, "output_size")
        layers: list[torch.nn.Module] = []
        last_size = input_size
        for size in hidden_sizes:
            layers += [torch.nn.Linear(last_size, size), nonlinearity()]
            last_size = size
        if output_size is not None:
            layers.append(torch.nn.Linear(last_size, output_size))
            last_size = output_size
        self.model = torch.nn.Sequential(*layers)
        self._output_size = last_size

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return run_layers(self._modules["model"], input)

    @property
    def output_size(self) -> int:
        """Width of the output: ``output_size`` if given, else the last hidden size."""
        return self._output_size
