"""The fast optimizer steps behind ``rlpyt.algos.optim``, on private torch names.

A classic-control agent takes thousands of gradient steps on a network of a few
thousand weights, where the Python around each torch call costs as much as the
arithmetic.  Two steps therefore go around ``optimizer.step()``: ``FusedAdamStep`` calls
torch's fused Adam kernel directly (the PG and DQN families), and ``CompiledRmspropStep``
runs RMSprop's update compiled by ``torch.compile`` (long MinAtar DQN runs); the
gradient-clipping helpers of ``rlpyt.algos.optim`` use torch's foreach norms and
multiplies (``foreach_norms``, ``foreach_mul_``).  All of them read private torch names,
which any torch release may rename or drop, so each is here only because it gains
clearly end to end; the figures that earned each, the bar they had to pass, and the
shortcuts dropped for falling short, are in docs/algorithms.md (Optimizer mechanics) and
docs/notes/minatar_frame_cost.md.  Each private name is looked up when used
(``_private``): on a torch that renamed or dropped one, the steps fall back to the
public ``optimizer.step()`` and the foreach helpers to per-tensor ops, with the same
update.  Import the steps from ``rlpyt.algos.optim``, the public place.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import torch
from torch.optim import optimizer as _optimizer_module

__all__ = [
    "COMPILE_MIN_WORK",
    "FUSABLE",
    "CompiledRmspropStep",
    "DirectOptimizerStep",
    "FusedAdamStep",
    "direct_step_for",
    "foreach_mul_",
    "foreach_norms",
]

# Optimizers whose fused kernel (one call for all parameters) we use unless told otherwise.
FUSABLE = (torch.optim.Adam, torch.optim.AdamW)

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


def foreach_norms(tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    """The L2 norm of each tensor: one foreach call where torch has it, else one
    ``vector_norm`` per tensor (on CPU the same numbers: the foreach op loops likewise)."""
    kernel = _private("foreach_norm")
    if kernel is not None:
        return list(kernel(tensors))
    return [torch.linalg.vector_norm(t) for t in tensors]


def foreach_mul_(tensors: list[torch.Tensor], factors) -> None:
    """``tensors[i] *= factors[i]`` in place (``factors``: a tensor for all, or a list)."""
    kernel = _private("foreach_mul_")
    if kernel is not None:
        kernel(tensors, factors)
        return
    if isinstance(factors, torch.Tensor):
        factors = [factors] * len(tensors)
    for tensor, factor in zip(tensors, factors):
        tensor.mul_(factor)


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
        if type(optimizer) not in FUSABLE:
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
