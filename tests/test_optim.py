"""Direct optimizer steps (rlpyt.algos.optim) against torch.optim's own step()."""

from __future__ import annotations

import pytest
import torch

from rlpyt.algos.optim import (
    FusedAdamStep,
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
    assert direct_step_for(adam, rmsprop) is None  # one kind for all of them
    assert direct_step_for(torch.optim.SGD(params, lr=0.1)) is None
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
