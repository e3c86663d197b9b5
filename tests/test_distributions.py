"""Distributions checked against torch.distributions and plain-loop references."""

import math

import hypothesis.strategies as st
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from torch.distributions import (
    AffineTransform,
    Independent,
    Normal,
    TanhTransform,
    TransformedDistribution,
    kl_divergence,
)
from torch.distributions import Categorical as TorchCategorical

from rlpyt.distributions.categorical import Categorical, DistInfo
from rlpyt.distributions.epsilon_greedy import CategoricalEpsilonGreedy, EpsilonGreedy
from rlpyt.distributions.gaussian import DistInfo as GaussianDistInfo
from rlpyt.distributions.gaussian import DistInfoStd, Gaussian
from rlpyt.utils.tensor import select_at_indexes

torch.set_default_dtype(torch.float32)
FAST = settings(max_examples=25, deadline=None)


def random_probs(*shape, generator=None):
    return torch.softmax(2 * torch.randn(*shape, generator=generator), dim=-1)


def loop_masked_mean(values, valid):
    """Plain-loop masked mean over [T, B]."""
    total, count = 0.0, 0
    for t in range(values.shape[0]):
        for b in range(values.shape[1]):
            if valid[t, b]:
                total += float(values[t, b])
                count += 1
    return total / max(count, 1)


# ---------------------------------------------------------------- Categorical


@pytest.fixture
def cat_data():
    g = torch.Generator().manual_seed(0)
    T, B, A = 5, 3, 4
    old, new = random_probs(T, B, A, generator=g), random_probs(T, B, A, generator=g)
    x = torch.randint(A, (T, B), generator=g)
    valid = torch.rand(T, B, generator=g) < 0.6
    valid[0, 0] = True
    return Categorical(A), DistInfo(old), DistInfo(new), x, valid


def test_categorical_matches_torch(cat_data):
    dist, old, new, x, _ = cat_data
    t_old, t_new = TorchCategorical(probs=old.prob), TorchCategorical(probs=new.prob)
    torch.testing.assert_close(dist.kl(old, new), kl_divergence(t_old, t_new), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(dist.log_likelihood(x, new), t_new.log_prob(x), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(dist.entropy(old), t_old.entropy(), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(dist.perplexity(old), t_old.entropy().exp(), atol=1e-5, rtol=1e-5)
    ratio = torch.exp(t_new.log_prob(x) - t_old.log_prob(x))
    torch.testing.assert_close(dist.likelihood_ratio(x, old, new), ratio, rtol=1e-5, atol=0)


def test_categorical_valid_means_match_loop(cat_data):
    dist, old, new, _, valid = cat_data
    t_old, t_new = TorchCategorical(probs=old.prob), TorchCategorical(probs=new.prob)
    kl, ent = kl_divergence(t_old, t_new), t_old.entropy()
    assert dist.mean_kl(old, new, valid).item() == pytest.approx(
        loop_masked_mean(kl, valid), abs=1e-5
    )
    assert dist.mean_entropy(old, valid).item() == pytest.approx(
        loop_masked_mean(ent, valid), abs=1e-5
    )
    assert dist.mean_perplexity(old, valid).item() == pytest.approx(
        loop_masked_mean(ent.exp(), valid), abs=1e-5
    )
    assert dist.mean_kl(old, new).item() == pytest.approx(kl.mean().item(), rel=1e-5)


def test_categorical_log_likelihood_is_the_generic_selection(cat_data):
    """The direct gather gives exactly log(select_at_indexes(x, prob) + eps), with
    integer actions of any dtype, and still rejects actions of the wrong shape."""
    dist, _, new, x, _ = cat_data
    expected = torch.log(select_at_indexes(x, new.prob) + 1e-8)
    assert torch.equal(dist.log_likelihood(x, new), expected)
    assert torch.equal(dist.log_likelihood(x.to(torch.int32), new), expected)
    with pytest.raises(ValueError, match="shape"):
        dist.log_likelihood(x[:2], new)  # [2, B] actions for [T, B] probabilities


def test_categorical_sample_is_the_draw_of_torch_multinomial():
    """Same random numbers, same actions as ``torch.multinomial(prob, 1)``, for any
    leading dims and both action dtypes."""
    prob = torch.softmax(3 * torch.randn(5, 8, 4, generator=torch.Generator().manual_seed(1)), -1)
    for dtype in (torch.long, torch.int32):
        dist = Categorical(4, dtype=dtype)
        for p in (prob[0], prob, prob[0, 0]):
            torch.manual_seed(2)
            drawn = dist.sample(DistInfo(p))
            torch.manual_seed(2)
            reference = torch.multinomial(p.reshape(-1, 4), 1).reshape(p.shape[:-1])
            assert drawn.shape == p.shape[:-1] and drawn.dtype == dtype
            assert torch.equal(drawn.long(), reference)


def test_categorical_zero_probability_is_finite_and_never_sampled():
    dist = Categorical(3)
    info = DistInfo(torch.tensor([[0.0, 0.5, 0.5]]).expand(2000, 3))
    assert (dist.sample(info) != 0).all()
    assert torch.isfinite(dist.log_likelihood(torch.zeros(2000, dtype=torch.long), info)).all()
    assert torch.isfinite(dist.entropy(info)).all()


def test_categorical_sample_frequencies_and_dtype():
    torch.manual_seed(1)
    prob = torch.tensor([0.1, 0.2, 0.7])
    dist = Categorical(3, dtype=torch.int32)
    samples = dist.sample(DistInfo(prob.expand(100, 200, 3)))
    assert samples.shape == (100, 200) and samples.dtype == torch.int32
    freq = torch.bincount(samples.flatten().long(), minlength=3).float() / samples.numel()
    torch.testing.assert_close(freq, prob, atol=0.01, rtol=0)
    single = dist.sample(DistInfo(prob))
    assert single.shape == ()


@FAST
@given(st.integers(1, 6), st.integers(1, 5), st.integers(0, 2**31 - 1))
def test_categorical_kl_properties(A, B, seed):
    g = torch.Generator().manual_seed(seed)
    dist = Categorical(A)
    p, q = DistInfo(random_probs(B, A, generator=g)), DistInfo(random_probs(B, A, generator=g))
    assert (dist.kl(p, p).abs() < 1e-6).all()
    assert (dist.kl(p, q) > -1e-6).all()
    assert (dist.entropy(p) <= math.log(A) + 1e-5).all()


@FAST
@given(st.integers(1, 8), st.lists(st.integers(0, 7), min_size=0, max_size=6))
def test_onehot_roundtrip(A, raw):
    dist = Categorical(A)
    idx = torch.tensor([i % A for i in raw], dtype=torch.long)
    onehot = dist.to_onehot(idx)
    assert onehot.shape == (len(raw), A) and onehot.dtype == torch.float
    assert torch.equal(onehot.sum(-1), torch.ones(len(raw)))
    assert torch.equal(dist.from_onehot(onehot), idx)


@pytest.mark.parametrize("bad", [0, -2, 1.5, True])
def test_categorical_rejects_bad_dim(bad):
    with pytest.raises(ValueError, match="dim"):
        Categorical(bad)


# ---------------------------------------------------------------- Gaussian


def torch_normal(mean, log_std):
    return Independent(Normal(mean, log_std.exp()), 1)


def torch_squashed(mean, log_std, scale):
    transforms = [TanhTransform(), AffineTransform(0.0, scale)]
    return TransformedDistribution(torch_normal(mean, log_std), transforms)


@pytest.fixture
def gauss_data():
    g = torch.Generator().manual_seed(0)
    T, B, D = 4, 3, 2
    mk = lambda: DistInfoStd(
        mean=torch.randn(T, B, D, generator=g), log_std=0.5 * torch.randn(T, B, D, generator=g)
    )
    old, new = mk(), mk()
    x = torch.randn(T, B, D, generator=g)
    valid = torch.rand(T, B, generator=g) < 0.5
    valid[0, 0] = True
    return old, new, x, valid


def test_gaussian_matches_torch(gauss_data):
    old, new, x, valid = gauss_data
    dist = Gaussian(2)
    t_old, t_new = torch_normal(*old), torch_normal(*new)
    torch.testing.assert_close(dist.log_likelihood(x, new), t_new.log_prob(x))
    torch.testing.assert_close(dist.entropy(old), t_old.entropy())
    torch.testing.assert_close(dist.perplexity(old), t_old.entropy().exp())
    torch.testing.assert_close(dist.kl(old, new), kl_divergence(t_old, t_new))
    ratio = torch.exp(t_new.log_prob(x) - t_old.log_prob(x))
    torch.testing.assert_close(dist.likelihood_ratio(x, old, new), ratio)
    kl = kl_divergence(t_old, t_new)
    assert dist.mean_kl(old, new, valid).item() == pytest.approx(
        loop_masked_mean(kl, valid), rel=1e-5
    )
    ent = t_old.entropy()
    assert dist.mean_entropy(old, valid).item() == pytest.approx(
        loop_masked_mean(ent, valid), rel=1e-5
    )
    assert dist.mean_perplexity(old, valid).item() == pytest.approx(
        loop_masked_mean(ent.exp(), valid), rel=1e-5
    )


def test_gaussian_fixed_std_accepts_mean_only(gauss_data):
    old, new, x, _ = gauss_data
    dist = Gaussian(2, std=0.3)
    ref = Independent(Normal(new.mean, 0.3), 1)
    torch.testing.assert_close(dist.log_likelihood(x, GaussianDistInfo(new.mean)), ref.log_prob(x))
    # A log_std in dist_info is ignored while std is fixed.
    torch.testing.assert_close(dist.log_likelihood(x, new), ref.log_prob(x))
    torch.testing.assert_close(dist.entropy(GaussianDistInfo(new.mean)), ref.entropy())
    dist.set_std(None)
    torch.testing.assert_close(dist.log_likelihood(x, new), torch_normal(*new).log_prob(x))


def test_gaussian_per_dim_fixed_std():
    std = torch.tensor([0.5, 2.0])
    dist = Gaussian(2, std=std)
    mean = torch.zeros(3, 2)
    x = torch.randn(3, 2)
    ref = Independent(Normal(mean, std), 1)
    torch.testing.assert_close(dist.log_likelihood(x, GaussianDistInfo(mean)), ref.log_prob(x))


def test_gaussian_std_bounds_clamp(gauss_data):
    _, new, x, _ = gauss_data
    dist = Gaussian(2, min_std=0.8, max_std=1.5)
    clamped = new.log_std.clamp(math.log(0.8), math.log(1.5))
    torch.testing.assert_close(
        dist.log_likelihood(x, new), torch_normal(new.mean, clamped).log_prob(x)
    )
    torch.testing.assert_close(dist.entropy(new), torch_normal(new.mean, clamped).entropy())


@pytest.mark.parametrize("scale", [1.0, 2.5])
def test_squashed_log_likelihood_matches_tanh_transform(gauss_data, scale):
    _, new, _, _ = gauss_data
    dist = Gaussian(2, squash=scale)
    ref = torch_squashed(new.mean, new.log_std, scale)
    u = new.mean + 0.5 * new.log_std.exp() * torch.randn_like(new.mean)
    x = scale * torch.tanh(u)
    torch.testing.assert_close(dist.log_likelihood(x, new), ref.log_prob(x), atol=1e-4, rtol=1e-4)


def test_sample_loglikelihood_is_reparameterised_and_correct(gauss_data):
    _, new, _, _ = gauss_data
    mean = new.mean.clone().requires_grad_()
    log_std = (new.log_std - 1).clone().requires_grad_()  # small std keeps tanh off its tails
    dist = Gaussian(2, squash=1.0)
    sample, logli = dist.sample_loglikelihood(DistInfoStd(mean, log_std))
    assert sample.shape == mean.shape and logli.shape == mean.shape[:-1]
    assert sample.abs().max() < 1
    ref = torch_squashed(mean.detach(), log_std.detach(), 1.0).log_prob(sample.detach())
    torch.testing.assert_close(logli.detach(), ref, atol=1e-4, rtol=1e-4)
    (sample.sum() + logli.sum()).backward()
    assert mean.grad is not None and mean.grad.abs().sum() > 0
    assert log_std.grad is not None and log_std.grad.abs().sum() > 0


@pytest.mark.parametrize("squash", [1.0, 2.5, None])
def test_fused_sample_loglikelihood_equals_the_plain_composition(squash):
    """The fused log-likelihood equals log N(noise) - log|det| built from the plain helpers,
    in value and gradient, tails included."""
    g = torch.Generator().manual_seed(1)
    mean = (torch.randn(64, 3, generator=g) * 15).requires_grad_()  # |u| up to ~50
    log_std = torch.randn(64, 3, generator=g).requires_grad_()
    dist = Gaussian(3, squash=squash, min_std=math.exp(-20), max_std=math.exp(2))
    torch.manual_seed(5)
    sample, logli = dist.sample_loglikelihood(DistInfoStd(mean, log_std))
    torch.manual_seed(5)
    noise = torch.randn_like(mean)
    clamped = log_std.clamp(-20, 2)
    pre_squash = mean + torch.exp(clamped) * noise
    ref = Gaussian._normal_log_prob_from_noise(noise, clamped)
    ref_sample = pre_squash
    if squash is not None:
        ref = ref - dist._squash_log_det(pre_squash)
        ref_sample = squash * torch.tanh(pre_squash)
    torch.testing.assert_close(sample, ref_sample)
    torch.testing.assert_close(logli, ref)
    grads = torch.autograd.grad(sample.sum() + logli.sum(), [mean, log_std])
    ref_grads = torch.autograd.grad(ref_sample.sum() + ref.sum(), [mean, log_std])
    for got, want in zip(grads, ref_grads):
        torch.testing.assert_close(got, want)
    assert torch.isfinite(logli).all()


def test_sample_loglikelihood_unsquashed_matches_normal(gauss_data):
    _, new, _, _ = gauss_data
    sample, logli = Gaussian(2).sample_loglikelihood(new)
    torch.testing.assert_close(logli, torch_normal(*new).log_prob(sample))


def test_squash_log_det_is_stable_for_large_inputs():
    dist = Gaussian(1, squash=1.0)
    u = torch.tensor([[-40.0], [-3.0], [0.0], [0.7], [40.0]])
    log_det = dist._squash_log_det(u)
    assert torch.isfinite(log_det).all()
    naive = torch.log(1 - torch.tanh(u.double()) ** 2).squeeze(-1)
    torch.testing.assert_close(log_det[1:4].double(), naive[1:4], atol=1e-6, rtol=1e-6)
    # Far in the tails, log(1 - tanh(u)^2) -> 2 * (log 2 - |u|).
    assert log_det[0].item() == pytest.approx(2 * (math.log(2) - 40), abs=1e-4)
    assert log_det[4].item() == pytest.approx(2 * (math.log(2) - 40), abs=1e-4)


def test_gaussian_sample_statistics():
    torch.manual_seed(3)
    mean = torch.tensor([1.0, -2.0])
    log_std = torch.tensor([0.0, math.log(0.5)])
    info = DistInfoStd(mean.expand(50000, 2), log_std.expand(50000, 2))
    samples = Gaussian(2).sample(info)
    torch.testing.assert_close(samples.mean(0), mean, atol=0.03, rtol=0)
    torch.testing.assert_close(samples.std(0), log_std.exp(), atol=0.02, rtol=0)
    fixed = Gaussian(2, std=0.1).sample(GaussianDistInfo(mean.expand(50000, 2)))
    torch.testing.assert_close(fixed.std(0), torch.full((2,), 0.1), atol=0.005, rtol=0)


def test_gaussian_clip_noise_clip_and_squash_bound_samples():
    torch.manual_seed(4)
    mean = torch.full((1000, 3), 0.5)
    big = DistInfoStd(mean, torch.full((1000, 3), 2.0))
    clipped = Gaussian(3, clip=1.0).sample(big)
    assert clipped.abs().max() <= 1.0 and (clipped.abs() == 1.0).any()
    noisy = Gaussian(3, noise_clip=0.2).sample(big)
    assert (noisy - mean).abs().max() <= 0.2 + 1e-6
    squashed = Gaussian(3, squash=2.0).sample(big)
    assert squashed.abs().max() <= 2.0 and squashed.abs().max() > 1.0
    dist = Gaussian(3)
    dist.set_noise_clip(0.05)
    assert (dist.sample(big) - mean).abs().max() <= 0.05 + 1e-6


def test_gaussian_mode_is_the_mean_bounded_as_samples_are():
    mean = torch.tensor([[0.5, -3.0, 2.0]])
    info = DistInfoStd(mean, torch.zeros(1, 3))
    assert torch.equal(Gaussian(3).mode(info), mean)
    assert torch.equal(Gaussian(3, clip=1.0).mode(info), torch.tensor([[0.5, -1.0, 1.0]]))
    assert torch.equal(Gaussian(3, squash=2.0).mode(info), 2.0 * torch.tanh(mean))


def test_gaussian_sample_is_reparameterised():
    mean = torch.zeros(2, 3, requires_grad=True)
    Gaussian(3).sample(DistInfoStd(mean, torch.zeros(2, 3))).sum().backward()
    torch.testing.assert_close(mean.grad, torch.ones(2, 3))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(dim=0), "dim"),
        (dict(dim=2, clip=1.0, squash=1.0), "clip"),
        (dict(dim=2, std=-1.0), "std"),
        (dict(dim=2, min_std=2.0, max_std=1.0), "min_std"),
        (dict(dim=2, squash=0.0), "squash"),
    ],
)
def test_gaussian_rejects_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Gaussian(**kwargs)


@FAST
@given(st.integers(1, 4), st.integers(0, 2**31 - 1))
def test_gaussian_kl_properties(D, seed):
    g = torch.Generator().manual_seed(seed)
    p = DistInfoStd(torch.randn(3, D, generator=g), torch.randn(3, D, generator=g))
    q = DistInfoStd(torch.randn(3, D, generator=g), torch.randn(3, D, generator=g))
    dist = Gaussian(D)
    assert (dist.kl(p, p).abs() < 1e-5).all()
    assert (dist.kl(p, q) > -1e-5).all()


# ---------------------------------------------------------------- Epsilon greedy


def loop_epsilon_greedy_probs(q, eps):
    """Plain-loop reference over [B, A] with per-row epsilon."""
    B, A = q.shape
    probs = torch.zeros(B, A)
    for b in range(B):
        best = int(torch.argmax(q[b]))
        for a in range(A):
            probs[b, a] = eps[b] / A + (1 - eps[b]) * (a == best)
    return probs


def test_epsilon_zero_is_greedy_and_one_is_uniform():
    torch.manual_seed(5)
    q = torch.randn(7, 4)
    dist = EpsilonGreedy(4, epsilon=0)
    assert torch.equal(dist.sample(q), q.argmax(-1))
    dist.set_epsilon(1)
    samples = dist.sample(torch.zeros(40000, 4) + torch.tensor([0.0, 0.0, 5.0, 0.0]))
    freq = torch.bincount(samples, minlength=4).float() / samples.numel()
    torch.testing.assert_close(freq, torch.full((4,), 0.25), atol=0.01, rtol=0)


def plain_epsilon_greedy_sample(q, eps, dim):
    """The textbook draw: greedy, then rand < eps picks a uniform action."""
    greedy = torch.argmax(q, dim=-1)
    explore = torch.rand(greedy.shape) < torch.as_tensor(eps, dtype=torch.float32)
    return torch.where(explore, torch.randint_like(greedy, high=dim), greedy)


@pytest.mark.parametrize("eps", [0.3, [0.0, 0.4, 1.0]])
def test_epsilon_greedy_sample_matches_plain_draw_and_follows_set_epsilon(eps):
    q = torch.randn(50, 3, 4)
    dist = EpsilonGreedy(4, epsilon=eps)
    for epsilon in (eps, 0.7):  # set_epsilon must refresh the cached per-device copy
        dist.set_epsilon(epsilon)
        torch.manual_seed(3)
        got = dist.sample(q)
        torch.manual_seed(3)
        assert torch.equal(got, plain_epsilon_greedy_sample(q, epsilon, 4))
        assert got.dtype == torch.long


def test_per_env_epsilon_broadcasts_over_time():
    torch.manual_seed(6)
    T, B, A = 2000, 3, 5
    q = torch.randn(T, B, A)
    eps = torch.tensor([0.0, 0.5, 1.0])
    dist = EpsilonGreedy(A, epsilon=eps)
    samples = dist.sample(q)
    greedy = q.argmax(-1)
    assert samples.shape == (T, B)
    agree = (samples == greedy).float().mean(0)
    expected = 1 - eps + eps / A
    torch.testing.assert_close(agree, expected, atol=0.03, rtol=0)
    with pytest.raises(ValueError, match="epsilon"):
        dist.sample(torch.randn(T, 4, A))


def test_epsilon_greedy_probs_and_likelihoods_match_loop():
    g = torch.Generator().manual_seed(7)
    B, A = 6, 3
    q_old, q_new = torch.randn(B, A, generator=g), torch.randn(B, A, generator=g)
    eps = torch.rand(B, generator=g)
    dist = EpsilonGreedy(A, epsilon=eps)
    p_old, p_new = loop_epsilon_greedy_probs(q_old, eps), loop_epsilon_greedy_probs(q_new, eps)
    torch.testing.assert_close(dist.probs(q_old), p_old)
    x = torch.randint(A, (B,), generator=g)
    t_old, t_new = TorchCategorical(probs=p_old), TorchCategorical(probs=p_new)
    torch.testing.assert_close(
        dist.log_likelihood(x, q_new), t_new.log_prob(x), atol=1e-5, rtol=1e-5
    )
    torch.testing.assert_close(dist.entropy(q_old), t_old.entropy(), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(
        dist.kl(q_old, q_new), kl_divergence(t_old, t_new), atol=1e-5, rtol=1e-5
    )
    torch.testing.assert_close(
        dist.likelihood_ratio(x, q_old, q_new),
        torch.exp(t_new.log_prob(x) - t_old.log_prob(x)),
        rtol=1e-5,
        atol=0,
    )


@pytest.mark.parametrize("bad", [-0.1, 1.5, [[0.1]]])
def test_epsilon_rejects_bad_values(bad):
    with pytest.raises(ValueError, match="epsilon"):
        EpsilonGreedy(3, epsilon=bad)


def test_categorical_epsilon_greedy_uses_expected_value():
    g = torch.Generator().manual_seed(8)
    T, B, A, n_atoms = 3, 2, 4, 11
    z = torch.linspace(-5, 5, n_atoms)
    p = torch.softmax(torch.randn(T, B, A, n_atoms, generator=g), dim=-1)
    dist = CategoricalEpsilonGreedy(A, z=z, epsilon=0)
    expected = np.zeros((T, B, A))
    for t in range(T):
        for b in range(B):
            for a in range(A):
                expected[t, b, a] = sum(float(p[t, b, a, j] * z[j]) for j in range(n_atoms))
    assert torch.equal(dist.sample(p), torch.from_numpy(expected.argmax(-1)))
    assert dist.probs(p).shape == (T, B, A)
    with pytest.raises(ValueError, match="atoms"):
        dist.sample(p[..., :5])
    with pytest.raises(ValueError, match="set_z"):
        CategoricalEpsilonGreedy(A).sample(p)


def test_categorical_sample_checks_dim():
    with pytest.raises(ValueError, match="dim=3"):
        Categorical(3).sample(DistInfo(torch.full((2, 4), 0.25)))


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_distributions_follow_the_input_device():
    dev = torch.device("cuda")
    mean = torch.zeros(5, 2, device=dev)
    for dist in (Gaussian(2, std=torch.tensor([0.1, 0.2])), Gaussian(2, squash=1.0)):
        info = DistInfoStd(mean, torch.zeros_like(mean))
        sample = dist.sample(info)
        assert sample.device.type == "cuda"
        assert dist.log_likelihood(sample, info).device.type == "cuda"
    q = torch.randn(3, 5, 4, device=dev)
    assert EpsilonGreedy(4, epsilon=torch.rand(5)).sample(q).device.type == "cuda"
    p = torch.softmax(torch.randn(5, 4, 11, device=dev), -1)
    assert CategoricalEpsilonGreedy(4, z=torch.linspace(-1, 1, 11)).sample(p).device.type == "cuda"
