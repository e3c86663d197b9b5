"""Return/advantage math (rlpyt.utils.returns) against plain-Python double loops.

Each reference below is written as an explicit forward sum over future steps for
one column at a time, not as the backward recursion the library uses, so the two
computations are independent.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from rlpyt.algos import utils as algo_utils
from rlpyt.utils.returns import (
    discount_return,
    discount_return_n_step,
    generalized_advantage_estimation,
    inverse_value_rescale,
    lambda_returns,
    timeout_bootstrapped_reward,
    valid_from_done,
    value_rescale,
    vtrace,
)

settings.register_profile("returns", max_examples=60, deadline=None)
settings.load_profile("returns")

KINDS = {
    "numpy": lambda a: np.asarray(a),
    "torch": lambda a: torch.as_tensor(np.asarray(a)),
}
finite = st.floats(-10, 10, allow_nan=False, width=64)
unit = st.floats(0, 1, allow_nan=False)


@st.composite
def batches(draw, max_T=7, max_B=3):
    """A random [T, B] batch: reward, value, done, bootstrap_value, timeout stuff."""
    T = draw(st.integers(1, max_T))
    B = draw(st.integers(1, max_B))
    reward = draw(arrays(np.float64, (T, B), elements=finite))
    value = draw(arrays(np.float64, (T, B), elements=finite))
    done = draw(arrays(np.bool_, (T, B)))
    bootstrap = draw(arrays(np.float64, (B,), elements=finite))
    return reward, value, done, bootstrap


def to_numpy(x):
    return x.numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


def assert_close(actual, expected, tol=1e-9):
    np.testing.assert_allclose(to_numpy(actual), expected, rtol=tol, atol=tol)


# ---- plain-loop references -------------------------------------------------------------


def ref_discount_return(reward, done, bootstrap, discount):
    T, B = reward.shape
    out = np.zeros((T, B))
    for b in range(B):
        for t in range(T):
            total, scale, ended = 0.0, 1.0, False
            for k in range(t, T):
                total += scale * reward[k, b]
                scale *= discount
                if done[k, b]:
                    ended = True
                    break
            if not ended:
                total += scale * bootstrap[b]
            out[t, b] = total
    return out


def ref_next_value(value, done, bootstrap, k, b):
    """V of the state after step k (0 after a done)."""
    if done[k, b]:
        return 0.0
    return bootstrap[b] if k == value.shape[0] - 1 else value[k + 1, b]


def ref_gae(reward, value, done, bootstrap, discount, lam):
    T, B = reward.shape
    adv = np.zeros((T, B))
    for b in range(B):
        for t in range(T):
            total, scale = 0.0, 1.0
            for k in range(t, T):
                delta = reward[k, b] + discount * ref_next_value(value, done, bootstrap, k, b)
                total += scale * (delta - value[k, b])
                scale *= discount * lam
                if done[k, b]:
                    break
            adv[t, b] = total
    return adv


def ref_n_step(reward, done, n_step, discount, do_truncated):
    T, B = reward.shape
    length = T if do_truncated else T - n_step + 1
    ret = np.zeros((length, B))
    done_n = np.zeros((length, B), dtype=bool)
    for b in range(B):
        for t in range(length):
            for k in range(n_step):
                if t + k >= T:
                    break
                ret[t, b] += discount**k * reward[t + k, b]
                if done[t + k, b]:
                    done_n[t, b] = True
                    break
    return ret, done_n


def ref_vtrace(reward, value, done, bootstrap, discount, log_rho, rho_bar, c_bar):
    T, B = reward.shape
    ratio = np.exp(log_rho)
    vs = np.zeros((T, B))
    pg_adv = np.zeros((T, B))
    for b in range(B):
        for t in range(T):
            total, weight = 0.0, 1.0  # weight = prod_{t<=i<s} gamma_i c_i
            for s in range(t, T):
                gamma_s = 0.0 if done[s, b] else discount
                v_next = bootstrap[b] if s == T - 1 else value[s + 1, b]
                rho = min(ratio[s, b], rho_bar)
                total += weight * rho * (reward[s, b] + gamma_s * v_next - value[s, b])
                weight *= gamma_s * min(ratio[s, b], c_bar)
            vs[t, b] = value[t, b] + total
    for b in range(B):
        for t in range(T):
            gamma_t = 0.0 if done[t, b] else discount
            vs_next = bootstrap[b] if t == T - 1 else vs[t + 1, b]
            rho = min(ratio[t, b], rho_bar)
            pg_adv[t, b] = rho * (reward[t, b] + gamma_t * vs_next - value[t, b])
    return vs, pg_adv


# ---- properties ------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
@given(batch=batches(), discount=unit)
def test_discount_return_matches_loop(kind, batch, discount):
    reward, _, done, bootstrap = batch
    k = KINDS[kind]
    out = discount_return(k(reward), k(done), k(bootstrap), discount)
    assert type(out) is type(k(reward))
    assert_close(out, ref_discount_return(reward, done, bootstrap, discount))


@pytest.mark.parametrize("kind", KINDS)
@given(batch=batches(), discount=unit, lam=unit)
def test_gae_matches_loop(kind, batch, discount, lam):
    reward, value, done, bootstrap = batch
    k = KINDS[kind]
    adv, ret = generalized_advantage_estimation(
        k(reward), k(value), k(done), k(bootstrap), discount, lam
    )
    expected = ref_gae(reward, value, done, bootstrap, discount, lam)
    assert_close(adv, expected)
    assert_close(ret, expected + value)


@given(batch=batches(), discount=unit)
def test_gae_lambda_one_is_discounted_return_minus_value(batch, discount):
    reward, value, done, bootstrap = batch
    adv, ret = generalized_advantage_estimation(reward, value, done, bootstrap, discount, 1.0)
    expected = ref_discount_return(reward, done, bootstrap, discount)
    assert_close(ret, expected, tol=1e-8)
    assert_close(adv, expected - value, tol=1e-8)


@pytest.mark.parametrize("kind", KINDS)
@given(batch=batches(), discount=unit, lam=unit)
def test_lambda_returns_equal_gae_returns(kind, batch, discount, lam):
    reward, value, done, bootstrap = batch
    k = KINDS[kind]
    out = lambda_returns(k(reward), k(value), k(done), k(bootstrap), discount, lam)
    expected = ref_gae(reward, value, done, bootstrap, discount, lam) + value
    assert_close(out, expected, tol=1e-8)


@pytest.mark.parametrize("kind", KINDS)
@given(batch=batches(), discount=unit, n_step=st.integers(1, 4), do_truncated=st.booleans())
def test_n_step_matches_loop(kind, batch, discount, n_step, do_truncated):
    reward, _, done, _ = batch
    if not do_truncated and reward.shape[0] < n_step:
        with pytest.raises(ValueError, match="n_step"):
            discount_return_n_step(reward, done, n_step, discount)
        return
    k = KINDS[kind]
    ret, done_n = discount_return_n_step(
        k(reward), k(done), n_step, discount, do_truncated=do_truncated
    )
    ref_ret, ref_done_n = ref_n_step(reward, done, n_step, discount, do_truncated)
    assert_close(ret, ref_ret)
    assert to_numpy(done_n).dtype == np.bool_
    np.testing.assert_array_equal(to_numpy(done_n), ref_done_n)


def test_n_step_writes_into_dest_and_keeps_float_done():
    reward = np.arange(8, dtype=np.float32).reshape(4, 2)
    done = np.zeros((4, 2), dtype=np.float32)
    done[1, 0] = 1
    ret_dest = np.full((3, 2), np.nan, dtype=np.float32)
    done_dest = np.full((3, 2), -1, dtype=np.float32)
    ret, done_n = discount_return_n_step(reward, done, 2, 0.5, ret_dest, done_dest)
    assert ret is ret_dest and done_n is done_dest
    assert ret[0, 0] == 0 + 0.5 * 2 and done_n[0, 0] == 1
    assert ret[1, 0] == 2 and done_n[1, 0] == 1  # the done at t=1 stops the sum
    assert ret[0, 1] == 1 + 0.5 * 3 and done_n[0, 1] == 0


@pytest.mark.parametrize("n_step", [0, -1, 1.5])
def test_n_step_rejects_bad_n_step(n_step):
    with pytest.raises(ValueError, match="n_step"):
        discount_return_n_step(np.zeros((5, 1)), np.zeros((5, 1)), n_step, 0.9)


@pytest.mark.parametrize("kind", KINDS)
@given(
    batch=batches(),
    discount=unit,
    log_rho=st.data(),
    rho_bar=st.floats(0.1, 3),
    c_bar=st.floats(0.1, 3),
)
def test_vtrace_matches_loop(kind, batch, discount, log_rho, rho_bar, c_bar):
    reward, value, done, bootstrap = batch
    log_rho = log_rho.draw(arrays(np.float64, reward.shape, elements=st.floats(-2, 2)))
    k = KINDS[kind]
    vs, pg_adv = vtrace(
        k(reward), k(value), k(done), k(bootstrap), discount, k(log_rho), rho_bar, c_bar
    )
    ref_vs, ref_pg = ref_vtrace(reward, value, done, bootstrap, discount, log_rho, rho_bar, c_bar)
    assert_close(vs, ref_vs, tol=1e-8)
    assert_close(pg_adv, ref_pg, tol=1e-8)


@given(batch=batches(), discount=unit)
def test_vtrace_on_policy_is_the_discounted_return(batch, discount):
    reward, value, done, bootstrap = batch
    vs, pg_adv = vtrace(reward, value, done, bootstrap, discount, np.zeros_like(reward))
    expected = ref_discount_return(reward, done, bootstrap, discount)
    assert_close(vs, expected, tol=1e-8)
    vs_next = np.concatenate([vs[1:], bootstrap[None]])
    assert_close(pg_adv, reward + discount * (1 - done) * vs_next - value, tol=1e-8)


def test_vtrace_untruncated_and_separate_pg_rho_bar():
    reward = np.array([[1.0], [2.0]])
    value = np.array([[0.5], [0.25]])
    done = np.zeros((2, 1), dtype=bool)
    bootstrap = np.array([1.0])
    log_rho = np.log(np.array([[2.0], [3.0]]))
    vs, pg_adv = vtrace(reward, value, done, bootstrap, 0.5, log_rho, None, None, pg_rho_bar=1.0)
    ref_vs, _ = ref_vtrace(reward, value, done, bootstrap, 0.5, log_rho, np.inf, np.inf)
    assert_close(vs, ref_vs)
    # pg advantage weighted by min(ratio, 1) = 1
    assert_close(pg_adv[1], reward[1] + 0.5 * bootstrap - value[1])


@pytest.mark.parametrize("kind", KINDS)
@given(done=arrays(np.bool_, st.tuples(st.integers(1, 8), st.integers(1, 4))))
def test_valid_from_done_matches_loop(kind, done):
    T, B = done.shape
    expected = np.zeros((T, B))
    for b in range(B):
        for t in range(T):
            expected[t, b] = 1.0
            if done[t, b]:
                break
    valid = valid_from_done(KINDS[kind](done))
    assert to_numpy(valid).dtype == np.float32
    np.testing.assert_array_equal(to_numpy(valid), expected)


def test_valid_from_done_keeps_float_dtype():
    done = torch.tensor([[0.0], [1.0], [0.0]], dtype=torch.float64)
    valid = valid_from_done(done)
    assert valid.dtype == torch.float64
    assert valid.squeeze(1).tolist() == [1.0, 1.0, 0.0]


@pytest.mark.parametrize("kind", KINDS)
@given(batch=batches(), timeout=st.data(), discount=unit)
def test_timeout_bootstrapped_reward_matches_loop(kind, batch, timeout, discount):
    reward, value, _, _ = batch
    timeout = timeout.draw(arrays(np.bool_, reward.shape))
    k = KINDS[kind]
    out = timeout_bootstrapped_reward(k(reward), k(timeout), k(value), discount)
    expected = reward.copy()
    for t in range(reward.shape[0]):
        for b in range(reward.shape[1]):
            if timeout[t, b]:
                expected[t, b] += discount * value[t, b]
    assert_close(out, expected)


def test_truncated_episode_bootstraps_from_timeout_value():
    """A timeout in mid-batch: targets before it bootstrap from V(final obs), not 0."""
    T, discount, lam = 6, 0.9, 0.8
    reward = np.array([[1.0, 0.5], [2.0, -1.0], [3.0, 0.0], [0.5, 2.0], [1.0, 1.0], [-1.0, 3.0]])
    value = np.array([[0.2, 0.1], [0.4, 0.3], [0.6, 0.5], [0.8, 0.7], [1.0, 0.9], [1.2, 1.1]])
    done = np.zeros((T, 2), dtype=bool)
    timeout = np.zeros((T, 2), dtype=bool)
    done[2, 0] = timeout[2, 0] = True  # column 0 truncated at t=2
    done[3, 1] = True  # column 1 truly terminates at t=3
    timeout_value = np.zeros((T, 2))
    timeout_value[2, 0] = 5.0  # V(final observation of the truncated episode)
    bootstrap = np.array([7.0, 8.0])

    def next_value(t, b):  # plain statement of what each step should bootstrap from
        if timeout[t, b]:
            return timeout_value[t, b]
        if done[t, b]:
            return 0.0
        return bootstrap[b] if t == T - 1 else value[t + 1, b]

    ref_adv = np.zeros((T, 2))
    ref_ret = np.zeros((T, 2))
    for b in range(2):
        for t in range(T):
            adv, ret, scale, ret_scale = 0.0, 0.0, 1.0, 1.0
            for k in range(t, T):
                adv += scale * (reward[k, b] + discount * next_value(k, b) - value[k, b])
                ret += ret_scale * reward[k, b]
                scale *= discount * lam
                ret_scale *= discount
                if done[k, b] or k == T - 1:
                    ret += ret_scale * next_value(k, b)  # ret_scale now gamma^(k-t+1)
                    break
            ref_adv[t, b], ref_ret[t, b] = adv, ret

    boot_reward = timeout_bootstrapped_reward(reward, timeout, timeout_value, discount)
    adv, _ = generalized_advantage_estimation(boot_reward, value, done, bootstrap, discount, lam)
    assert_close(adv, ref_adv)
    assert_close(discount_return(boot_reward, done, bootstrap, discount), ref_ret)
    # t=2, column 0: the return is r + gamma * V(final obs), not r alone.
    assert math.isclose(ref_ret[2, 0], 3.0 + 0.9 * 5.0)


@pytest.mark.parametrize("kind", KINDS)
@given(x=st.floats(-1e6, 1e6), eps=st.sampled_from([0.0, 1e-6, 1e-3, 1e-2, 0.5]))
def test_value_rescale_round_trip(kind, x, eps):
    k = KINDS[kind]
    xs = k(np.array([x, -x, 0.0]))
    back = inverse_value_rescale(value_rescale(xs, eps), eps)
    np.testing.assert_allclose(to_numpy(back), [x, -x, 0.0], rtol=1e-9, atol=1e-9)
    again = value_rescale(inverse_value_rescale(xs, eps), eps)
    np.testing.assert_allclose(to_numpy(again), [x, -x, 0.0], rtol=1e-9, atol=1e-9)


@given(x=st.floats(-1e4, 1e4), eps=st.floats(1e-3, 1.0))
def test_inverse_value_rescale_equals_textbook_form(x, eps):
    textbook = math.copysign(
        ((math.sqrt(1 + 4 * eps * (abs(x) + 1 + eps)) - 1) / (2 * eps)) ** 2 - 1, x
    )
    got = float(inverse_value_rescale(np.array(x), eps))
    assert math.isclose(got, textbook, rel_tol=1e-7, abs_tol=1e-7)


def test_value_rescale_known_values():
    x = np.array([3.0, -3.0, 0.0, 8.0])
    np.testing.assert_allclose(value_rescale(x, 0.0), [1.0, -1.0, 0.0, 2.0])
    np.testing.assert_allclose(value_rescale(x, 0.1), [1.3, -1.3, 0.0, 2.8])


def test_dest_arguments_are_filled_and_returned():
    reward = torch.ones(3, 2)
    done = torch.zeros(3, 2, dtype=torch.bool)
    bootstrap = torch.zeros(2)
    ret_dest = torch.full((3, 2), float("nan"))
    assert discount_return(reward, done, bootstrap, 1.0, ret_dest) is ret_dest
    assert ret_dest[:, 0].tolist() == [3.0, 2.0, 1.0]
    adv_dest, gae_ret_dest = torch.empty(3, 2), torch.empty(3, 2)
    adv, ret = generalized_advantage_estimation(
        reward, torch.zeros(3, 2), done, bootstrap, 1.0, 1.0, adv_dest, gae_ret_dest
    )
    assert adv is adv_dest and ret is gae_ret_dest
    assert ret[:, 1].tolist() == [3.0, 2.0, 1.0]


def stepwise_torch_gae(reward, value, done, bootstrap, discount, lam):
    """GAE written as one torch recursion per step, every term inside the loop."""
    advantage = torch.zeros_like(reward)
    not_done = 1 - done.to(reward.dtype)
    next_value, running = bootstrap, 0.0
    for t in reversed(range(len(reward))):
        delta = reward[t] + discount * not_done[t] * next_value - value[t]
        running = delta + discount * lam * not_done[t] * running
        advantage[t] = running
        next_value = value[t]
    return advantage


@pytest.mark.parametrize("lam", [1.0, 0.8])
def test_gae_on_cpu_tensors_is_bitwise_the_stepwise_recursion(lam):
    """The vectorised TD errors and the numpy-view recursion change no float32 bit."""
    g = torch.Generator().manual_seed(0)
    reward, value = torch.randn(32, 8, generator=g), torch.randn(32, 8, generator=g)
    done, bootstrap = torch.rand(32, 8, generator=g) < 0.1, torch.randn(8, generator=g)
    advantage, return_ = generalized_advantage_estimation(reward, value, done, bootstrap, 0.98, lam)
    expected = stepwise_torch_gae(reward, value, done, bootstrap, 0.98, lam)
    assert torch.equal(advantage, expected)
    assert torch.equal(return_, expected + value)
    ret = discount_return(reward, done, bootstrap, 0.98)
    assert torch.equal(ret, stepwise_torch_gae(reward, torch.zeros_like(value), done, bootstrap, 0.98, 1.0))


def test_returns_keep_gradients_of_inputs_that_require_them():
    """Inputs in an autograd graph take the torch loop (no numpy detour), so gradients flow."""
    reward = torch.ones(3, 2, requires_grad=True)
    done = torch.zeros(3, 2, dtype=torch.bool)
    advantage, _ = generalized_advantage_estimation(
        reward, torch.zeros(3, 2), done, torch.zeros(2), 0.5, 1.0
    )
    advantage.sum().backward()
    assert reward.grad[:, 0].tolist() == [1.0, 1.5, 1.75]
    torch.testing.assert_close(advantage.detach()[:, 0], torch.tensor([1.75, 1.5, 1.0]))


def test_algos_utils_reexports_the_shared_math():
    for name in (
        "discount_return",
        "generalized_advantage_estimation",
        "discount_return_n_step",
        "lambda_returns",
        "vtrace",
        "valid_from_done",
        "value_rescale",
        "inverse_value_rescale",
        "timeout_bootstrapped_reward",
    ):
        assert getattr(algo_utils, name) is globals()[name]
