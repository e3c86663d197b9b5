"""Helpers for model parameters: target-network updates, DDP state dicts, gradient scaling,
cheap train/eval switches."""

from __future__ import annotations

import math
import weakref
from collections.abc import Mapping

import torch

DDP_PREFIX = "module."


def strip_ddp_state_dict(state_dict: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Copy of ``state_dict`` with the ``"module."`` key prefixes that (Distributed)DataParallel
    adds removed (nested wrappers are unwrapped fully), so it loads into an unwrapped model."""
    stripped = {}
    for key, value in state_dict.items():
        while key.startswith(DDP_PREFIX):
            key = key[len(DDP_PREFIX) :]
        stripped[key] = value
    return stripped


def unwrap_parallel(model: torch.nn.Module) -> torch.nn.Module:
    """The module inside any (Distributed)DataParallel wrappers of ``model``."""
    while isinstance(
        model, (torch.nn.parallel.DistributedDataParallel, torch.nn.parallel.DataParallel)
    ):
        model = model.module
    return model


@torch.no_grad()
def update_state_dict(
    model: torch.nn.Module,
    state_dict: Mapping[str, torch.Tensor],
    tau: float = 1,
    strip_ddp: bool = True,
) -> None:
    """Move ``model``'s parameters and buffers toward ``state_dict``, in place.

    ``tau=1`` copies (``load_state_dict``); ``0 <= tau < 1`` is a soft (Polyak) update
    ``new = tau * source + (1 - tau) * old`` of every floating-point entry
    (``polyak_update_``); integer entries (e.g. counters) are copied.

    Args:
        model: the module to update (e.g. a target network); may be DDP-wrapped.
        state_dict: source values, with the same keys as ``model.state_dict()``.
        tau: interpolation weight of the source, in ``[0, 1]`` (default 1: hard copy).
        strip_ddp: remove ``"module."`` prefixes from ``state_dict`` keys first (default True),
            so a state dict from a DDP-wrapped model updates a plain one.
    """
    if not 0 <= tau <= 1:
        raise ValueError(f"tau must be in [0, 1], got {tau}")
    if strip_ddp:
        state_dict = strip_ddp_state_dict(state_dict)
        model = unwrap_parallel(model)
    if tau == 1:
        model.load_state_dict(state_dict)
        return
    target = model.state_dict()
    missing = sorted(set(target) - set(state_dict))
    unexpected = sorted(set(state_dict) - set(target))
    if missing or unexpected:
        raise KeyError(
            f"update_state_dict: keys differ from the model's; missing {missing}, "
            f"unexpected {unexpected}"
        )
    float_targets, float_sources = [], []
    for key, old in target.items():
        new = state_dict[key]
        if old.is_floating_point():
            float_targets.append(old)
            float_sources.append(new.to(device=old.device, dtype=old.dtype))
        else:
            old.copy_(new)
    polyak_update_(float_targets, float_sources, tau)


def polyak_update_(targets: list[torch.Tensor], sources: list[torch.Tensor],
                   tau: float) -> None:
    """``target <- tau * source + (1 - tau) * target`` for each pair, in place.

    Public ``lerp_`` per tensor: torch's fused ``_foreach_lerp_`` is a private name that
    any torch release may rename or drop, and the target networks here hold only a
    handful of tensors each, so one fused call would replace only a few small ones.
    """
    with torch.no_grad():
        for target, source in zip(targets, sources, strict=True):
            target.lerp_(source, tau)


def orthogonal_init_(layer: torch.nn.Linear, gain: float = math.sqrt(2)) -> torch.nn.Linear:
    """Orthogonal weights scaled by ``gain`` and zero biases (the PPO convention); returns it."""
    torch.nn.init.orthogonal_(layer.weight, gain=gain)
    if layer.bias is not None:
        torch.nn.init.zeros_(layer.bias)
    return layer


def orthogonal_init_lstm_(lstm: torch.nn.LSTM, gain: float = 1.0) -> torch.nn.LSTM:
    """Orthogonal weights (each stacked-gates matrix as a whole, as OpenAI baselines and
    CleanRL do) scaled by ``gain``, and zero biases; returns it."""
    for name, param in lstm.named_parameters():
        if name.startswith("weight"):
            torch.nn.init.orthogonal_(param, gain=gain)
        else:
            torch.nn.init.zeros_(param)
    return lstm


class ScaleGradient(torch.autograd.Function):
    """Identity in the forward pass; multiplies the gradient by ``scale`` in the backward."""

    @staticmethod
    def forward(ctx, tensor: torch.Tensor, scale: float) -> torch.Tensor:
        ctx.scale = scale
        return tensor.view_as(tensor)

    @staticmethod
    def backward(ctx, grad_output: torch.Tensor):
        return grad_output * ctx.scale, None


def scale_grad(tensor: torch.Tensor, scale: float) -> torch.Tensor:
    """``tensor`` unchanged, but gradients flowing back through it are scaled by ``scale``
    (e.g. ``2 ** -0.5`` where two dueling heads share a trunk)."""
    return ScaleGradient.apply(tensor, scale)


# model -> [(submodule, its children)] with None standing for the model itself (so that
# the entry holds no reference to its key), or None where a module customises train().
_MODULE_TREES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def set_train_mode(model: torch.nn.Module, mode: bool) -> None:
    """``model.train(mode)``: set ``training`` on ``model`` and every submodule.

    Agents switch modes twice per sampler batch; ``Module.train`` spends tens of
    microseconds on ``Module.__setattr__`` and the recursive walk.  This sets the flag
    directly on a cached list of the modules, re-walking whenever any module's children
    changed, and calls ``model.train(mode)`` itself if any module overrides ``train``
    or ``__setattr__`` (as scripted and data-parallel wrappers may).
    """
    tree = _MODULE_TREES.get(model, False)
    if tree is False or (tree is not None and _children_changed(model, tree)):
        tree = _MODULE_TREES[model] = _module_tree(model)
    if tree is None:
        model.train(mode)
        return
    for module, _ in tree:
        object.__setattr__(model if module is None else module, "training", mode)


def _children_changed(model: torch.nn.Module, tree: list) -> bool:
    for module, children in tree:
        module = model if module is None else module
        if tuple(module._modules.values()) != children:
            return True
    return False


def _module_tree(model: torch.nn.Module) -> list | None:
    tree = []
    for module in model.modules():
        cls = type(module)
        if (cls.train is not torch.nn.Module.train
                or cls.__setattr__ is not torch.nn.Module.__setattr__):
            return None
        tree.append((None if module is model else module, tuple(module._modules.values())))
    return tree
