"""rlpyt.utils.tensor and its numpy twins in rlpyt.utils.array, against plain loops."""

import itertools

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from rlpyt.utils import array as nu
from rlpyt.utils import tensor as tu

small_shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=4)


# ---------------------------------------------------------------- leading dims


@settings(max_examples=60, deadline=None)
@given(n_lead=st.integers(0, 2), data_shape=small_shapes, sides=st.lists(
    st.integers(1, 5), min_size=2, max_size=2))
def test_infer_restore_leading_dims_round_trip(n_lead, data_shape, sides):
    lead = tuple(sides[:n_lead])
    x = torch.randn(lead + data_shape)
    lead_dim, T, B, shape = tu.infer_leading_dims(x, len(data_shape))
    assert lead_dim == n_lead and shape == data_shape
    assert (T, B) == {0: (1, 1), 1: (1, lead[0] if lead else 1), 2: tuple(lead)}[n_lead]
    # What a model does: flatten to [T * B, ...], compute, restore.
    flat = x.reshape((T * B,) + data_shape)
    y = flat.sum(dim=tuple(range(1, flat.dim()))) if data_shape else flat
    out, same = tu.restore_leading_dims((y, flat), lead_dim, T, B)
    assert out.shape == lead and same.shape == x.shape
    assert torch.equal(same, x)
    assert tu.restore_leading_dims(flat, lead_dim, T, B).shape == x.shape  # single tensor
    assert isinstance(tu.restore_leading_dims([flat], lead_dim, T, B), tuple)
    # The numpy twin agrees.
    assert nu.infer_leading_dims(x.numpy(), len(data_shape)) == (lead_dim, T, B, shape)


def test_infer_leading_dims_rejects_too_many_or_too_few_dims():
    with pytest.raises(ValueError, match=r"3 leading dims"):
        tu.infer_leading_dims(torch.zeros(2, 2, 2, 4), 1)
    with pytest.raises(ValueError, match=r"-1 leading dims"):
        tu.infer_leading_dims(torch.zeros(4), 2)
    with pytest.raises(ValueError, match="leading dims"):
        nu.infer_leading_dims(np.zeros((2, 2, 2, 4)), 1)


def test_restore_leading_dims_zero_needs_batch_of_one():
    with pytest.raises(ValueError, match="batch size 1"):
        tu.restore_leading_dims(torch.zeros(3, 2), 0)


# ---------------------------------------------------------------- select_at_indexes


@settings(max_examples=60, deadline=None)
@given(lead=hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=4),
       n=st.integers(1, 5), rest=hnp.array_shapes(min_dims=0, max_dims=2, max_side=3),
       seed=st.integers(0, 2**16))
def test_select_at_indexes_matches_loop(lead, n, rest, seed):
    rng = np.random.default_rng(seed)
    values = rng.normal(size=lead + (n,) + rest).astype(np.float32)
    indexes = rng.integers(0, n, size=lead)
    expected = np.empty(lead + rest, np.float32)
    for pos in itertools.product(*(range(d) for d in lead)):
        expected[pos] = values[pos + (indexes[pos],)]
    got = tu.select_at_indexes(torch.from_numpy(indexes), torch.from_numpy(values))
    np.testing.assert_array_equal(got.numpy(), expected)
    np.testing.assert_array_equal(nu.select_at_indexes(indexes, values), expected)


def test_select_at_indexes_shape_mismatch_error():
    with pytest.raises(ValueError, match="indexes shape"):
        tu.select_at_indexes(torch.zeros(3, dtype=torch.long), torch.zeros(4, 2))


# ---------------------------------------------------------------- one-hot


@settings(max_examples=50, deadline=None)
@given(shape=hnp.array_shapes(min_dims=0, max_dims=3, max_side=4), num=st.integers(1, 6),
       seed=st.integers(0, 2**16))
def test_onehot_round_trip_and_loop(shape, num, seed):
    indexes = np.random.default_rng(seed).integers(0, num, size=shape)
    onehot = tu.to_onehot(torch.from_numpy(indexes), num)
    assert onehot.shape == shape + (num,) and onehot.dtype == torch.float32
    expected = np.zeros(shape + (num,), np.float32)
    for pos in itertools.product(*(range(d) for d in shape)):
        expected[pos + (indexes[pos],)] = 1
    np.testing.assert_array_equal(onehot.numpy(), expected)
    np.testing.assert_array_equal(nu.to_onehot(indexes, num), expected)
    assert torch.equal(tu.from_onehot(onehot), torch.from_numpy(indexes))
    np.testing.assert_array_equal(nu.from_onehot(expected), indexes)
    assert tu.to_onehot(torch.from_numpy(indexes), num, dtype=torch.uint8).dtype == torch.uint8
    assert tu.from_onehot(onehot, dtype=torch.int32).dtype == torch.int32


# ---------------------------------------------------------------- valid_mean


def loop_valid_mean(values, valid):
    """Mean of ``values[t, b, ...]`` over the ``[t, b]`` where ``valid`` is nonzero."""
    total, count = 0.0, 0
    for t in range(values.shape[0]):
        for b in range(values.shape[1]):
            if valid[t, b]:
                total += float(np.sum(values[t, b]))
                count += int(np.prod(values.shape[2:], dtype=int))
    return total / max(count, 1)


@settings(max_examples=60, deadline=None)
@given(T=st.integers(1, 5), B=st.integers(1, 5), trailing=st.sampled_from([(), (3,)]),
       seed=st.integers(0, 2**16))
def test_valid_mean_matches_loop(T, B, trailing, seed):
    rng = np.random.default_rng(seed)
    values = rng.normal(size=(T, B) + trailing)
    valid = rng.random((T, B)) < 0.6
    expected = loop_valid_mean(values, valid)
    got = tu.valid_mean(torch.from_numpy(values), torch.from_numpy(valid))
    assert got.item() == pytest.approx(expected, abs=1e-10)
    assert nu.valid_mean(values, valid) == pytest.approx(expected, abs=1e-10)
    # Float masks (0./1.) mean the same.
    got_f = tu.valid_mean(torch.from_numpy(values), torch.from_numpy(valid.astype(np.float32)))
    assert got_f.item() == pytest.approx(expected, abs=1e-6)
    # No mask: the plain mean.
    assert tu.valid_mean(torch.from_numpy(values)).item() == pytest.approx(values.mean())
    assert nu.valid_mean(values) == pytest.approx(values.mean())


@settings(max_examples=40, deadline=None)
@given(T=st.integers(1, 5), B=st.integers(1, 5), seed=st.integers(0, 2**16))
def test_valid_mean_over_one_dim_matches_loop(T, B, seed):
    rng = np.random.default_rng(seed)
    values = rng.normal(size=(T, B))
    valid = rng.random((T, B)) < 0.6
    expected = [loop_valid_mean(values[:, b:b + 1], valid[:, b:b + 1]) for b in range(B)]
    got = tu.valid_mean(torch.from_numpy(values), torch.from_numpy(valid), dim=0)
    np.testing.assert_allclose(got.numpy(), expected, atol=1e-12)
    np.testing.assert_allclose(nu.valid_mean(values, valid, axis=0), expected, atol=1e-12)
    np.testing.assert_allclose(tu.valid_mean(torch.from_numpy(values), dim=1).numpy(),
                               values.mean(axis=1))


def test_valid_mean_all_invalid_is_zero_not_nan():
    values = torch.ones(3, 2)
    assert tu.valid_mean(values, torch.zeros(3, 2)).item() == 0.0
    assert nu.valid_mean(np.ones((3, 2)), np.zeros((3, 2))) == 0.0


def test_valid_mean_keeps_gradient():
    x = torch.randn(4, 3, requires_grad=True)
    valid = torch.tensor([[1, 0, 1]] * 4, dtype=torch.bool)
    tu.valid_mean(x, valid).backward()
    expected = valid.float() / valid.sum()
    assert torch.allclose(x.grad, expected)
