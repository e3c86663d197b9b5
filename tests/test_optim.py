"""Direct optimizer steps (rlpyt.algos.optim, made in rlpyt.algos.optim_fast) against
torch.optim's own step()."""

from __future__ import annotations

import copy

import pytest
import torch

from rlpyt.algos import optim_fast as optim_module
from rlpyt.algos.optim import (
    COMPILE_MIN_WORK,
    CompiledRmspropStep,
    FusedAdamStep,
    clip_grad_norm,
    clip_grad_norms,
    direct_step_for,
    make_optimizer,
)


def _params(seed: int = 0, dtype: torch.dtype = torch.float32) -> list[torch.nn.Parameter]:
    torch.manual_seed(seed)
    return [torch.nn.Parameter(torch.randn(5, 3, dtype=dtype)),
            torch.nn.Parameter(torch.randn(3, dtype=dtype)),
            torch.nn.Parameter(torch.randn(2, 2, dtype=dtype))]


def test_direct_step_for_picks_the_optimizers_kernel():
    params = _params()
    adam = make_optimizer(torch.optim.Adam, params, 1e-3)
    assert isinstance(direct_step_for(adam), FusedAdamStep)
    rmsprop = make_optimizer(torch.optim.RMSprop, params, 1e-3)
    assert direct_step_for(rmsprop) is None  # RMSprop(foreach=True).step(): measured as fast
    # ... unless the run is long enough to repay compiling the update.
    assert direct_step_for(rmsprop, planned_work=COMPILE_MIN_WORK / 2) is None
    assert isinstance(direct_step_for(rmsprop, planned_work=COMPILE_MIN_WORK),
                      CompiledRmspropStep)
    assert isinstance(direct_step_for(adam, planned_work=COMPILE_MIN_WORK), FusedAdamStep)
    assert direct_step_for(adam, rmsprop) is None  # one kind for all of them
    assert direct_step_for(torch.optim.SGD(params, lr=0.1)) is None
    assert direct_step_for(torch.optim.SGD(params, lr=0.1), planned_work=1e12) is None
    with pytest.raises(ValueError, match="Adam"):
        FusedAdamStep(rmsprop)


@pytest.mark.parametrize("amsgrad", [False, True])
def test_fused_adam_direct_step_is_bit_identical_to_adam_step(amsgrad):
    params, ref_params = _params(), _params()
    optimizer = torch.optim.Adam(params, lr=1e-2, fused=True, amsgrad=amsgrad)
    reference = torch.optim.Adam(ref_params, lr=1e-2, fused=True, amsgrad=amsgrad)
    stepper = FusedAdamStep(optimizer)
    for step in range(6):
        if step == 3:  # a schedule changing the learning rate between steps
            for opt in (optimizer, reference):
                opt.param_groups[0]["lr"] = 3e-3
        generator = torch.Generator().manual_seed(step)
        for p, q in zip(params, ref_params):
            g = torch.randn(p.shape, generator=generator)
            p.grad, q.grad = g.clone(), g.clone()
        stepper.step()  # the first call goes through Adam.step, which creates the state
        reference.step()
        for p, q in zip(params, ref_params):
            assert torch.equal(p, q), step
    assert stepper._groups, "the direct path never ran"


def _random_grads(params, step):
    generator = torch.Generator().manual_seed(step)
    grads = [torch.randn(p.shape, generator=generator, dtype=p.dtype) for p in params]
    for p, g in zip(params, grads):
        p.grad = g.clone()
    return grads


RMSPROP_CASES = {
    "paper_dqn": dict(alpha=0.95, momentum=0.95, eps=0.01, centered=True),
    "plain_decay": dict(alpha=0.99, eps=1e-5, weight_decay=0.1, maximize=True),
}


@pytest.mark.parametrize("case", sorted(RMSPROP_CASES))
def test_compiled_rmsprop_matches_rmsprop_step(case):
    """Same update as RMSprop.step() to float32 rounding (not bit for bit: the fused loop
    rounds intermediates differently), through a learning-rate change (no recompile)."""
    kwargs = RMSPROP_CASES[case]
    params, ref_params = _params(), _params()
    optimizer = make_optimizer(torch.optim.RMSprop, params, 1e-2, kwargs)
    reference = torch.optim.RMSprop(ref_params, lr=1e-2, foreach=False, **kwargs)
    stepper = CompiledRmspropStep(optimizer)
    for step in range(8):
        if step == 4:
            for opt in (optimizer, reference):
                opt.param_groups[0]["lr"] = 3e-3
        grads = _random_grads(params, step)
        for q, g in zip(ref_params, grads):
            q.grad = g.clone()
        stepper.step()  # the first call goes through RMSprop.step, which creates the state
        reference.step()
        for p, q in zip(params, ref_params):
            torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)
    assert stepper._groups and not stepper._failed, "the compiled path never ran"
    state, ref_state = optimizer.state[params[0]], reference.state[ref_params[0]]
    assert float(state["step"]) == float(ref_state["step"]) == 8
    torch.testing.assert_close(state["square_avg"], ref_state["square_avg"], rtol=1e-5,
                               atol=1e-7)


def test_compiled_rmsprop_resumes_bit_for_bit():
    """A stepper rebuilt from the optimizer's state_dict (a resumed run) continues exactly
    as the uninterrupted one: the compiled update is deterministic."""
    kwargs = RMSPROP_CASES["paper_dqn"]
    params = _params()
    optimizer = make_optimizer(torch.optim.RMSprop, params, 1e-2, kwargs)
    stepper = CompiledRmspropStep(optimizer)
    for step in range(3):
        _random_grads(params, step)
        stepper.step()
    saved_params = [p.detach().clone() for p in params]
    saved_state = copy.deepcopy(optimizer.state_dict())
    resumed = [torch.nn.Parameter(p.clone()) for p in saved_params]
    resumed_optimizer = make_optimizer(torch.optim.RMSprop, resumed, 1e-2, kwargs)
    resumed_optimizer.load_state_dict(saved_state)
    resumed_stepper = CompiledRmspropStep(resumed_optimizer)
    for step in range(3, 7):
        _random_grads(params, step)
        _random_grads(resumed, step)
        stepper.step()
        resumed_stepper.step()
    for p, q in zip(params, resumed):
        assert torch.equal(p, q)


def test_compiled_rmsprop_falls_back_when_compiling_fails(monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("no C++ compiler")

    monkeypatch.setattr(optim_module, "_compiled_rmsprop", lambda: broken)
    kwargs = RMSPROP_CASES["paper_dqn"]
    params, ref_params = _params(), _params()
    optimizer = make_optimizer(torch.optim.RMSprop, params, 1e-2, kwargs)
    reference = make_optimizer(torch.optim.RMSprop, ref_params, 1e-2, kwargs)
    stepper = CompiledRmspropStep(optimizer)
    with pytest.warns(UserWarning, match="no C\\+\\+ compiler"):
        for step in range(4):
            grads = _random_grads(params, step)
            for q, g in zip(ref_params, grads):
                q.grad = g.clone()
            stepper.step()
            reference.step()
    assert stepper._failed
    for p, q in zip(params, ref_params):
        assert torch.equal(p, q)  # RMSprop.step() itself from then on
    assert float(optimizer.state[params[0]]["step"]) == 4


# ---- the guard: a torch without the private names steps through the public path ---------

def test_every_private_name_exists_on_this_torch():
    """The direct steps are live here: each private name they read is present.  When a
    torch release renames one, the steps fall back (tests below) and this test says
    which name to look up again."""
    missing = [role for role in optim_module._PRIVATE if optim_module._private(role) is None]
    assert not missing, f"this torch lacks {missing}: the direct steps take the public path"
    optimizer = torch.optim.Adam(_params(), lr=1e-3)
    assert all(hasattr(optimizer, name) for name in optim_module._OPTIMIZER_STEP_HOOKS)


def _rename(monkeypatch, role):
    """Simulate a torch that no longer has the private name of ``role`` (torch's own
    optimizers keep theirs: only this module looks for a name that is not there)."""
    if role == "optimizer_step_hooks":
        monkeypatch.setattr(optim_module, "_OPTIMIZER_STEP_HOOKS",
                            ("_renamed_step_pre_hooks", "_renamed_step_post_hooks"))
    else:
        owner, name = optim_module._PRIVATE[role]
        monkeypatch.setitem(optim_module._PRIVATE, role, (owner, f"{name}renamed"))


@pytest.mark.parametrize("role", ["fused_adam", "fused_adamw", "global_step_pre_hooks",
                                  "global_step_post_hooks", "optimizer_step_hooks"])
@pytest.mark.parametrize("OptimCls", [torch.optim.Adam, torch.optim.AdamW])
def test_fused_adam_without_a_private_name_gives_adams_own_update(monkeypatch, role, OptimCls):
    params, ref_params = _params(), _params()
    optimizer = make_optimizer(OptimCls, params, 1e-2, dict(weight_decay=0.01))
    reference = make_optimizer(OptimCls, ref_params, 1e-2, dict(weight_decay=0.01))
    stepper = FusedAdamStep(optimizer)  # built while the names exist, as in a run
    _rename(monkeypatch, role)
    assert direct_step_for(optimizer) is None
    for step in range(4):
        grads = _random_grads(params, step)
        for q, g in zip(ref_params, grads):
            q.grad = g.clone()
        stepper.step()
        reference.step()
        for p, q in zip(params, ref_params):
            assert torch.equal(p, q), step
    assert not stepper._groups, "the direct path ran without the private names"
    monkeypatch.undo()  # the names are back: the same stepper takes the direct path again
    _random_grads(params, 4)
    stepper.step()
    assert stepper._groups


@pytest.mark.parametrize("role", ["global_step_pre_hooks", "optimizer_step_hooks"])
def test_compiled_rmsprop_without_a_private_name_gives_rmsprops_own_update(monkeypatch,
                                                                             role):
    kwargs = RMSPROP_CASES["paper_dqn"]
    params, ref_params = _params(), _params()
    optimizer = make_optimizer(torch.optim.RMSprop, params, 1e-2, kwargs)
    reference = make_optimizer(torch.optim.RMSprop, ref_params, 1e-2, kwargs)
    stepper = CompiledRmspropStep(optimizer)
    _rename(monkeypatch, role)
    assert direct_step_for(optimizer, planned_work=COMPILE_MIN_WORK) is None
    for step in range(3):
        grads = _random_grads(params, step)
        for q, g in zip(ref_params, grads):
            q.grad = g.clone()
        stepper.step()
        reference.step()
    assert not stepper._groups
    for p, q in zip(params, ref_params):
        assert torch.equal(p, q)


@pytest.mark.parametrize("max_norm", [None, 1e-3, 1e3])
def test_clipping_without_foreach_ops_gives_the_same_numbers(monkeypatch, max_norm):
    def clipped(fn):
        params = _params()
        _random_grads(params, 0)
        norms = fn(params)
        return norms, [p.grad for p in params]

    runs = []
    for renamed in (False, True):
        if renamed:
            _rename(monkeypatch, "foreach_norm")
            _rename(monkeypatch, "foreach_mul_")
        one = clipped(lambda ps: [clip_grad_norm(ps, max_norm)])
        groups = clipped(lambda ps: clip_grad_norms([ps[:1], ps[1:]], max_norm))
        runs.append((one, groups))
    for (norms_a, grads_a), (norms_b, grads_b) in zip(*runs):
        assert all(torch.equal(a, b) for a, b in zip(norms_a, norms_b))
        assert all(torch.equal(a, b) for a, b in zip(grads_a, grads_b))
