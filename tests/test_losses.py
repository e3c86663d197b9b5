"""rlpyt.algos.losses against plain loops written from the papers' equations.

Every reference sums forward over future steps of one column at a time (the library
runs backward recursions vectorised over B), and handles time-limit truncations
itself: a truncated step's target continues with ``discount * V(final observation)``
and stops there, as an episode's end does.  The library instead adds that bootstrap
to the reward (``timeout_bootstrapped_reward``) and cuts at ``done``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from rlpyt.algos import losses as L
from rlpyt.distributions.categorical import Categorical, DistInfo

settings.register_profile("losses", max_examples=60, deadline=None)
settings.load_profile("losses")

finite = st.floats(-5, 5, allow_nan=False, width=64)
discounts = st.floats(0, 1, allow_nan=False)


@st.composite
def batches(draw, max_T=7, max_B=3):
    """reward, value, done, timeout (a subset of done), timeout_value, bootstrap, log_rho."""
    T, B = draw(st.integers(1, max_T)), draw(st.integers(1, max_B))
    reward = draw(arrays(np.float64, (T, B), elements=finite))
    value = draw(arrays(np.float64, (T, B), elements=finite))
    done = draw(arrays(np.bool_, (T, B)))
    timeout = done & draw(arrays(np.bool_, (T, B)))
    timeout_value = draw(arrays(np.float64, (T, B), elements=finite)) * timeout
    bootstrap = draw(arrays(np.float64, (B,), elements=finite))
    log_rho = draw(arrays(np.float64, (T, B), elements=st.floats(-1.5, 1.5)))
    return reward, value, done, timeout, timeout_value, bootstrap, log_rho


def library_reward(batch, discount):
    reward, _, _, timeout, timeout_value, _, _ = batch
    return L.timeout_bootstrapped_reward(reward, timeout, timeout_value, discount)


def next_value_ref(batch, t, b):
    """V(x[t + 1]) as the target of step t sees it: the final observation's value at a
    truncation, 0 after a termination, the bootstrap value past the batch end."""
    _, value, done, timeout, timeout_value, bootstrap, _ = batch
    if timeout[t, b]:
        return timeout_value[t, b]
    if done[t, b]:
        return 0.0
    return bootstrap[b] if t + 1 == value.shape[0] else value[t + 1, b]


def ends(batch, s, b):
    """Whether the trajectory stops after step s (termination or truncation)."""
    return bool(batch[2][s, b])


def td_error_ref(batch, s, b, discount):
    reward, value = batch[0], batch[1]
    return reward[s, b] + discount * next_value_ref(batch, s, b) - value[s, b]


def n_step_ref(batch, discount, n):
    reward = batch[0]
    T, B = reward.shape
    out = np.zeros((T, B))
    for b in range(B):
        for t in range(T):
            total = 0.0
            for k in range(n):
                s = t + k
                total += discount**k * reward[s, b]
                if ends(batch, s, b) or s + 1 == T or k + 1 == n:
                    total += discount ** (k + 1) * next_value_ref(batch, s, b)
                    break
            out[t, b] = total
    return out


def lambda_return_ref(batch, discount, lam):
    """Forward view: ``G^lambda = (1 - lam) sum_n lam^(n-1) G^(n)`` with the tail weight on
    the longest return (Sutton and Barto, eq. 12.3 for episodes ending in the batch)."""
    reward = batch[0]
    T, B = reward.shape
    out = np.zeros((T, B))
    for b in range(B):
        for t in range(T):
            returns = []  # G^(n) for n = 1 .. until the trajectory or batch ends
            total = 0.0
            for k in range(T - t):
                s = t + k
                total += discount**k * reward[s, b]
                returns.append(total + discount ** (k + 1) * next_value_ref(batch, s, b))
                if ends(batch, s, b):
                    break
            weights = [(1 - lam) * lam**i for i in range(len(returns) - 1)]
            weights.append(lam ** (len(returns) - 1))
            out[t, b] = sum(w * g for w, g in zip(weights, returns))
    return out


def vtrace_ref(batch, discount, rho_bar, c_bar, lam=1.0, weight_pg_advantage=True):
    """Espeholt et al. 2018, eq. 1 and the advantage of eq. 4, summed forward (the
    advantage without its rho factor unless ``weight_pg_advantage``)."""
    reward, value, _, _, _, _, log_rho = batch
    T, B = reward.shape
    ratio = np.exp(log_rho)
    rho = np.minimum(ratio, rho_bar)
    c = lam * np.minimum(ratio, c_bar)
    vs = np.zeros((T, B))
    for b in range(B):
        for t in range(T):
            total, trace = value[t, b], 1.0
            for s in range(t, T):
                total += discount ** (s - t) * trace * rho[s, b] * td_error_ref(batch, s, b,
                                                                              discount)
                if ends(batch, s, b):
                    break
                trace *= c[s, b]
            vs[t, b] = total
    advantage = np.zeros((T, B))
    for b in range(B):
        for t in range(T):
            if ends(batch, t, b) or t + 1 == T:
                next_vs = next_value_ref(batch, t, b)
            else:
                next_vs = vs[t + 1, b]
            weight = min(ratio[t, b], rho_bar) if weight_pg_advantage else 1.0
            advantage[t, b] = weight * (reward[t, b] + discount * next_vs - value[t, b])
    return vs, advantage


def importance_weighted_ref(batch, discount, rho_bar):
    """Per-decision importance sampling with the value as control variate:
    ``G[t] = V[t] + sum_s discount^(s-t) (prod_{t<=i<=s} rho[i]) delta[s]``."""
    reward, value, _, _, _, _, log_rho = batch
    rho = np.minimum(np.exp(log_rho), rho_bar)
    T, B = reward.shape
    out = np.zeros((T, B))
    for b in range(B):
        for t in range(T):
            total, weight = value[t, b], 1.0
            for s in range(t, T):
                weight *= rho[s, b]
                total += discount ** (s - t) * weight * td_error_ref(batch, s, b, discount)
                if ends(batch, s, b):
                    break
            out[t, b] = total
    return out


def close(actual, expected, tol=1e-9):
    actual = actual.numpy() if isinstance(actual, torch.Tensor) else actual
    np.testing.assert_allclose(actual, expected, rtol=tol, atol=tol)


def as_kind(kind, *xs):
    return xs if kind == "numpy" else tuple(torch.as_tensor(x) for x in xs)


# ---- returns ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["numpy", "torch"])
@given(batch=batches(), discount=discounts, n=st.integers(1, 9))
def test_n_step_returns_match_loop(kind, batch, discount, n):
    reward = library_reward(batch, discount)
    _, value, done, _, _, bootstrap, _ = batch
    got = L.n_step_returns(*as_kind(kind, reward, value, done, bootstrap), discount, n)
    close(got, n_step_ref(batch, discount, n))


@given(batch=batches(), discount=discounts)
def test_n_step_of_full_length_is_the_discounted_return(batch, discount):
    reward = library_reward(batch, discount)
    _, value, done, _, _, bootstrap, _ = batch
    full = L.n_step_returns(reward, value, done, bootstrap, discount, reward.shape[0])
    close(full, L.discount_return(reward, done, bootstrap, discount))


@pytest.mark.parametrize("kind", ["numpy", "torch"])
@given(batch=batches(), discount=discounts, lam=st.floats(0, 1))
def test_lambda_returns_and_gae_match_the_forward_view(kind, batch, discount, lam):
    reward = library_reward(batch, discount)
    _, value, done, _, _, bootstrap, _ = batch
    args = as_kind(kind, reward, value, done, bootstrap)
    expected = lambda_return_ref(batch, discount, lam)
    close(L.lambda_returns(*args, discount, lam), expected)
    advantage, return_ = L.generalized_advantage_estimation(*args, discount, lam)
    close(return_, expected)
    close(advantage, expected - value)


@pytest.mark.parametrize("kind", ["numpy", "torch"])
@given(batch=batches(), discount=discounts, rho_bar=st.floats(0.1, 3), c_bar=st.floats(0.1, 3),
       lam=st.floats(0, 1), weighted=st.booleans())
def test_vtrace_matches_the_papers_sums(kind, batch, discount, rho_bar, c_bar, lam, weighted):
    reward = library_reward(batch, discount)
    _, value, done, _, _, bootstrap, log_rho = batch
    vs, advantage = L.vtrace(*as_kind(kind, reward, value, done, bootstrap), discount,
                             *as_kind(kind, log_rho), rho_bar=rho_bar, c_bar=c_bar, lambda_=lam,
                             weight_pg_advantage=weighted)
    ref_vs, ref_advantage = vtrace_ref(batch, discount, rho_bar, c_bar, lam, weighted)
    close(vs, ref_vs)
    close(advantage, ref_advantage)


@given(batch=batches(), discount=discounts, lam=st.floats(0, 1))
def test_on_policy_vtrace_is_the_lambda_return(batch, discount, lam):
    """rho = c = 1 (log_rho = 0): v_s is the lambda-return of the same values (with
    lambda = 1, the n-step Bellman target of the paper's on-policy remark)."""
    reward = library_reward(batch, discount)
    _, value, done, _, _, bootstrap, _ = batch
    vs, advantage = L.vtrace(reward, value, done, bootstrap, discount, np.zeros_like(reward),
                             rho_bar=1.0, c_bar=1.0, lambda_=lam)
    close(vs, L.lambda_returns(reward, value, done, bootstrap, discount, lam))
    close(vs, lambda_return_ref(batch, discount, lam))
    if lam == 1:
        close(advantage, vs - value)


@pytest.mark.parametrize("bar", [math.inf, None])
@given(batch=batches(), discount=discounts)
def test_untruncated_vtrace_is_the_importance_weighted_return(bar, batch, discount):
    reward = library_reward(batch, discount)
    _, value, done, _, _, bootstrap, log_rho = batch
    vs, _ = L.vtrace(reward, value, done, bootstrap, discount, log_rho, rho_bar=bar, c_bar=bar)
    close(vs, importance_weighted_ref(batch, discount, math.inf), tol=1e-8)


@pytest.mark.parametrize("kind", ["numpy", "torch"])
@given(batch=batches(), discount=discounts, rho_bar=st.floats(0.1, 3) | st.just(math.inf))
def test_truncated_importance_weighted_returns_match_loop(kind, batch, discount, rho_bar):
    reward = library_reward(batch, discount)
    _, value, done, _, _, bootstrap, log_rho = batch
    got = L.importance_weighted_returns(*as_kind(kind, reward, value, done, bootstrap, ),
                                        discount, *as_kind(kind, log_rho), rho_bar=rho_bar)
    close(got, importance_weighted_ref(batch, discount, rho_bar), tol=1e-8)


def test_vtrace_targets_carry_no_gradient_into_the_values_they_are_built_from():
    """Algorithms pass detached values; the returns themselves keep gradients of inputs
    that require them (plain autograd), so callers must detach, as Impala does."""
    value = torch.zeros(3, 2, requires_grad=True)
    vs, _ = L.vtrace(torch.ones(3, 2), value, torch.zeros(3, 2), torch.zeros(2), 0.9,
                     torch.zeros(3, 2))
    assert vs.requires_grad


# ---- loss terms ------------------------------------------------------------------------


@st.composite
def step_tensors(draw, n_fields, max_T=5, max_B=3):
    T, B = draw(st.integers(1, max_T)), draw(st.integers(1, max_B))
    fields = [torch.as_tensor(draw(arrays(np.float64, (T, B), elements=finite)))
              for _ in range(n_fields)]
    valid = draw(st.none() | arrays(np.bool_, (T, B)))
    return fields, None if valid is None else torch.as_tensor(valid.astype(np.float64))


def mean_ref(values, valid):
    """Mean over entries whose valid is 1 (0 if there are none), by a plain loop."""
    total, count = 0.0, 0
    T, B = values.shape
    for t in range(T):
        for b in range(B):
            if valid is None or valid[t, b]:
                total += float(values[t, b])
                count += 1
    return total / max(count, 1)


@given(data=step_tensors(2))
def test_policy_gradient_loss_matches_loop(data):
    (log_prob, advantage), valid = data
    expected = -mean_ref(log_prob * advantage, valid)
    close(L.policy_gradient_loss(log_prob, advantage, valid), expected)


@given(data=step_tensors(2), ratio_clip=st.floats(0.01, 1))
def test_clipped_surrogate_loss_matches_loop(data, ratio_clip):
    (log_ratio, advantage), valid = data
    log_ratio = log_ratio / 5  # ratios around 1, with some beyond the clip
    T, B = log_ratio.shape
    terms = np.zeros((T, B))
    for t in range(T):
        for b in range(B):
            ratio = math.exp(float(log_ratio[t, b]))
            clipped = min(max(ratio, 1 - ratio_clip), 1 + ratio_clip)
            a = float(advantage[t, b])
            terms[t, b] = min(ratio * a, clipped * a)
    close(L.clipped_surrogate_loss(log_ratio, advantage, ratio_clip, valid),
          -mean_ref(terms, valid))


@given(data=step_tensors(2))
def test_value_loss_matches_loop(data):
    (value, target), valid = data
    close(L.value_loss(value, target, valid), mean_ref(0.5 * (value - target) ** 2, valid))


@given(data=step_tensors(3), clip=st.floats(0.01, 2))
def test_clipped_value_loss_matches_loop(data, clip):
    (value, old_value, target), valid = data
    T, B = value.shape
    terms = np.zeros((T, B))
    for t in range(T):
        for b in range(B):
            v, old, g = float(value[t, b]), float(old_value[t, b]), float(target[t, b])
            clipped = old + min(max(v - old, -clip), clip)
            terms[t, b] = 0.5 * max((v - g) ** 2, (clipped - g) ** 2)
    close(L.clipped_value_loss(value, old_value, target, clip, valid), mean_ref(terms, valid))


@given(data=step_tensors(1))
def test_entropy_loss_is_the_negated_valid_mean(data):
    (entropy,), valid = data
    close(L.entropy_loss(entropy, valid), -mean_ref(entropy, valid))


@given(data=step_tensors(1))
def test_approx_kl_matches_loop(data):
    (log_ratio,), valid = data
    log_ratio = log_ratio / 5
    terms = np.exp(log_ratio.numpy()) - 1 - log_ratio.numpy()
    close(L.approx_kl(log_ratio, valid), mean_ref(terms, valid))
    assert float(L.approx_kl(log_ratio, valid)) >= -1e-12  # never negative beyond rounding


@given(seed=st.integers(0, 2**16), valid_draw=st.booleans())
def test_kl_penalty_matches_loop(seed, valid_draw):
    generator = torch.Generator().manual_seed(seed)
    T, B, A = 3, 2, 4
    old = torch.softmax(torch.randn(T, B, A, generator=generator, dtype=torch.float64), -1)
    new = torch.softmax(torch.randn(T, B, A, generator=generator, dtype=torch.float64), -1)
    valid = (torch.rand(T, B, generator=generator) > 0.3).double() if valid_draw else None
    kl = np.zeros((T, B))
    for t in range(T):
        for b in range(B):
            kl[t, b] = sum(float(old[t, b, a]) * math.log(float(old[t, b, a]) / float(new[t, b, a]))
                           for a in range(A))
    got = L.kl_penalty(Categorical(A), DistInfo(prob=old), DistInfo(prob=new), valid)
    close(got, mean_ref(kl, valid), tol=1e-6)  # Categorical.kl adds a 1e-8 epsilon


def test_policy_gradient_loss_gradient_is_the_score_function():
    log_prob = torch.tensor([[-1.0, -2.0]], requires_grad=True)
    advantage = torch.tensor([[3.0, -1.0]])
    L.policy_gradient_loss(log_prob, advantage).backward()
    assert torch.equal(log_prob.grad, -advantage / 2)


# ---- a time-limit truncation in the middle of a batch ------------------------------------


def mid_batch_truncation():
    """A fixed off-policy batch, T=8, B=3, whose episodes hit a time limit mid-batch.

    Column 0 is truncated at t=3 and a new episode runs on, to a true termination at
    t=6 and into a third episode; column 1 is truncated at t=5 only; column 2 is
    truncated at t=0 and again at the last step (t=7).  Every ratio differs from 1
    (some beyond rho_bar=1) so that the truncations of V-trace's weights matter.
    """
    T, B = 8, 3
    rng = np.random.default_rng(27)
    reward = rng.uniform(0.5, 1.5, (T, B))
    value = rng.uniform(5.0, 10.0, (T, B))
    done = np.zeros((T, B), dtype=bool)
    timeout = np.zeros((T, B), dtype=bool)
    timeout_value = np.zeros((T, B))
    for t, b, final_value in ((3, 0, 9.5), (5, 1, 12.0), (0, 2, 4.0), (7, 2, 8.0)):
        done[t, b] = timeout[t, b] = True
        timeout_value[t, b] = final_value  # V(the truncated episode's final observation)
    done[6, 0] = True  # a true termination: nothing to bootstrap
    bootstrap = np.array([7.0, 6.0, 100.0])  # column 2's must not count (t=7 is an end)
    log_rho = rng.uniform(-0.7, 0.7, (T, B))
    return reward, value, done, timeout, timeout_value, bootstrap, log_rho


def treated_as_terminal(batch):
    """The same batch with its truncations read as true ends (the bug the test guards)."""
    reward, value, done, timeout, _, bootstrap, log_rho = batch
    return reward, value, done, timeout, np.zeros_like(reward), bootstrap, log_rho


DISCOUNT = 0.95


@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_every_estimator_bootstraps_a_mid_batch_truncation(kind):
    """Each return estimator, fed the library's timeout-bootstrapped reward, equals its
    plain forward loop, which continues a truncated step with ``discount * V(final obs)``
    and stops there; and each differs from reading the truncation as a termination."""
    batch = mid_batch_truncation()
    _, value, done, _, _, bootstrap, log_rho = batch
    reward = library_reward(batch, DISCOUNT)
    args = as_kind(kind, reward, value, done, bootstrap)
    (log_rho_k,) = as_kind(kind, log_rho)
    wrong = treated_as_terminal(batch)

    got_return = L.discount_return(args[0], args[2], args[3], DISCOUNT)
    close(got_return, lambda_return_ref(batch, DISCOUNT, 1.0))
    for n in (1, 3, 8):
        close(L.n_step_returns(*args, DISCOUNT, n), n_step_ref(batch, DISCOUNT, n))
    for lam in (0.0, 0.8, 1.0):
        expected = lambda_return_ref(batch, DISCOUNT, lam)
        close(L.lambda_returns(*args, DISCOUNT, lam), expected)
        advantage, _ = L.generalized_advantage_estimation(*args, DISCOUNT, lam)
        close(advantage, expected - value)
    for rho_bar, c_bar, lam in ((1.0, 1.0, 1.0), (1.5, 0.9, 0.95), (None, None, 1.0)):
        vs, pg_advantage = L.vtrace(*args, DISCOUNT, log_rho_k, rho_bar=rho_bar, c_bar=c_bar,
                                    lambda_=lam)
        bars = (math.inf if rho_bar is None else rho_bar, math.inf if c_bar is None else c_bar)
        ref_vs, ref_advantage = vtrace_ref(batch, DISCOUNT, *bars, lam)
        close(vs, ref_vs)
        close(pg_advantage, ref_advantage)
        wrong_vs, _ = vtrace_ref(wrong, DISCOUNT, *bars, lam)
        assert np.abs(ref_vs - wrong_vs)[:4, 0].min() > 0.1  # every step before t=3 differs
    for rho_bar in (0.8, math.inf):
        close(L.importance_weighted_returns(*args, DISCOUNT, log_rho_k, rho_bar=rho_bar),
              importance_weighted_ref(batch, DISCOUNT, rho_bar), tol=1e-8)

    # The truncated step itself: its reward plus the discounted final value, then nothing.
    r, t3 = batch[0], lambda_return_ref(batch, DISCOUNT, 1.0)
    assert t3[3, 0] == pytest.approx(r[3, 0] + DISCOUNT * 9.5)
    assert t3[7, 2] == pytest.approx(r[7, 2] + DISCOUNT * 8.0)  # not the bootstrap of 100
    assert t3[6, 0] == pytest.approx(r[6, 0])  # the true termination


def test_n_step_sums_stop_at_a_mid_batch_truncation():
    """The replay's n-step sums (bootstrapped by the buffers themselves) stop at a
    truncation as at any end, and flag it in ``done_n``."""
    reward, _, done, _, _, _, _ = mid_batch_truncation()
    T, B = reward.shape
    n = 3
    got, done_n = L.discount_return_n_step(reward, done, n, DISCOUNT, do_truncated=True)
    for b in range(B):
        for t in range(T):
            total, ended = 0.0, False
            for k in range(min(n, T - t)):
                total += DISCOUNT**k * reward[t + k, b]
                if done[t + k, b]:
                    ended = True
                    break
            assert got[t, b] == pytest.approx(total)
            assert bool(done_n[t, b]) == ended


def test_impala_and_a2c_targets_bootstrap_a_mid_batch_truncation():
    """The algorithms' own paths from a sampler batch (Impala's ``vtrace_targets``, A2C's
    ``process_returns``) add the timeout bootstrap before their estimators."""
    from types import SimpleNamespace

    from rlpyt.algos.pg.a2c import A2C
    from rlpyt.algos.pg.impala import Impala, ImpalaBatch

    batch = mid_batch_truncation()
    reward, value, done, timeout, timeout_value, bootstrap, log_rho = (
        torch.as_tensor(x) for x in batch)
    impala = Impala(discount=DISCOUNT, rho_bar=1.0, c_bar=1.0, vtrace_lambda=0.9)
    impala.mid_batch_reset = True
    fields = dict.fromkeys(ImpalaBatch._fields)
    fields.update(reward=reward, done=done, timeout=timeout, timeout_value=timeout_value,
                  bootstrap_value=bootstrap)
    vs, pg_advantage, valid = impala.vtrace_targets(ImpalaBatch(**fields), value, log_rho)
    ref_vs, ref_advantage = vtrace_ref(batch, DISCOUNT, 1.0, 1.0, 0.9)
    close(vs, ref_vs)
    close(pg_advantage, ref_advantage)
    assert valid is None

    a2c = A2C(discount=DISCOUNT, gae_lambda=0.7)
    a2c.mid_batch_reset = True
    samples = SimpleNamespace(
        env=SimpleNamespace(reward=reward, done=done, env_info=SimpleNamespace(timeout=timeout)),
        agent=SimpleNamespace(agent_info=SimpleNamespace(value=value), bootstrap_value=bootstrap,
                              timeout_value=timeout_value))
    return_, advantage, _ = a2c.process_returns(samples)
    expected = lambda_return_ref(batch, DISCOUNT, 0.7)
    close(return_, expected)
    close(advantage, expected - batch[1])
