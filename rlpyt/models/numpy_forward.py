"""Small MLPs evaluated in numpy, for the sampler's per-step forward passes on the CPU.

A sampler asks the policy about a few envs at a time.  At those sizes a torch op costs
several microseconds of dispatch and allocation and a numpy op about one, so the default
actor-critic MLPs answer several times faster in numpy (their ``forward_numpy``).
Training always runs the torch forward.

``mlp_numpy(mlp, x)`` computes ``mlp(x)`` for an ``MlpModel`` of ``Linear`` layers with
``Tanh`` or ``ReLU`` between them, on numpy views of the live parameters (an optimizer
step shows in the next call; a parameter that is replaced or moved is picked up), equal
to the torch forward up to float rounding.  It returns None, and the caller uses torch,
whenever it cannot be sure of computing the same function cheaply: another module type,
hooks, parameters that are not float32 CPU tensors, an input that is not a float32
matrix, or a product beyond ``MAX_ROWS_IN_OUT`` / ``MAX_IN_OUT``.  Larger products gain
nothing from numpy, and staying under these sizes keeps numpy's BLAS from starting
threads of its own next to torch's.
"""

from __future__ import annotations

import numpy as np
import torch

from rlpyt.models.mlp import MlpModel, _has_hooks

__all__ = ["MAX_IN_OUT", "MAX_ROWS_IN_OUT", "mlp_numpy"]

# Largest ``rows * in * out`` of a product and ``in * out`` of a weight run in numpy.
MAX_ROWS_IN_OUT = 65_536
MAX_IN_OUT = 8_192


def _tanh(x: np.ndarray) -> None:
    np.tanh(x, out=x)


def _relu(x: np.ndarray) -> None:
    np.maximum(x, 0, out=x)


_ACTIVATIONS = {torch.nn.Tanh: _tanh, torch.nn.ReLU: _relu}


class _Plan:
    """numpy views of one MLP's layers, with what they were built from."""

    __slots__ = ("modules", "checks", "layers", "max_in_out")

    def __init__(self, modules, checks, layers):
        self.modules = modules  # the layer modules, by identity
        self.checks = checks  # (parameter dict, name, tensor, data_ptr) of every parameter
        self.layers = layers  # (weight.T view, bias view or None, activation or None)
        self.max_in_out = max((w.shape[0] * w.shape[1] for w, _, _ in layers), default=0)

    def current(self, modules: tuple) -> bool:
        if modules != self.modules:
            return False
        for params, name, tensor, ptr in self.checks:
            if params.get(name) is not tensor or tensor.data_ptr() != ptr:
                return False
        return True


def _numpy_view(tensor: torch.Tensor | None):
    if tensor is None:
        return None
    if tensor.device.type != "cpu" or tensor.dtype != torch.float32:
        raise TypeError
    return tensor.detach().numpy()


def _build_plan(modules: tuple) -> _Plan | None:
    checks, layers = [], []
    for module in modules:
        if type(module) is torch.nn.Linear:
            params = module._parameters
            try:
                weight, bias = _numpy_view(params["weight"]), _numpy_view(params["bias"])
            except TypeError:
                return None
            checks += [(params, name, params[name], params[name].data_ptr())
                       for name in ("weight", "bias") if params[name] is not None]
            layers.append([weight.T, bias, None])
        elif type(module) in _ACTIVATIONS and layers and layers[-1][2] is None:
            layers[-1][2] = _ACTIVATIONS[type(module)]
        else:
            return None  # another layer type, or an activation without a layer before it
    return _Plan(modules, checks, [tuple(layer) for layer in layers])


def mlp_numpy(mlp: torch.nn.Module, x: np.ndarray) -> np.ndarray | None:
    """``mlp(x)`` for a float32 ``[rows, in]`` numpy ``x``, computed in numpy; None when
    this cannot be done (see the module doc): then call ``mlp`` itself."""
    if type(mlp) is not MlpModel or _has_hooks(mlp) or x.dtype != np.float32 or x.ndim != 2:
        return None
    modules = tuple(mlp.model._modules.values())
    for module in modules:
        if _has_hooks(module):
            return None
    plan = mlp.__dict__.get("_numpy_plan")
    if plan is None or not plan.current(modules):
        plan = _build_plan(modules)
        if plan is None:
            return None
        mlp.__dict__["_numpy_plan"] = plan
    if plan.max_in_out > MAX_IN_OUT or x.shape[0] * plan.max_in_out > MAX_ROWS_IN_OUT:
        return None
    for weight_t, bias, activation in plan.layers:
        x = x @ weight_t
        if bias is not None:
            x += bias
        if activation is not None:
            activation(x)
    return x
