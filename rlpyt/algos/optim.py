"""Optimizer mechanics shared by every algorithm family: construction, backward,
gradient clipping and optimizer steps, with low overhead for many small updates.

A classic-control agent takes thousands of gradient steps on a network of a few
thousand weights, where the Python around each torch call costs as much as the
arithmetic.  Two steps therefore go around ``optimizer.step()``: ``FusedAdamStep`` calls
torch's fused Adam kernel directly (the PG and DQN families), and ``CompiledRmspropStep``
runs RMSprop's update compiled by ``torch.compile`` (long MinAtar DQN runs).  Both read
private torch names, which any torch release may rename or drop, so each is here only
because it gains clearly end to end; the figures that earned each, the bar they had to
pass, and the shortcuts dropped for falling short, are in docs/algorithms.md (Optimizer
mechanics) and docs/notes/minatar_frame_cost.md.  Each private name is looked up when
used (``_private``): on a torch that renamed or dropped one, the steps fall back to the
public ``optimizer.step()`` and the clipping helpers to per-tensor ops, with the same
update.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Sequence

import torch
from torch.optim import optimizer as _optimizer_module

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

# Optimizers whose fused kernel (one call for all parameters) we use unless told otherwise.
_FUSABLE = (torch.optim.Adam, torch.optim.AdamW)

# The private torch names this module uses, by role: (owner, attribute).  Looked up at
# each use, so that a torch without one takes the public path instead of failing.
_PRIVATE = {
    "global_step_pre_hooks": (_optimizer_module, "_global_optimizer_pre_hooks"),
    "global_step_post_hooks": (_optimizer_module, "_global_optimizer_post_hooks"),
    "fused_adam": (torch, "_fused_adam_"),
    "fused_adamw": (torch, "_fused_adamw_"),
    "foreach_norm": (torch, "_foreach_norm"),
    "foreach_mul_": (torch, "_foreach_mul_"),
}
# Each optimizer's own step-hook registries (instance attributes, also private).
_OPTIMIZER_STEP_HOOKS = ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks")


def _private(role: str):
    """The private torch object of ``role`` (see ``_PRIVATE``), or None if this torch
    lacks it."""
    owner, name = _PRIVATE[role]
    return getattr(owner, name, None)


def _step_hooks_state(optimizers) -> bool | None:
    """Whether a step hook is registered, globally or on one of ``optimizers``; None when
    this torch keeps its hook registries under other names (a direct step must then not
    run: it would skip hooks it cannot see)."""
    registries = [_private("global_step_pre_hooks"), _private("global_step_post_hooks")]
    for optimizer in optimizers:
        registries += [getattr(optimizer, name, None) for name in _OPTIMIZER_STEP_HOOKS]
    if any(registry is None for registry in registries):
        return None
    return any(registries)


def _foreach_norms(tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    """The L2 norm of each tensor: one foreach call where torch has it, else one
    ``vector_norm`` per tensor (on CPU the same numbers: the foreach op loops likewise)."""
    foreach_norm = _private("foreach_norm")
    if foreach_norm is not None:
        return list(foreach_norm(tensors))
    return [torch.linalg.vector_norm(t) for t in tensors]


def _foreach_mul_(tensors: list[torch.Tensor], factors) -> None:
    """``tensors[i] *= factors[i]`` in place (``factors``: a tensor for all, or a list)."""
    foreach_mul_ = _private("foreach_mul_")
    if foreach_mul_ is not None:
        foreach_mul_(tensors, factors)
        return
    if isinstance(factors, torch.Tensor):
        factors = [factors] * len(tensors)
    for tensor, factor in zip(tensors, factors):
        tensor.mul_(factor)


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
    total = torch.linalg.vector_norm(torch.stack(_foreach_norms(grads)))
    if max_norm is None:
        return total
    if total.device.type == "cpu" and float(total) < max_norm * (1 - _CLIP_MARGIN):
        return total
    _foreach_mul_(grads, (max_norm / (total + 1e-6)).clamp_(max=1.0))
    return total


class DirectOptimizerStep:
    """Base of ``FusedAdamStep`` and ``CompiledRmspropStep``: call the optimizer's own
    kernels on cached lists of its parameters and state, and fall back to each
    ``optimizer.step()`` whenever that would do something else: before the state is
    initialized (the first step), when a parameter has no gradient, with step hooks, with
    a grad scaler's ``grad_scale`` / ``found_inf``, with options the subclass does not
    handle (``_state_tensors``), or on a torch that lacks a private name the direct step
    reads (its step-hook registries, the subclass's kernels: ``_private``).  Hyperparameters are read from the param groups at every call
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
    def kernels_present(cls) -> bool:
        """Whether this torch has the private kernels ``_update`` calls."""
        return True

    @classmethod
    def for_optimizers(cls, *optimizers: torch.optim.Optimizer):
        """An instance over ``optimizers`` if every one qualifies and this torch has the
        private names the direct step needs, else None (step each ``optimizer.step()``)."""
        if not all(cls.applies(o) for o in optimizers) or not cls.kernels_present():
            return None
        return cls(optimizers) if _step_hooks_state(optimizers) is not None else None

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
        if _step_hooks_state(self.optimizers) is not False or not self.kernels_present():
            return False
        for opt in self.optimizers:
            if (getattr(opt, "grad_scale", None) is not None
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

    Calls torch's private fused kernel (``torch._fused_adam_``, ``_fused_adamw_``) on the
    optimizers' parameters and state as ``Adam.step`` does for ``fused=True``: the same
    update, bit for bit.  Several optimizers
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
        group."""
        if type(optimizer) not in _FUSABLE:
            return False
        return all(g.get("fused") and not g.get("differentiable") for g in optimizer.param_groups)

    @classmethod
    def kernels_present(cls) -> bool:
        return _private("fused_adam") is not None and _private("fused_adamw") is not None

    def _state_tensors(self, group, states):
        if any("exp_avg" not in s for s in states):
            return None
        max_sqs = [s["max_exp_avg_sq"] for s in states] if group["amsgrad"] else []
        return [s["exp_avg"] for s in states], [s["exp_avg_sq"] for s in states], max_sqs

    def _update(self, group, params, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, _):
        beta1, beta2 = group["betas"]
        kernel = _private("fused_adamw" if group.get("decoupled_weight_decay", False)
                          else "fused_adam")
        kernel(params, [p.grad for p in params], exp_avgs, exp_avg_sqs, max_exp_avg_sqs,
               steps, amsgrad=group["amsgrad"], lr=group["lr"], beta1=float(beta1),
               beta2=float(beta2), weight_decay=group["weight_decay"], eps=group["eps"],
               maximize=group["maximize"], grad_scale=None, found_inf=None)


# Planned optimizer work (steps x parameter elements) from which RMSprop is compiled: where
# the time the compiled update saves repays the compile, once per process, with a margin
# (the costs and savings: docs/notes/minatar_frame_cost.md).
COMPILE_MIN_WORK = 5e9


def _rmsprop_update(params: list, grads: list, square_avgs: list, grad_avgs: list,
                    momentum_buffers: list, lr, alpha, eps, momentum, weight_decay,
                    centered: bool, use_momentum: bool, maximize: bool) -> None:
    """The update of torch's multi-tensor RMSprop (``_multi_tensor_rmsprop``, same order of
    operations) tensor by tensor, for ``torch.compile`` to fuse into one loop each.  The
    hyperparameters are 0-dim tensors, so a schedule changes them without recompiling."""
    for i, param in enumerate(params):
        grad = grads[i].neg() if maximize else grads[i]
        grad = grad + weight_decay * param
        square_avg = square_avgs[i]
        square_avg.mul_(alpha).add_((1 - alpha) * (grad * grad))
        if centered:
            grad_avg = grad_avgs[i]
            grad_avg.lerp_(grad, 1 - alpha)
            avg = square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_().add_(eps)
        else:
            avg = square_avg.sqrt().add_(eps)
        if use_momentum:
            buf = momentum_buffers[i]
            buf.mul_(momentum).addcdiv_(grad, avg)
            param.sub_(lr * buf)
        else:
            param.sub_(lr * (grad / avg))


def _compiled_rmsprop():
    global _COMPILED_RMSPROP
    if _COMPILED_RMSPROP is None:
        _COMPILED_RMSPROP = torch.compile(_rmsprop_update, dynamic=False)
    return _COMPILED_RMSPROP


_COMPILED_RMSPROP = None


class CompiledRmspropStep(DirectOptimizerStep):
    """``optimizer.step()`` for ``torch.optim.RMSprop`` on CPU with the update compiled by
    ``torch.compile`` into one loop per parameter tensor (torch's own loop makes nine passes
    over memory, each a separate kernel).

    The same update as ``RMSprop.step`` (centered, momentum, weight decay, maximize), equal
    to float32 rounding (about 1e-7 relative per step; not bit for bit: the fused loop
    rounds some intermediates differently).  It is deterministic, so a resumed run that
    uses it continues bit for bit.  Hyperparameters are read from the param groups at
    every call and passed as tensors (a learning-rate schedule does not recompile).
    Falls back to ``optimizer.step()`` as ``DirectOptimizerStep`` describes, and for good,
    with a warning, if compiling fails (no C++ compiler, say).

    Args:
        optimizers: the RMSprop optimizer(s) to step (each must satisfy ``applies``).
    """

    kind = "CPU torch.optim.RMSprop"

    @classmethod
    def applies(cls, optimizer: torch.optim.Optimizer) -> bool:
        """True for RMSprop over CPU float parameters, not ``differentiable`` or
        ``capturable``, with float hyperparameters, when this torch can compile."""
        if type(optimizer) is not torch.optim.RMSprop or not hasattr(torch, "compile"):
            return False
        for group in optimizer.param_groups:
            if group.get("differentiable") or group.get("capturable"):
                return False
            if any(isinstance(group[k], torch.Tensor) for k in
                   ("lr", "alpha", "eps", "momentum", "weight_decay")):
                return False
            if any(p.device.type != "cpu" or not p.dtype.is_floating_point or p.is_complex()
                   for p in group["params"]):
                return False
        return True

    def __init__(self, optimizers):
        super().__init__(optimizers)
        self._failed = False
        self._scalars: dict = {}

    def _fast_path_ok(self) -> bool:
        return not self._failed and super()._fast_path_ok()

    def _state_tensors(self, group, states):
        if any("square_avg" not in s for s in states):
            return None
        grad_avgs = [s["grad_avg"] for s in states] if group["centered"] else []
        buffers = [s["momentum_buffer"] for s in states] if group["momentum"] > 0 else []
        return [s["square_avg"] for s in states], grad_avgs, buffers

    def _scalar(self, name: str, value: float, dtype: torch.dtype) -> torch.Tensor:
        """``value`` as a cached 0-dim tensor, refreshed in place when it changes."""
        key = (name, dtype)
        tensor = self._scalars.get(key)
        if tensor is None:
            tensor = self._scalars[key] = torch.tensor(float(value), dtype=dtype)
        elif tensor.item() != float(value):
            tensor.fill_(float(value))
        return tensor

    def _update(self, group, params, square_avgs, grad_avgs, buffers, steps, _):
        dtype = params[0].dtype
        scalars = [self._scalar(k, group[k], dtype) for k in
                   ("lr", "alpha", "eps", "momentum", "weight_decay")]
        grads = [p.grad for p in params]
        try:
            _compiled_rmsprop()(params, grads, square_avgs, grad_avgs, buffers, *scalars,
                                centered=bool(group["centered"]),
                                use_momentum=group["momentum"] > 0,
                                maximize=bool(group["maximize"]))
        except Exception as e:  # a compile error leaves the tensors untouched
            self._failed = True
            warnings.warn(f"CompiledRmspropStep: torch.compile failed ({type(e).__name__}: "
                          f"{str(e)[:200]}); stepping with RMSprop.step() from now on",
                          stacklevel=2)
            for step in steps:
                step.sub_(1)  # step_no_grad counted this step already; step() counts it
            for optimizer in self.optimizers:
                optimizer.step()
            self._groups = []
            self._key = None


def direct_step_for(*optimizers: torch.optim.Optimizer, planned_work: float = 0.0
                    ) -> DirectOptimizerStep | None:
    """A ``FusedAdamStep`` over ``optimizers`` when it handles all of them; a
    ``CompiledRmspropStep`` when it does and ``planned_work`` (optimizer steps the run
    plans times the parameter elements) reaches ``COMPILE_MIN_WORK``; else None (use each
    ``optimizer.step()``)."""
    fused = FusedAdamStep.for_optimizers(*optimizers)
    if fused is not None or planned_work < COMPILE_MIN_WORK:
        return fused
    return CompiledRmspropStep.for_optimizers(*optimizers)


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
    squares = torch.stack(_foreach_norms(grads)).square()
    norms = squares.new_zeros(len(groups)).index_add_(0, owner, squares).sqrt()
    skip = max_norm is None or (  # on CPU, reading the norm back is free
        norms.device.type == "cpu" and float(norms.max()) < max_norm * (1 - _CLIP_MARGIN)
    )
    if not skip:  # (SAC's default max_norm of 1e9 never clips: the factor would be 1)
        scale = (max_norm / (norms + 1e-6)).clamp(max=1.0)
        _foreach_mul_(grads, list(scale[owner].unbind()))
    return list(norms.unbind())


_OWNER_INDEX: dict[tuple, torch.Tensor] = {}


def _owner_index(owners: tuple[int, ...], device: torch.device) -> torch.Tensor:
    """``owners`` as an index tensor, built once per layout (a tensor creation per
    update costs more than the norms it indexes)."""
    key = (owners, device)
    if key not in _OWNER_INDEX:
        _OWNER_INDEX[key] = torch.tensor(owners, device=device)
    return _OWNER_INDEX[key]
