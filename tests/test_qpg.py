"""DDPG, TD3 and SAC: distributions, targets, agents, optimizers, resume, data parallel."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from rlpyt.agents.base import AgentInputs
from rlpyt.agents.qpg.base import TwinQ, frozen_parameters
from rlpyt.agents.qpg.ddpg_agent import DdpgAgent
from rlpyt.agents.qpg.sac_agent import SacAgent
from rlpyt.agents.qpg.td3_agent import Td3Agent
from rlpyt.algos.optim import FusedAdamStep, clip_grad_norms
from rlpyt.algos.qpg.base import Diagnostics, weighted_mean
from rlpyt.algos.qpg.ddpg import DDPG
from rlpyt.algos.qpg.sac import SAC
from rlpyt.algos.qpg.targets import (
    bootstrap_target,
    soft_state_value,
    timelimit_valid,
    twin_min,
)
from rlpyt.algos.qpg.td3 import TD3
from rlpyt.distributions.gaussian import DistInfoStd, Gaussian
from rlpyt.envs.base import EnvSpaces
from rlpyt.models.qpg.ensemble import EnsembleMlp
from rlpyt.models.qpg.mlp import (
    DenseMlp,
    MuMlpModel,
    PiMlpModel,
    QofMuMlpModel,
    TwinQofMuMlpModel,
    VMlpModel,
)
from rlpyt.models.utils import update_state_dict
from rlpyt.replays.non_sequence.time_limit import SamplesFromReplayTL
from rlpyt.samplers.samples import BatchSpec
from rlpyt.spaces.float_box import FloatBox
from rlpyt.spaces.int_box import IntBox
from rlpyt.utils.collections import namedarraytuple

EnvInfo = namedarraytuple("EnvInfo", ["timeout"])
OBS_DIM = 3


@pytest.fixture(autouse=True, scope="module")
def single_torch_thread():
    """The tensors here are tiny: intra-op threads only add overhead on a busy box."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


def box_spaces(low=(-2.0,), high=(2.0,)) -> EnvSpaces:
    return EnvSpaces(
        observation=FloatBox(-10.0, 10.0, shape=(OBS_DIM,)),
        action=FloatBox(np.array(low), np.array(high)),
    )


SMALL = dict(hidden_sizes=[16, 16])


def make_agent(cls, spaces=None, **kwargs):
    agent = cls(model_kwargs=SMALL, q_model_kwargs=SMALL, **kwargs)
    agent.initialize(spaces or box_spaces())
    return agent


def examples_for(spaces, timeout=True) -> dict:
    env_info = EnvInfo(timeout=np.bool_(False)) if timeout else namedarraytuple(
        "EnvInfoNoTimeout", ["x"])(x=np.float32(0))
    return dict(
        observation=np.zeros(spaces.observation.shape, np.float32),
        action=np.zeros(spaces.action.shape, np.float32),
        reward=np.float32(0),
        done=np.bool_(False),
        env_info=env_info,
        agent_info=None,
    )


def make_algo(algo, agent, spaces=None, T=4, B=2, **kwargs):
    spaces = spaces or box_spaces()
    algo.initialize(agent, n_itr=10, batch_spec=BatchSpec(T, B), mid_batch_reset=True,
                    examples=examples_for(spaces, **kwargs))
    return algo


def replay_batch(n=8, A=1, seed=0, done_n=None, timeout_n=None, low=-2.0, high=2.0):
    g = torch.Generator().manual_seed(seed)
    def inputs():
        return AgentInputs(torch.randn(n, OBS_DIM, generator=g), torch.zeros(n, A), torch.zeros(n))
    done_n = torch.zeros(n, dtype=torch.bool) if done_n is None else done_n
    timeout_n = torch.zeros(n, dtype=torch.bool) if timeout_n is None else timeout_n
    return SamplesFromReplayTL(
        agent_inputs=inputs(),
        action=low + (high - low) * torch.rand(n, A, generator=g),
        return_=torch.randn(n, generator=g),
        done=done_n.clone(),
        done_n=done_n,
        target_inputs=inputs(),
        timeout=timeout_n.clone(),
        timeout_n=timeout_n,
    )


# ---- the squashed Gaussian --------------------------------------------------------------


def reference_squashed(mean, log_std):
    base = torch.distributions.Independent(torch.distributions.Normal(mean, log_std.exp()), 1)
    return torch.distributions.TransformedDistribution(
        base, [torch.distributions.TanhTransform(cache_size=1)]
    )


@settings(max_examples=40, deadline=None)
@given(
    dim=st.integers(1, 4),
    seed=st.integers(0, 2**16),
    mean_scale=st.floats(0.0, 2.0),
    log_std_shift=st.floats(-2.0, 0.5),
)
def test_squashed_gaussian_log_likelihood_matches_torch_transformed(
    dim, seed, mean_scale, log_std_shift
):
    g = torch.Generator().manual_seed(seed)
    mean = mean_scale * torch.randn(6, dim, generator=g, dtype=torch.float64)
    log_std = log_std_shift + 0.3 * torch.randn(6, dim, generator=g, dtype=torch.float64)
    dist = Gaussian(dim=dim, squash=1.0)
    info = DistInfoStd(mean=mean, log_std=log_std)
    reference = reference_squashed(mean, log_std)
    pre = reference.base_dist.sample()
    action = torch.tanh(pre)
    keep = action.abs().amax(-1) < 0.999  # atanh is ill-conditioned at the bounds
    ours = dist.log_likelihood(action, info)[keep]
    theirs = reference.log_prob(action)[keep]
    torch.testing.assert_close(ours, theirs, rtol=1e-6, atol=1e-6)


def test_sample_loglikelihood_is_reparameterised_and_consistent():
    torch.manual_seed(0)
    dist = Gaussian(dim=2, squash=1.0)
    mean = torch.zeros(1000, 2, requires_grad=True)
    log_std = torch.full((1000, 2), -0.5, requires_grad=True)
    action, logli = dist.sample_loglikelihood(DistInfoStd(mean, log_std))
    assert action.abs().max() < 1
    expected = reference_squashed(mean.detach(), log_std.detach()).log_prob(action.detach())
    keep = action.detach().abs().amax(-1) < 0.999
    torch.testing.assert_close(logli.detach()[keep], expected[keep], rtol=1e-4, atol=1e-4)
    (action.sum() + logli.sum()).backward()
    assert mean.grad.abs().sum() > 0 and log_std.grad.abs().sum() > 0


# ---- targets vs plain loops ------------------------------------------------------------------


def loop_sac_targets(return_, done_n, tq1, tq2, log_pi, alpha, discount_n, scale):
    out = []
    for i in range(len(return_)):
        value = min(float(tq1[i]), float(tq2[i])) - alpha * float(log_pi[i])
        bootstrap = 0.0 if bool(done_n[i]) else discount_n * value
        out.append(scale * float(return_[i]) + bootstrap)
    return torch.tensor(out, dtype=torch.float64)


@settings(max_examples=50, deadline=None)
@given(
    n=st.integers(1, 20),
    seed=st.integers(0, 2**16),
    alpha=st.floats(0.0, 2.0),
    discount=st.floats(0.0, 1.0),
    n_step=st.integers(1, 4),
    scale=st.floats(0.1, 10.0),
)
def test_sac_target_matches_plain_loop(n, seed, alpha, discount, n_step, scale):
    g = torch.Generator().manual_seed(seed)
    return_, tq1, tq2, log_pi = (torch.randn(n, generator=g, dtype=torch.float64)
                                 for _ in range(4))
    done_n = torch.rand(n, generator=g) < 0.3
    y = bootstrap_target(return_, done_n, soft_state_value(tq1, tq2, log_pi, alpha),
                         discount**n_step, scale)
    expected = loop_sac_targets(return_, done_n, tq1, tq2, log_pi, alpha, discount**n_step,
                                scale)
    torch.testing.assert_close(y, expected)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 20), seed=st.integers(0, 2**16), clip=st.floats(0.1, 5.0))
def test_td3_target_twin_min_and_clip_match_plain_loop(n, seed, clip):
    g = torch.Generator().manual_seed(seed)
    return_, tq1, tq2 = (3 * torch.randn(n, generator=g, dtype=torch.float64) for _ in range(3))
    done_n = torch.rand(n, generator=g) < 0.3
    y = bootstrap_target(return_, done_n, twin_min(tq1, tq2), 0.9, clip=clip)
    for i in range(n):
        raw = float(return_[i]) + (0 if done_n[i] else 0.9 * min(float(tq1[i]), float(tq2[i])))
        assert float(y[i]) == pytest.approx(max(-clip, min(clip, raw)))


def test_timelimit_valid_and_weighted_mean_drop_truncated_windows():
    values = torch.tensor([1.0, 2.0, 3.0, 4.0])
    timeout_n = torch.tensor([False, True, False, True])
    valid = timelimit_valid(timeout_n)
    assert valid.tolist() == [1, 0, 1, 0]
    weights = valid / valid.sum()
    assert float(weighted_mean(values, weights)) == pytest.approx(2.0)  # mean of 1 and 3
    assert float(weighted_mean(values, None)) == pytest.approx(2.5)


def test_bootstrap_target_float_done_and_non_finite_value_at_a_terminal():
    return_ = torch.tensor([1.0, 2.0, 3.0])
    next_value = torch.tensor([10.0, float("inf"), -4.0])
    for done_n in (torch.tensor([False, True, False]), torch.tensor([0.0, 1.0, 0.0])):
        y = bootstrap_target(return_, done_n, next_value, 0.5, reward_scale=2.0)
        assert y.tolist() == [2.0 + 5.0, 4.0, 6.0 - 2.0]  # a terminal does not bootstrap


def test_weighted_mean_dot_path_matches_products_and_gradients():
    g = torch.Generator().manual_seed(0)
    values = torch.randn(7, generator=g, requires_grad=True)
    weights = torch.rand(7, generator=g)
    torch.testing.assert_close(weighted_mean(values, weights), (values * weights).sum())
    (grad,) = torch.autograd.grad(weighted_mean(values, weights), values)
    torch.testing.assert_close(grad, weights)
    matrix = torch.randn(3, 7, generator=g)  # other shapes take the broadcasting product
    torch.testing.assert_close(weighted_mean(matrix, weights), (matrix * weights).sum())


@pytest.mark.parametrize("Agent, Algo", [(SacAgent, SAC), (Td3Agent, TD3), (DdpgAgent, DDPG)])
def test_replay_skips_prev_inputs_only_when_every_model_ignores_them(Agent, Algo):
    algo = make_algo(Algo(replay_size=100), make_agent(Agent))
    assert algo.replay_buffer.prev_inputs is False
    algo.replay_buffer.append_samples(algo.samples_to_buffer(fake_samples(box_spaces(), 4, 2)))
    batch = algo.replay_buffer.sample_batch(4)
    assert batch.agent_inputs.prev_action is None and batch.target_inputs.prev_reward is None



def test_replay_gathers_prev_inputs_for_a_model_that_reads_them():
    class PrevAwarePi(PiMlpModel):
        uses_prev_action_reward = True

    agent = SacAgent(ModelCls=PrevAwarePi, model_kwargs=SMALL, q_model_kwargs=SMALL)
    agent.initialize(box_spaces())
    assert make_algo(SAC(replay_size=100), agent).replay_buffer.prev_inputs is True


def sac_setup(seed=0, **algo_kwargs):
    torch.manual_seed(seed)
    agent = make_agent(SacAgent)
    algo = make_algo(SAC(batch_size=8, min_steps_learn=0, **algo_kwargs), agent)
    return agent, algo


def test_sac_q_target_on_batch_matches_plain_loop_with_done_and_timeout():
    agent, algo = sac_setup(discount=0.9, reward_scale=2.0, n_step_return=1)
    agent.set_alpha(0.3)
    done_n = torch.tensor([0, 1, 0, 1, 0, 0, 1, 0], dtype=torch.bool)
    timeout_n = torch.tensor([0, 0, 0, 1, 0, 0, 1, 0], dtype=torch.bool)
    batch = replay_batch(done_n=done_n, timeout_n=timeout_n)
    torch.manual_seed(5)
    y = algo.q_target(batch, agent.alpha)
    torch.manual_seed(5)  # the same policy sample for the reference
    with torch.no_grad():
        next_action, next_log_pi, _ = agent.pi(*batch.target_inputs)
        tq1, tq2 = agent.target_q(*batch.target_inputs, next_action)
    expected = loop_sac_targets(batch.return_, done_n, tq1, tq2, next_log_pi, 0.3, 0.9, 2.0)
    torch.testing.assert_close(y.double(), expected, rtol=1e-5, atol=1e-5)
    # Terminated samples do not bootstrap; truncated ones (3 and 6) carry no loss weight.
    assert torch.allclose(y[done_n], 2.0 * batch.return_[done_n])
    weights = algo.loss_weights(batch)
    assert weights[timeout_n].eq(0).all() and float(weights.sum()) == pytest.approx(1.0)


def test_sac_q_loss_ignores_truncated_samples():
    """Changing the target data of a truncated sample must not change the critic update."""
    timeout_n = torch.tensor([0, 0, 1, 0, 0, 0, 0, 1], dtype=torch.bool)
    results = []
    for return_shift in (0.0, 100.0):
        agent, algo = sac_setup(seed=1)
        batch = replay_batch(done_n=timeout_n.clone(), timeout_n=timeout_n, seed=3)
        batch.return_[timeout_n] += return_shift
        torch.manual_seed(7)
        algo.train_step(batch, Diagnostics(algo.OptInfoCls._fields))
        results.append([p.detach().clone() for p in agent.q_model.parameters()])
    for a, b in zip(*results):
        torch.testing.assert_close(a, b)


def test_td3_and_ddpg_q_targets_match_plain_loop():
    for Agent, Algo in ((Td3Agent, TD3), (DdpgAgent, DDPG)):
        torch.manual_seed(0)
        agent = make_agent(Agent)
        algo = make_algo(Algo(batch_size=8, min_steps_learn=0, discount=0.95), agent)
        done_n = torch.tensor([0, 1, 0, 0, 1, 0, 0, 0], dtype=torch.bool)
        batch = replay_batch(done_n=done_n)
        torch.manual_seed(3)
        y = algo.q_target(batch)
        torch.manual_seed(3)
        with torch.no_grad():
            next_action = agent.target_action(*batch.target_inputs)
            q = agent.target_q(*batch.target_inputs, next_action)
        if Agent is Td3Agent:
            mu = agent.target_model(*batch.target_inputs)
            noise = next_action - mu
            assert next_action.abs().max() <= 1 and noise.abs().max() <= 0.5 + 1e-6
            q = torch.minimum(*q)
        for i in range(8):
            expected = float(batch.return_[i]) + (0 if done_n[i] else 0.95 * float(q[i]))
            assert float(y[i]) == pytest.approx(expected, abs=1e-5)


# ---- target networks ---------------------------------------------------------------------------


@pytest.mark.parametrize("Agent", [DdpgAgent, Td3Agent, SacAgent])
def test_soft_target_update_is_polyak_average_of_every_target(Agent):
    torch.manual_seed(0)
    agent = make_agent(Agent)
    for p in agent.q_model.parameters():
        p.data.add_(1.0)
    for p in agent.model.parameters():
        p.data.add_(1.0)
    pairs = [(agent.target_q_model, agent.q_model)]
    if agent.target_model is not None:
        pairs.append((agent.target_model, agent.model))
    before = [[p.detach().clone() for p in t.parameters()] for t, _ in pairs]
    reference = [copy.deepcopy(t) for t, _ in pairs]
    agent.update_target(tau=0.1)
    for (target, online), old, ref in zip(pairs, before, reference):
        for p_t, p_old, p_on in zip(target.parameters(), old, online.parameters()):
            torch.testing.assert_close(p_t, 0.1 * p_on + 0.9 * p_old)
        update_state_dict(ref, online.state_dict(), 0.1)  # the generic helper agrees
        for a, b in zip(ref.parameters(), target.parameters()):
            torch.testing.assert_close(a, b)
    agent.update_target(tau=1)
    for target, online in pairs:
        for a, b in zip(target.parameters(), online.parameters()):
            assert torch.equal(a, b)


def test_update_target_rejects_bad_tau():
    agent = make_agent(SacAgent)
    with pytest.raises(ValueError, match="tau=1.5"):
        agent.update_target(1.5)


# ---- models -----------------------------------------------------------------------------------


def test_models_keep_leading_dims():
    o = torch.randn(5, 4, OBS_DIM)
    a = torch.randn(5, 4, 2)
    assert MuMlpModel((OBS_DIM,), [8], 2)(o).shape == (5, 4, 2)
    mean, log_std = PiMlpModel((OBS_DIM,), [8], 2)(o[0])
    assert mean.shape == log_std.shape == (4, 2)
    assert QofMuMlpModel((OBS_DIM,), [8], 2)(o, None, None, a).shape == (5, 4)
    assert VMlpModel((OBS_DIM,), [8])(o[0, 0]).shape == ()
    for fused in (False, True):
        q1, q2 = TwinQofMuMlpModel((OBS_DIM,), [8, 8], 2, fused=fused)(o, None, None, a)
        assert q1.shape == q2.shape == (5, 4) and not torch.equal(q1, q2)
    mu = MuMlpModel((OBS_DIM,), [8], 2, output_max=3)(100 * o)
    assert mu.abs().max() <= 3


def test_ensemble_members_equal_separate_mlps():
    from rlpyt.models.mlp import MlpModel

    torch.manual_seed(0)
    ensemble = EnsembleMlp(3, 5, [7, 6], 2)
    x = torch.randn(11, 5)
    out = ensemble(x)
    for i in range(3):
        mlp = MlpModel(5, [7, 6], 2)
        mlp.load_state_dict(ensemble.member_state_dict(i))
        torch.testing.assert_close(out[i], mlp(x))


@pytest.mark.parametrize("hidden", [[7, 6], None])
def test_dense_mlp_equals_mlp_model_in_values_gradients_and_init(hidden):
    from rlpyt.models.mlp import MlpModel

    torch.manual_seed(3)
    mlp = MlpModel(5, hidden, 2)
    torch.manual_seed(3)
    dense = DenseMlp(5, hidden, 2)  # the same seed draws the same (transposed) weights
    linears = [m for m in mlp.model if isinstance(m, torch.nn.Linear)]
    assert len(linears) == dense.n_layers
    # Hidden weights input-major, the output layer's output-major.
    for k, ((weight, bias), linear) in enumerate(zip(dense.layers(), linears)):
        expected = linear.weight if k == len(linears) - 1 else linear.weight.t()
        assert torch.equal(weight, expected)
        assert torch.equal(bias, linear.bias)
    x = torch.randn(11, 5, requires_grad=True)
    x2 = x.detach().clone().requires_grad_()
    (mlp(x) ** 2).sum().backward()
    (dense(x2) ** 2).sum().backward()
    torch.testing.assert_close(x.grad, x2.grad)
    for k, ((weight, bias), linear) in enumerate(zip(dense.layers(), linears)):
        expected = linear.weight.grad if k == len(linears) - 1 else linear.weight.grad.t()
        torch.testing.assert_close(weight.grad, expected)
        torch.testing.assert_close(bias.grad, linear.bias.grad)
    other = DenseMlp(5, hidden, 2)
    other.load_mlp_state_dict(mlp.state_dict())
    torch.testing.assert_close(other(x), mlp(x))


def test_dense_mlp_loads_state_dicts_of_the_older_all_input_major_layout():
    """The output weight used to be input-major under ``weight{k}``: such a state dict
    loads transposed (square layers included), with or without its metadata."""
    torch.manual_seed(0)
    x = torch.randn(4, 3)
    for hidden, out in (([5], 2), ([4], 4)):
        dense = DenseMlp(3, hidden, out)
        old = dict(dense.state_dict())  # a plain dict: no _metadata
        old["weight1"] = old.pop("out_weight1").t().contiguous()  # how it used to be saved
        other = DenseMlp(3, hidden, out)
        other.load_state_dict(old)
        assert torch.equal(other(x), dense(x))
        third = DenseMlp(3, hidden, out)
        third.load_state_dict(dense.state_dict())  # the current layout loads unchanged
        assert torch.equal(third(x), dense(x))


def test_dense_mlp_follows_device_moves_and_deepcopy():
    dense = DenseMlp(3, [4], 1)
    dense(torch.randn(2, 3))  # fills the cached layer list
    clone = copy.deepcopy(dense)
    with torch.no_grad():
        clone.weight0.add_(1.0)
    x = torch.randn(2, 3)
    assert not torch.equal(clone(x), dense(x))
    dense.double()  # _apply may replace the parameters: the cache must follow
    assert dense(x.double()).dtype == torch.float64


def _adam_pair(fused_kwargs: dict, **kwargs):
    torch.manual_seed(0)
    params = [torch.nn.Parameter(torch.randn(4, 3)), torch.nn.Parameter(torch.randn(3)),
              torch.nn.Parameter(torch.randn(()))]
    groups = [params[:2], params[2:]]
    return params, [torch.optim.Adam(g, lr=1e-2, **fused_kwargs, **kwargs) for g in groups]


@pytest.mark.parametrize("kwargs", [{}, dict(weight_decay=0.1, amsgrad=True)])
def test_joint_fused_adam_step_is_bit_identical_to_separate_steps(kwargs):
    params, joint = _adam_pair(dict(fused=True), **kwargs)
    ref_params, separate = _adam_pair(dict(fused=True), **kwargs)
    stepper = FusedAdamStep(joint)
    for step in range(4):
        grads = [torch.randn_like(p) for p in params]
        for p, q, g in zip(params, ref_params, grads):
            p.grad, q.grad = g.clone(), g.clone()
        stepper.step()  # the first call goes through Adam.step, which creates the state
        for opt in separate:
            opt.step()
        for p, q in zip(params, ref_params):
            assert torch.equal(p, q), step
    for a, b in zip(joint, separate):
        assert torch.equal(a.state_dict()["state"][0]["step"], b.state_dict()["state"][0]["step"])


def test_joint_fused_adam_step_keeps_each_optimizers_hyperparameters():
    params, (a, b) = _adam_pair(dict(fused=True))
    ref_params, (ra, rb) = _adam_pair(dict(fused=True))
    stepper = FusedAdamStep([a, b])
    for lr_b in (1e-2, 0.5, 0.5):  # differing learning rates: one kernel call per group
        b.param_groups[0]["lr"] = rb.param_groups[0]["lr"] = lr_b
        for p, q in zip(params, ref_params):
            p.grad = q.grad = torch.ones_like(p)
        stepper.step()
        ra.step(), rb.step()
        for p, q in zip(params, ref_params):
            assert torch.equal(p, q)
    _, unfused = _adam_pair(dict(foreach=True))
    assert FusedAdamStep.for_optimizers(*unfused) is None
    with pytest.raises(ValueError, match="fused"):
        FusedAdamStep(unfused)


def test_frozen_parameters_block_weight_gradients_only():
    q = QofMuMlpModel((OBS_DIM,), [8], 1)
    a = torch.randn(4, 1, requires_grad=True)
    with frozen_parameters(q):
        q(torch.randn(4, OBS_DIM), None, None, a).sum().backward()
    assert a.grad is not None and all(p.grad is None for p in q.parameters())
    assert all(p.requires_grad for p in q.parameters())


# ---- agents -------------------------------------------------------------------------------------


@pytest.mark.parametrize("Agent", [DdpgAgent, Td3Agent, SacAgent])
def test_agent_actions_respect_asymmetric_bounds_and_eval_is_deterministic(Agent):
    spaces = box_spaces(low=(-1.0, 0.0), high=(3.0, 10.0))
    agent = make_agent(Agent, spaces)
    agent.give_min_itr_learn(0)
    o = 50 * torch.randn(64, OBS_DIM)
    a0, r0 = torch.zeros(64, 2), torch.zeros(64)
    agent.sample_mode(itr=0)
    action = agent.step(o, a0, r0).action
    assert action.shape == (64, 2)
    assert (action[:, 0] >= -1).all() and (action[:, 0] <= 3).all()
    assert (action[:, 1] >= 0).all() and (action[:, 1] <= 10).all()
    agent.eval_mode(itr=0)
    assert torch.equal(agent.step(o, a0, r0).action, agent.step(o, a0, r0).action)
    model_action = agent.to_model_action(action)
    torch.testing.assert_close(agent.to_env_action(model_action), action)


def test_sac_pretraining_uniform_and_wide_then_policy():
    agent = make_agent(SacAgent, pretrain_std="uniform")
    agent.give_min_itr_learn(3)
    o = torch.zeros(4000, OBS_DIM)
    agent.sample_mode(itr=2)
    action = agent.step(o, torch.zeros(4000, 1), torch.zeros(4000)).action
    assert abs(float(action.mean())) < 0.1 and float(action.std()) > 1.1  # U(-2, 2): std 1.15
    agent.sample_mode(itr=3)  # learning started: the policy's own (narrower) noise
    assert not agent._pretraining
    wide = make_agent(SacAgent, pretrain_std=0.75)
    wide.give_min_itr_learn(1)
    wide.sample_mode(itr=0)
    assert wide._pretraining


@pytest.mark.parametrize("cls", [DdpgAgent, Td3Agent])
def test_ddpg_pretraining_uniform_then_policy_noise(cls):
    """pretrain_std='uniform' (the TD3 paper's first steps): actions uniform over the box
    whatever the policy says, then the policy's mean plus action_std noise."""
    agent = make_agent(cls, pretrain_std="uniform")
    agent.give_min_itr_learn(3)
    o = torch.zeros(4000, OBS_DIM)
    agent.sample_mode(itr=2)
    action = agent.step(o, torch.zeros(4000, 1), torch.zeros(4000)).action
    assert abs(float(action.mean())) < 0.1 and float(action.std()) > 1.1  # U(-2, 2): std 1.15
    agent.sample_mode(itr=3)
    assert float(agent.distribution.std) == pytest.approx(agent.action_std)
    with pytest.raises(ValueError, match="pretrain_std='gauss'.*'uniform'"):
        cls(pretrain_std="gauss")


def test_ddpg_exploration_std_switches_after_pretraining():
    agent = make_agent(Td3Agent)
    agent.give_min_itr_learn(2)
    agent.sample_mode(itr=0)
    assert float(agent.distribution.std) == pytest.approx(0.5)
    agent.sample_mode(itr=2)
    assert float(agent.distribution.std) == pytest.approx(0.1)
    agent.eval_mode(itr=2)
    o = torch.randn(8, OBS_DIM)
    with torch.no_grad():
        mu = agent.model(o)
    torch.testing.assert_close(
        agent.step(o, torch.zeros(8, 1), torch.zeros(8)).action, agent.to_env_action(mu)
    )


@pytest.mark.parametrize("Agent", [DdpgAgent, Td3Agent, SacAgent])
def test_agent_state_dict_round_trip_covers_targets_and_alpha(Agent):
    torch.manual_seed(0)
    source = make_agent(Agent)
    for p in source.parameters():
        p.data.normal_()
    for module in source.target_modules().values():
        for p in module.parameters():
            p.data.normal_()
    state = source.state_dict()
    expected = {"model", "q_model", "target_q_model"}
    expected |= {"target_model"} if Agent is not SacAgent else {"temperature"}
    assert set(state) == expected
    torch.manual_seed(1)
    other = make_agent(Agent)
    other.load_state_dict(state)
    for key, value in other.state_dict().items():
        for name, tensor in value.items():
            assert torch.equal(tensor, state[key][name]), (key, name)
    whole = make_agent(Agent, initial_model_state_dict=state)
    assert torch.equal(next(iter(whole.target_q_model.parameters())),
                       next(iter(source.target_q_model.parameters())))
    with pytest.raises(KeyError, match="missing"):
        other.load_state_dict({"model": state["model"]})


def test_sac_agent_accepts_single_critic_class_and_policy_only_state_dict():
    source = make_agent(SacAgent)
    agent = make_agent(SacAgent, QModelCls=QofMuMlpModel,
                       initial_model_state_dict=source.model.state_dict())
    assert isinstance(agent.q_model, TwinQ)
    q1, q2 = agent.q(torch.randn(4, OBS_DIM), None, None, torch.zeros(4, 1))
    assert q1.shape == q2.shape == (4,)
    for a, b in zip(agent.model.parameters(), source.model.parameters()):
        assert torch.equal(a, b)


def test_td3_initial_q2_state_dict_needs_single_critic_class():
    q2_state = QofMuMlpModel((OBS_DIM,), SMALL["hidden_sizes"], 1).state_dict()
    agent = make_agent(Td3Agent, QModelCls=QofMuMlpModel, initial_q2_model_state_dict=q2_state)
    for name, value in q2_state.items():
        assert torch.equal(agent.q_model.q2.state_dict()[name], value)
        assert torch.equal(agent.target_q_model.q2.state_dict()[name], value)
    with pytest.raises(ValueError, match="single-critic QModelCls"):
        make_agent(Td3Agent, initial_q2_model_state_dict=q2_state)


@pytest.mark.parametrize("Agent", [DdpgAgent, Td3Agent, SacAgent])
def test_agents_reject_discrete_and_unbounded_actions(Agent):
    discrete = EnvSpaces(observation=FloatBox(-1, 1, shape=(OBS_DIM,)), action=IntBox(0, 3))
    with pytest.raises(TypeError, match="continuous action space"):
        Agent().initialize(discrete)
    unbounded = box_spaces(low=(-np.inf,), high=(np.inf,))
    with pytest.raises(ValueError, match="finite"):
        Agent().initialize(unbounded)


def test_agent_keyword_validation():
    with pytest.raises(ValueError, match="pretrain_std"):
        SacAgent(pretrain_std=0)
    with pytest.raises(ValueError, match="action_std"):
        DdpgAgent(action_std=-1)
    with pytest.raises(ValueError, match="target_noise_clip"):
        Td3Agent(target_noise_clip=0)


# ---- algorithms -----------------------------------------------------------------------------------


def test_api_defaults_match_the_contract():
    ddpg, td3, sac = DDPG(), TD3(), SAC()
    assert (ddpg.discount, ddpg.batch_size, ddpg.min_steps_learn, ddpg.replay_size,
            ddpg.replay_ratio, ddpg.target_update_tau, ddpg.target_update_interval,
            ddpg.policy_update_interval, ddpg.learning_rate, ddpg.q_learning_rate,
            ddpg.clip_grad_norm, ddpg.q_target_clip, ddpg.n_step_return,
            ddpg.bootstrap_timelimit) == (0.99, 64, 10_000, 1_000_000, 64, 0.01, 1, 1, 1e-4,
                                          1e-3, 1e8, 1e6, 1, True)
    assert (td3.batch_size, td3.replay_ratio, td3.target_update_tau,
            td3.target_update_interval, td3.policy_update_interval, td3.learning_rate,
            td3.q_learning_rate, td3.discount, td3.q_target_clip) == (
                100, 100, 0.005, 2, 2, 1e-3, 1e-3, 0.99, 1e6)
    assert (sac.discount, sac.batch_size, sac.min_steps_learn, sac.replay_size,
            sac.replay_ratio, sac.target_update_tau, sac.target_update_interval,
            sac.learning_rate, sac.fixed_alpha, sac.target_entropy, sac.reward_scale,
            sac.action_prior, sac.reparameterize, sac.clip_grad_norm, sac.n_step_return,
            sac.bootstrap_timelimit) == (0.99, 256, 10_000, 1_000_000, 256, 0.005, 1, 3e-4,
                                         None, "auto", 1, "uniform", True, 1e9, 1, True)


@pytest.mark.parametrize("kwargs, match", [
    (dict(discount=1.5), "discount"),
    (dict(batch_size=0), "batch_size"),
    (dict(target_update_tau=0), "target_update_tau"),
    (dict(action_prior="laplace"), "action_prior"),
    (dict(target_entropy="high"), "target_entropy"),
    (dict(fixed_alpha=-1.0), "fixed_alpha"),
    (dict(n_step_return=0), "n_step_return"),
])
def test_sac_rejects_bad_keywords(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SAC(**kwargs)


def test_initialize_errors_name_the_problem():
    agent = make_agent(SacAgent)
    with pytest.raises(ValueError, match="mid_batch_reset"):
        SAC().initialize(agent, 10, BatchSpec(1, 1), mid_batch_reset=False,
                         examples=examples_for(box_spaces()))
    with pytest.raises(ValueError, match="env_info.timeout"):
        make_algo(SAC(), agent, timeout=False)
    make_algo(SAC(bootstrap_timelimit=False, replay_size=100), agent, timeout=False)


def fake_samples(spaces, T, B, seed=0):
    """A sampler batch as torch tensors: random transitions with an occasional done."""
    from rlpyt.samplers.samples import AgentSamples, EnvSamples, Samples

    g = torch.Generator().manual_seed(seed)
    A = spaces.action.shape[0]
    done = torch.rand(T, B, generator=g) < 0.1
    return Samples(
        agent=AgentSamples(action=4 * torch.rand(T, B, A, generator=g) - 2,
                           prev_action=torch.zeros(T, B, A), agent_info=None),
        env=EnvSamples(observation=torch.randn(T, B, OBS_DIM, generator=g),
                       reward=torch.randn(T, B, generator=g), prev_reward=torch.zeros(T, B),
                       done=done, env_info=EnvInfo(timeout=done & (torch.rand(T, B) < 0.5))),
    )


@pytest.mark.parametrize("replay_ratio, batch_size, expected", [
    (8, 8, [4, 4, 4]),       # 8 * (2 * 2) / 8 = 4 updates per iteration
    (2, 8, [1, 1, 1, 1]),    # 2 * 4 / 8 = 1
    (1, 8, [0, 1, 0, 1]),    # 0.5 per iteration: fractions carry over
])
def test_replay_ratio_sets_updates_per_iteration(replay_ratio, batch_size, expected):
    spaces = box_spaces()
    agent = make_agent(SacAgent)
    algo = make_algo(SAC(batch_size=batch_size, replay_ratio=replay_ratio,
                         min_steps_learn=8, replay_size=1000), agent, T=2, B=2)
    assert algo.min_itr_learn == 2 and agent.min_itr_learn == 2
    counts = []
    for itr in range(2 + len(expected)):
        info = algo.optimize_agent(itr, fake_samples(spaces, 2, 2, seed=itr))
        counts.append(len(info.qLoss))
    assert counts == [0, 0] + expected
    assert algo.update_counter == sum(expected)


def test_n_step_sac_learns_without_errors_and_reports_finite_diagnostics():
    spaces = box_spaces()
    agent = make_agent(SacAgent)
    algo = make_algo(SAC(batch_size=16, replay_ratio=16, min_steps_learn=0, n_step_return=3,
                         replay_size=1000, action_prior="gaussian"), agent, T=2, B=2)
    assert algo.min_itr_learn == 1  # 4 steps per env before a 3-step window completes
    for itr in range(6):
        info = algo.optimize_agent(itr, fake_samples(spaces, 2, 2, seed=itr))
    assert len(info.qLoss) == 4 and all(math.isfinite(v) for v in info.piLoss)
    assert info.alpha[-1] < 1.0  # the temperature moved


def test_sac_fixed_alpha_and_non_reparameterized_policy_loss():
    spaces = box_spaces()
    agent = make_agent(SacAgent)
    algo = make_algo(SAC(batch_size=16, replay_ratio=16, min_steps_learn=0, fixed_alpha=0.2,
                         reparameterize=False, replay_size=1000), agent)
    assert set(algo.optim_state_dict()) == {"pi", "q"}
    before = [p.detach().clone() for p in agent.model.parameters()]
    for itr in range(3):
        info = algo.optimize_agent(itr, fake_samples(spaces, 4, 2, seed=itr))
    assert info.alpha == pytest.approx([0.2] * len(info.alpha))
    assert any(not torch.equal(a, b) for a, b in zip(before, agent.model.parameters()))


def test_likelihood_ratio_policy_gradient_improves_a_bandit():
    """With reparameterize=False the policy still moves toward higher Q."""
    torch.manual_seed(0)
    agent = make_agent(SacAgent)
    algo = make_algo(SAC(batch_size=64, min_steps_learn=0, fixed_alpha=0.01,
                         reparameterize=False, learning_rate=3e-2), agent)
    # Replace the critic by a fixed one preferring action +1 (in model units).
    q_pref = lambda o, pa, pr, a: (-(a[..., 0] - 1) ** 2, -(a[..., 0] - 1) ** 2)
    agent.q = agent.q_for_policy = q_pref
    inputs = AgentInputs(torch.randn(64, OBS_DIM), torch.zeros(64, 1), torch.zeros(64))
    start = float(agent.pi(*inputs)[2].mean.detach().mean())
    for _ in range(150):
        new_action, log_pi, dist_info = agent.pi(*inputs)
        loss = algo.pi_loss(inputs, new_action, log_pi, dist_info, 0.01, None)
        algo.gradient_step(loss, "pi")
    assert float(agent.pi(*inputs)[2].mean.detach().mean()) > start + 0.5


def test_td3_updates_policy_and_targets_every_second_update():
    spaces = box_spaces()
    agent = make_agent(Td3Agent)
    algo = make_algo(TD3(batch_size=8, replay_ratio=8, min_steps_learn=0, replay_size=1000),
                     agent, T=2, B=1)
    algo.optimize_agent(0, fake_samples(spaces, 2, 1, seed=0))  # too short to learn yet
    info = algo.optimize_agent(1, fake_samples(spaces, 2, 1, seed=1))
    assert len(info.qLoss) == 2 and len(info.muLoss) == 1
    info = algo.optimize_agent(2, fake_samples(spaces, 2, 1, seed=2))
    assert len(info.qLoss) == 2 and len(info.muLoss) == 1


def test_optimizer_state_dict_covers_every_optimizer():
    agent = make_agent(SacAgent)
    assert set(make_algo(SAC(), agent).optim_state_dict()) == {"pi", "q", "alpha"}
    assert set(make_algo(DDPG(), make_agent(DdpgAgent)).optim_state_dict()) == {"mu", "q"}
    assert set(make_algo(TD3(), make_agent(Td3Agent)).optim_state_dict()) == {"mu", "q"}
    with pytest.raises(KeyError, match="alpha"):
        make_algo(SAC(), make_agent(SacAgent)).load_optim_state_dict({"pi": {}, "q": {}})


@pytest.mark.parametrize("Agent, Algo", [(SacAgent, SAC), (Td3Agent, TD3), (DdpgAgent, DDPG)])
def test_resume_from_state_dicts_is_exact(Agent, Algo):
    """Agent + optimizer state dicts saved mid-training, loaded into fresh objects, continue
    exactly as the original run does."""
    spaces = box_spaces()
    kwargs = dict(batch_size=8, replay_ratio=8, min_steps_learn=0, replay_size=1000)

    def build(seed):
        torch.manual_seed(seed)
        agent = make_agent(Agent)
        return agent, make_algo(Algo(**kwargs), agent, T=2, B=2)

    agent, algo = build(0)
    for itr in range(3):
        algo.optimize_agent(itr, fake_samples(spaces, 2, 2, seed=itr))
    agent_state = copy.deepcopy(agent.state_dict())
    optim_state = copy.deepcopy(algo.optim_state_dict())
    algo_state = copy.deepcopy(algo.state_dict())
    replay = copy.deepcopy(algo.replay_buffer)
    rng = torch.get_rng_state(), np.random.get_state()
    for itr in range(3, 5):
        algo.optimize_agent(itr, fake_samples(spaces, 2, 2, seed=itr))

    resumed_agent, resumed_algo = build(1)
    resumed_agent.load_state_dict(agent_state)
    resumed_algo.load_optim_state_dict(optim_state)
    resumed_algo.load_state_dict(algo_state)
    resumed_algo.replay_buffer = replay
    torch.set_rng_state(rng[0])
    np.random.set_state(rng[1])
    for itr in range(3, 5):
        resumed_algo.optimize_agent(itr, fake_samples(spaces, 2, 2, seed=itr))
    for key, value in agent.state_dict().items():
        for name, tensor in value.items():
            assert torch.equal(tensor, resumed_agent.state_dict()[key][name]), (key, name)
    assert resumed_algo.update_counter == algo.update_counter


@pytest.mark.parametrize("max_norm", [1.0, 25.0, 1e9])  # clip all, clip some, clip none
def test_clip_grad_norms_matches_torch_per_group(max_norm):
    torch.manual_seed(0)
    groups = [[torch.nn.Parameter(torch.randn(5, 3)), torch.nn.Parameter(torch.randn(3))],
              [torch.nn.Parameter(torch.randn(4))]]
    for group in groups:
        for p in group:
            p.grad = 10 * torch.randn_like(p)
    reference = copy.deepcopy(groups)
    for group in reference:
        for p, q in zip(group, groups[reference.index(group)]):
            p.grad = q.grad.clone()
    norms = clip_grad_norms(groups, max_norm)
    for group, ref, norm in zip(groups, reference, norms):
        expected = torch.nn.utils.clip_grad_norm_(ref, max_norm)
        torch.testing.assert_close(norm, expected)
        for p, q in zip(group, ref):
            torch.testing.assert_close(p.grad, q.grad)


def test_diagnostics_raise_on_nan_naming_the_term():
    diagnostics = Diagnostics(("qLoss", "piLoss"))
    diagnostics.add(qLoss=torch.tensor(1.0), piLoss=torch.tensor(float("nan")))
    from collections import namedtuple

    with pytest.raises(FloatingPointError, match="piLoss"):
        diagnostics.opt_info(namedtuple("Info", ["qLoss", "piLoss"]), "SAC", 0)


# ---- data parallel --------------------------------------------------------------------------------


@pytest.fixture
def gloo_world(tmp_path):
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0,
                            world_size=1)
    yield
    dist.destroy_process_group()


@pytest.mark.parametrize("Agent, Algo", [(SacAgent, SAC), (Td3Agent, TD3), (DdpgAgent, DDPG)])
def test_data_parallel_trains_like_a_plain_agent(gloo_world, Agent, Algo):
    """One-process DistributedDataParallel: the same updates as without it, and state
    dicts without the ``module.`` prefix."""
    spaces = box_spaces()
    kwargs = dict(batch_size=8, replay_ratio=8, min_steps_learn=0, replay_size=1000)
    results = []
    for parallel in (False, True):
        torch.manual_seed(0)
        np.random.seed(0)
        agent = make_agent(Agent)
        if parallel:
            assert agent.data_parallel() is None
            assert all(isinstance(m, torch.nn.parallel.DistributedDataParallel)
                       for m in agent.trained_modules().values())
        algo = make_algo(Algo(**kwargs), agent, T=2, B=2)
        for itr in range(4):
            agent.sample_mode(itr)
            agent.step(torch.randn(2, OBS_DIM), torch.zeros(2, 1), torch.zeros(2))
            agent.train_mode(itr)
            algo.optimize_agent(itr, fake_samples(spaces, 2, 2, seed=itr))
        results.append(agent.state_dict())
    plain, parallel = results
    assert not any(name.startswith("module.") for value in parallel.values() for name in value)
    for key in plain:
        for name, tensor in plain[key].items():
            torch.testing.assert_close(parallel[key][name], tensor, rtol=1e-5, atol=1e-6)


def test_async_initialize_shares_a_replay_and_takes_updates_per_sync():
    spaces = box_spaces()
    agent = make_agent(SacAgent)
    algo = SAC(batch_size=8, min_steps_learn=8, replay_size=1000, updates_per_sync=3)
    replay = algo.async_initialize(agent, sampler_n_itr=10, batch_spec=BatchSpec(2, 2),
                                   mid_batch_reset=True, examples=examples_for(spaces))
    algo.optim_initialize(rank=0)
    assert replay.async_ and replay is algo.replay_buffer
    for itr in range(3):  # what the sampler processes do
        replay.append_samples(algo.samples_to_buffer(fake_samples(spaces, 2, 2, seed=itr)))
    assert len(algo.optimize_agent(0, samples=None, sampler_itr=1).qLoss) == 0  # too early
    assert len(algo.optimize_agent(1, samples=None, sampler_itr=2).qLoss) == 3


def test_integral_float_keywords_are_accepted_as_ints():
    algo = SAC(min_steps_learn=1e4, replay_size=1e6, batch_size=256.0)
    assert (algo.min_steps_learn, algo.replay_size, algo.batch_size) == (10_000, 1_000_000, 256)
    assert isinstance(algo.batch_size, int)
    with pytest.raises(ValueError, match="min_steps_learn=0.5"):
        SAC(min_steps_learn=0.5)
