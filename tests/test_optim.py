"""Direct optimizer steps (rlpyt.algos.optim) against torch.optim's own step()."""

from __future__ import annotations

import copy

import pytest
import torch

from rlpyt.algos.optim import (
    ForeachRmspropStep,
    FusedAdamStep,
    direct_step_for,
    make_optimizer,
)


def _params(seed: int = 0, dtype: torch.dtype = torch.float32) -> list[torch.nn.Parameter]:
    torch.manual_seed(seed)
    return [torch.nn.Parameter(torch.randn(5, 3, dtype=dtype)),
            torch.nn.Parameter(torch.randn(3, dtype=dtype)),
            torch.nn.Parameter(torch.randn(2, 2, dtype=dtype))]


def _rmsprop(params, foreach: bool, **kwargs) -> torch.optim.RMSprop:
    groups = [dict(params=params[:2]), dict(params=params[2:], alpha=0.9, eps=1e-3)]
    return torch.optim.RMSprop(groups, lr=1e-2, foreach=foreach, **kwargs)


def _set_grads(params, ref_params, seed: int) -> None:
    generator = torch.Generator().manual_seed(seed)
    for p, q in zip(params, ref_params):
        g = torch.randn(p.shape, generator=generator, dtype=p.dtype)
        p.grad, q.grad = g.clone(), g.clone()


def _rmsprop_pair(**option):
    """``(params, ref_params, optimizer, reference, stepper)``: two foreach RMSprops on
    equal parameters, the first stepped through ``ForeachRmspropStep``."""
    params, ref_params = _params(), _params()
    optimizer, reference = _rmsprop(params, True, **option), _rmsprop(ref_params, True, **option)
    return params, ref_params, optimizer, reference, ForeachRmspropStep(optimizer)


def _step_both(stepper, reference, params, ref_params, step, drop_grad=False) -> None:
    """Same gradients into both (``drop_grad``: none for the second parameter), one step each."""
    _set_grads(params, ref_params, seed=step)
    if drop_grad:
        params[1].grad = ref_params[1].grad = None  # RMSprop skips this parameter
    stepper.step()
    reference.step()


def _step_both_and_compare(stepper, reference, params, ref_params, steps, tag=None,
                           drop_grad_at=None) -> None:
    """``_step_both`` for each step, identical parameters after every step."""
    for step in steps:
        _step_both(stepper, reference, params, ref_params, step, drop_grad=step == drop_grad_at)
        for p, q in zip(params, ref_params):
            assert torch.equal(p, q), (tag, step)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("foreach", [True, False])
def test_rmsprop_direct_step_is_bit_identical_to_rmsprop_step(foreach, dtype):
    params, ref_params = _params(dtype=dtype), _params(dtype=dtype)
    optimizer, reference = _rmsprop(params, foreach=True), _rmsprop(ref_params, foreach)
    stepper = ForeachRmspropStep(optimizer)
    for step in range(8):
        if step == 3:  # a schedule changing the learning rate between steps
            for opt in (optimizer, reference):
                opt.param_groups[0]["lr"] = 3e-3
        if step == 5:  # and alpha and eps (the direct step holds them as tensors)
            for opt in (optimizer, reference):
                opt.param_groups[1].update(alpha=0.95, eps=1e-6)
        _set_grads(params, ref_params, seed=step)
        stepper.step()  # the first call goes through RMSprop.step, which creates the state
        reference.step()
        for p, q in zip(params, ref_params):
            assert torch.equal(p, q), step
    assert stepper._groups, "the direct path never ran"
    ours, theirs = optimizer.state_dict()["state"], reference.state_dict()["state"]
    for i in theirs:
        assert torch.equal(ours[i]["step"], theirs[i]["step"])
        assert torch.equal(ours[i]["square_avg"], theirs[i]["square_avg"])


def test_rmsprop_direct_step_follows_a_loaded_state_dict():
    params, ref_params, optimizer, reference, stepper = _rmsprop_pair()
    for step in range(2):
        _step_both(stepper, reference, params, ref_params, step)
    # New state tensors (a copy: loading keeps same-device tensors as they are): the
    # cached lists are stale.
    optimizer.load_state_dict(copy.deepcopy(reference.state_dict()))
    _step_both_and_compare(stepper, reference, params, ref_params, range(2, 4))


@pytest.mark.parametrize("option", [dict(momentum=0.9), dict(centered=True),
                                    dict(weight_decay=0.1), dict(maximize=True)])
def test_rmsprop_options_it_does_not_handle_take_rmsprop_step(option):
    params, ref_params, _, reference, stepper = _rmsprop_pair(**option)
    _step_both_and_compare(stepper, reference, params, ref_params, range(3), option)
    assert not stepper._groups  # always fell back


def test_rmsprop_parameter_without_gradient_takes_rmsprop_step():
    params, ref_params, _, reference, stepper = _rmsprop_pair()
    _step_both_and_compare(stepper, reference, params, ref_params, range(3), drop_grad_at=2)


def test_direct_step_for_picks_the_optimizers_kernel():
    params = _params()
    adam = make_optimizer(torch.optim.Adam, params, 1e-3)
    assert isinstance(direct_step_for(adam), FusedAdamStep)
    rmsprop = make_optimizer(torch.optim.RMSprop, params, 1e-3)
    assert isinstance(direct_step_for(rmsprop), ForeachRmspropStep)
    assert direct_step_for(adam, rmsprop) is None  # one kind for all of them
    assert direct_step_for(torch.optim.SGD(params, lr=0.1)) is None
    with pytest.raises(ValueError, match="RMSprop"):
        ForeachRmspropStep(adam)
