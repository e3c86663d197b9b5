"""Optimizer mechanics shared by every algorithm family: construction, backward,
gradient clipping and Adam steps, with low overhead for many small updates.

A classic-control agent takes thousands of gradient steps on a network of a few
thousand weights, where the Python around each torch call costs as much as the
arithmetic.  Shortcuts through torch's private entry points are kept only where they
pay end to end (>= 10% of a benchmark's steps per CPU-second, shortcut on vs off in
alternating runs, medians of 3 pairs on the shared 2-core machine):

- the direct fused Adam step (``FusedAdamStep``, ``torch._fused_adam_``): 1.36x on
  ``bench/pg_cartpole.py`` PPO (per pair 1.36, 1.40, 1.11), 1.20x on ``bench/dqn.py``
  (1.20, 1.19, 1.44): kept for the PG and DQN families; 1.08x on ``bench/sac.py``
  (batch-256 updates dwarf the overhead), so DDPG/TD3/SAC step through the public
  ``optimizer.step()``;
- the direct call of the autograd engine for ``backward``: 1.00x PPO, 0.94x A2C,
  1.02x DQN: dropped, ``loss.backward()``;
- the direct foreach RMSprop step: 0.93x on A2C (RMSprop): dropped,
  ``RMSprop(foreach=True).step()``.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence

import torch
from torch.optim import optimizer as _optimizer_module

__all__ = [
    "DirectOptimizerStep",
    "FusedAdamStep",
    "backward",
    "clip_grad_norm",
    "clip_grad_norms",
    "direct_step_for",
    "make_optimizer",
]

# Optimizers whose fused kernel (one call for all parameters) we use unless told otherwise.
_FUSABLE = (torch.optim.Adam, torch.optim.AdamW)

# Clipping is skipped when the norm is below max_norm by more than this relative margin:
# there ``max_norm / (norm + 1e-6)`` is above 1 and clamped to 1, a multiplication by one.
_CLIP_MARGIN = 1e-4


def backward(loss: torch.Tensor) -> None:
    """``loss.backward()``.  The name stays for the families that call it; handing the
    loss straight to the autograd engine measured no faster end to end (see above)."""
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
    total = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads)))
    if max_norm is None:
        return total
    if total.device.type == "cpu" and float(total) < max_norm * (1 - _CLIP_MARGIN):
        return total
    torch._foreach_mul_(grads, (max_norm / (total + 1e-6)).clamp_(max=1.0))
    return total


class DirectOptimizerStep:
    """Base of ``FusedAdamStep``: call the optimizer's own
    kernels on cached lists of its parameters and state, and fall back to each
    ``optimizer.step()`` whenever that would do something else: before the state is
    initialized (the first step), when a parameter has no gradient, with step hooks, with
    a grad scaler's ``grad_scale`` / ``found_inf``, or with options the subclass does not
    handle (``_group_ok``).  Hyperparameters are read from the param groups at every call
    (so learning-rate schedules still apply), and each optimizer's ``state_dict`` stays
    the one source of truth.  The per-parameter step counters are made views of one
    tensor per group, so that counting a step is one call (on CPU a "foreach" add loops
    over the tensors one call each).
    """

    kind = "optimizer"

    def __init__(self, optimizers: torch.optim.Optimizer | Sequence[torch.optim.Optimizer]):
        if isinstance(optimizers, torch.optim.Optimizer):
            optimizers = [optimizers]
        self.optimizers = list(optimizers)
        for optimizer in self.optimizers:
            if not self.applies(optimizer):
                raise ValueError(f"{type(self).__name__} needs {self.kind} optimizers, "
                                 f"got {optimizer!r}")
        self._key = None  # Identity of the state the cached tensor lists belong to.
        self._groups: list[tuple] = []

    @classmethod
    def applies(cls, optimizer: torch.optim.Optimizer) -> bool:
        raise NotImplementedError

    @classmethod
    def for_optimizers(cls, *optimizers: torch.optim.Optimizer):
        """An instance over ``optimizers`` if every one qualifies, else None."""
        return cls(optimizers) if all(cls.applies(o) for o in optimizers) else None

    @torch.no_grad()
    def step(self) -> None:
        """One update of every parameter from its ``.grad``."""
        self.step_no_grad()

    def step_no_grad(self) -> None:
        """``step`` for callers already in ``torch.no_grad()``."""
        if not self._fast_path_ok():
            for optimizer in self.optimizers:
                optimizer.step()
            return
        for cached in self._groups:
            cached[-1].add_(1)  # Every parameter's step counter (views of one tensor).
            self._update(*cached)

    def _update(self, group: dict, params: list, *state) -> None:
        raise NotImplementedError

    def _state_tensors(self, group: dict, states: list[dict]) -> tuple | None:
        """The group's state tensor lists in ``_update``'s order (None: not handled)."""
        raise NotImplementedError

    def _key_matches(self) -> bool:
        key = self._key
        return key is not None and all(
            a is o.state and b is o.param_groups and n == len(o.param_groups)
            for (a, b, n), o in zip(key, self.optimizers)
        )

    def _fast_path_ok(self) -> bool:
        if _optimizer_module._global_optimizer_pre_hooks or \
                _optimizer_module._global_optimizer_post_hooks:
            return False
        for opt in self.optimizers:
            if (opt._optimizer_step_pre_hooks or opt._optimizer_step_post_hooks
                    or getattr(opt, "grad_scale", None) is not None
                    or getattr(opt, "found_inf", None) is not None):
                return False
        if not self._key_matches() and not self._cache_state():
            return False
        for group in self._groups:
            for p in group[1]:
                if p.grad is None:
                    return False
        return True

    def _cache_state(self) -> bool:
        """Collect each group's parameters and state tensors; False if any state is missing
        (not stepped yet, so that ``step()`` initializes it) or not handled here."""
        groups = []
        self._key = None
        for opt in self.optimizers:
            for group in opt.param_groups:
                params = list(group["params"])
                states = [opt.state.get(p) for p in params]
                if any(not s or "step" not in s for s in states):
                    return False
                if len({(p.device, p.dtype) for p in params}) != 1:
                    return False  # step() groups such parameters by device itself.
                tensors = self._state_tensors(group, states)
                if tensors is None:
                    return False
                all_steps = torch.stack([s["step"] for s in states])
                for i, s in enumerate(states):
                    s["step"] = all_steps[i]
                groups.append((group, params, *tensors, [s["step"] for s in states],
                               all_steps))
        self._groups = groups
        self._key = [(o.state, o.param_groups, len(o.param_groups)) for o in self.optimizers]
        return True


class FusedAdamStep(DirectOptimizerStep):
    """``optimizer.step()`` for fused ``torch.optim.Adam`` / ``AdamW`` optimizers, minus
    the overhead.

    Calls ``torch._fused_adam_`` (``_fused_adamw_``) on the optimizers' parameters and
    state as ``Adam.step`` does for ``fused=True``: the same update.  Several optimizers
    (SAC's policy, critic and temperature) are stepped together, one kernel call per
    param group.  Falls back to ``optimizer.step()`` as described in ``DirectOptimizerStep``.

    Args:
        optimizers: the optimizer, or a sequence of optimizers, to step together (each
            must satisfy ``applies``).
    """

    kind = "fused torch.optim.Adam or AdamW"

    @classmethod
    def applies(cls, optimizer: torch.optim.Optimizer) -> bool:
        """True for Adam/AdamW with ``fused=True`` (and not ``differentiable``) in every
        group, when this torch has the fused kernels."""
        if type(optimizer) not in _FUSABLE:
            return False
        if not (hasattr(torch, "_fused_adam_") and hasattr(torch, "_fused_adamw_")):
            return False
        return all(g.get("fused") and not g.get("differentiable") for g in optimizer.param_groups)

    def _state_tensors(self, group, states):
        if any("exp_avg" not in s for s in states):
            return None
        max_sqs = [s["max_exp_avg_sq"] for s in states] if group["amsgrad"] else []
        return [s["exp_avg"] for s in states], [s["exp_avg_sq"] for s in states], max_sqs

    def _update(self, group, params, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, _):
        beta1, beta2 = group["betas"]
        kernel = (torch._fused_adamw_ if group.get("decoupled_weight_decay", False)
                  else torch._fused_adam_)
        kernel(params, [p.grad for p in params], exp_avgs, exp_avg_sqs, max_exp_avg_sqs,
               steps, amsgrad=group["amsgrad"], lr=group["lr"], beta1=float(beta1),
               beta2=float(beta2), weight_decay=group["weight_decay"], eps=group["eps"],
               maximize=group["maximize"], grad_scale=None, found_inf=None)


def direct_step_for(*optimizers: torch.optim.Optimizer) -> DirectOptimizerStep | None:
    """A ``FusedAdamStep`` over ``optimizers`` when it handles all of them, else None
    (use each ``optimizer.step()``)."""
    return FusedAdamStep.for_optimizers(*optimizers)


def make_optimizer(OptimCls, params, lr: float, optim_kwargs: dict | None = None):
    """``OptimCls(params, lr=lr, **optim_kwargs)``, fused or multi-tensor where that is the
    same update.

    Adam and AdamW get ``fused=True`` (a single kernel for all parameters, about 3x
    faster per step for the small models of classic control on CPU); other torch
    optimizers with a ``foreach`` keyword (RMSprop, SGD, ...) get ``foreach=True``,
    which torch picks by itself only on CUDA (on CPU it computes the same update as
    the default per-parameter loop, with fewer calls).  Either is skipped when
    ``optim_kwargs`` chooses ``fused``, ``foreach`` or ``differentiable`` itself.
    """
    kwargs = dict(optim_kwargs or {})
    params = list(params)
    chosen = {"fused", "foreach", "differentiable"} & set(kwargs)
    plain_params = all(
        p.device.type in ("cpu", "cuda") and p.dtype.is_floating_point for p in params
    )
    if isinstance(OptimCls, type) and not chosen and plain_params:
        if issubclass(OptimCls, _FUSABLE):
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
    squares = torch.stack(torch._foreach_norm(grads)).square()
    norms = squares.new_zeros(len(groups)).index_add_(0, owner, squares).sqrt()
    skip = max_norm is None or (  # on CPU, reading the norm back is free
        norms.device.type == "cpu" and float(norms.max()) < max_norm * (1 - _CLIP_MARGIN)
    )
    if not skip:  # (SAC's default max_norm of 1e9 never clips: the factor would be 1)
        scale = (max_norm / (norms + 1e-6)).clamp(max=1.0)
        torch._foreach_mul_(grads, list(scale[owner].unbind()))
    return list(norms.unbind())


_OWNER_INDEX: dict[tuple, torch.Tensor] = {}


def _owner_index(owners: tuple[int, ...], device: torch.device) -> torch.Tensor:
    """``owners`` as an index tensor, built once per layout (a tensor creation per
    update costs more than the norms it indexes)."""
    key = (owners, device)
    if key not in _OWNER_INDEX:
        _OWNER_INDEX[key] = torch.tensor(owners, device=device)
    return _OWNER_INDEX[key]
