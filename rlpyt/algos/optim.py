"""Optimizer mechanics shared by every algorithm family: construction, backward,
gradient clipping and optimizer steps, with low overhead for many small updates.

The public API: ``make_optimizer`` (fused Adam, multi-tensor others), ``backward``,
``clip_grad_norm`` and ``clip_grad_norms`` (gradient clipping in a few fused calls), and
the direct optimizer steps ``FusedAdamStep``, ``CompiledRmspropStep`` and
``direct_step_for``, which live in ``rlpyt.algos.optim_fast`` with the private torch
names they read (and fall back from, should torch rename one).
"""

from __future__ import annotations

import inspect

import torch

from rlpyt.algos.optim_fast import (
    COMPILE_MIN_WORK,
    FUSABLE,
    CompiledRmspropStep,
    DirectOptimizerStep,
    FusedAdamStep,
    direct_step_for,
    foreach_mul_,
    foreach_norms,
)

__all__ = [
    "COMPILE_MIN_WORK",
    "CompiledRmspropStep",
    "DirectOptimizerStep",
    "FusedAdamStep",
    "backward",
    "clip_grad_norm",
    "clip_grad_norms",
    "direct_step_for",
    "make_optimizer",
]

# Clipping is skipped when the norm is below max_norm by more than this relative margin:
# there ``max_norm / (norm + 1e-6)`` is above 1 and clamped to 1, a multiplication by one.
_CLIP_MARGIN = 1e-4


def backward(loss: torch.Tensor) -> None:
    """``loss.backward()``.  The name stays for the families that call it; the call is the
    public one because handing the loss straight to the autograd engine gains nothing end
    to end (docs/algorithms.md has the figures)."""
    loss.backward()


@torch.no_grad()
def clip_grad_norm(params: list[torch.Tensor], max_norm: float | None) -> torch.Tensor:
    """Scale the gradients of ``params`` in place so their joint L2 norm is at most
    ``max_norm`` (``None``: no clipping); returns the norm before clipping.

    The arithmetic of ``torch.nn.utils.clip_grad_norm_`` (per-tensor norms, their norm,
    factor ``min(max_norm / (norm + 1e-6), 1)``) in a few fused calls.  On CPU the
    scaling is skipped when the norm is clearly below ``max_norm`` (the factor is then
    exactly 1); on other devices it always runs, to avoid a host sync.
    """
    return clip_grad_norm_no_grad(params, max_norm)


def clip_grad_norm_no_grad(params: list[torch.Tensor], max_norm: float | None) -> torch.Tensor:
    """``clip_grad_norm`` for callers already in ``torch.no_grad()``."""
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return torch.zeros(())
    first = grads[0]
    if any(g.device != first.device or g.dtype != first.dtype for g in grads):
        limit = float("inf") if max_norm is None else max_norm
        return torch.nn.utils.clip_grad_norm_(params, limit)  # it groups them itself
    total = torch.linalg.vector_norm(torch.stack(foreach_norms(grads)))
    if max_norm is None:
        return total
    if total.device.type == "cpu" and float(total) < max_norm * (1 - _CLIP_MARGIN):
        return total
    foreach_mul_(grads, (max_norm / (total + 1e-6)).clamp_(max=1.0))
    return total


def make_optimizer(OptimCls, params, lr: float, optim_kwargs: dict | None = None):
    """``OptimCls(params, lr=lr, **optim_kwargs)``, fused or multi-tensor where that is the
    same update.

    Adam and AdamW get ``fused=True`` (a single kernel for all parameters, several times
    faster per step for the small models of classic control on CPU; the figure is in
    docs/notes/code_figures.md); other torch optimizers with a ``foreach`` keyword
    (RMSprop, SGD, ...) get ``foreach=True``, which torch picks by itself only on CUDA
    (on CPU it computes the same update as the default per-parameter loop, with fewer
    calls).  Either is skipped when ``optim_kwargs`` chooses ``fused``, ``foreach`` or
    ``differentiable`` itself.
    """
    kwargs = dict(optim_kwargs or {})
    params = list(params)
    chosen = {"fused", "foreach", "differentiable"} & set(kwargs)
    plain_params = all(
        p.device.type in ("cpu", "cuda") and p.dtype.is_floating_point for p in params
    )
    if isinstance(OptimCls, type) and not chosen and plain_params:
        if issubclass(OptimCls, FUSABLE):
            kwargs["fused"] = True
        elif "foreach" in inspect.signature(OptimCls.__init__).parameters:
            kwargs["foreach"] = True
    return OptimCls(params, lr=lr, **kwargs)


def clip_grad_norms(
    groups: list[list[torch.Tensor]], max_norm: float | None
) -> list[torch.Tensor]:
    """``torch.nn.utils.clip_grad_norm_`` applied to each parameter group separately, with
    all groups' norms and rescalings done in a few fused ops and no device sync.

    Returns each group's total gradient norm before clipping (0-dim tensors).  Every
    gradient of a group is multiplied by ``min(1, max_norm / (norm + 1e-6))``; with
    ``max_norm=None`` nothing is rescaled, and on CPU neither when every group's norm is
    clearly below ``max_norm`` (the factor is then exactly 1).
    """
    grads, owners = [], []
    for i, params in enumerate(groups):
        for p in params:
            if p.grad is not None:
                grads.append(p.grad)
                owners.append(i)
    if not grads:
        return [torch.zeros(()) for _ in groups]
    owner = _owner_index(tuple(owners), grads[0].device)
    squares = torch.stack(foreach_norms(grads)).square()
    norms = squares.new_zeros(len(groups)).index_add_(0, owner, squares).sqrt()
    skip = max_norm is None or (  # on CPU, reading the norm back is free
        norms.device.type == "cpu" and float(norms.max()) < max_norm * (1 - _CLIP_MARGIN)
    )
    if not skip:  # (SAC's default max_norm of 1e9 never clips: the factor would be 1)
        scale = (max_norm / (norms + 1e-6)).clamp(max=1.0)
        foreach_mul_(grads, list(scale[owner].unbind()))
    return list(norms.unbind())


_OWNER_INDEX: dict[tuple, torch.Tensor] = {}


def _owner_index(owners: tuple[int, ...], device: torch.device) -> torch.Tensor:
    """``owners`` as an index tensor, built once per layout (a tensor creation per
    update costs more than the norms it indexes)."""
    key = (owners, device)
    if key not in _OWNER_INDEX:
        _OWNER_INDEX[key] = torch.tensor(owners, device=device)
    return _OWNER_INDEX[key]
