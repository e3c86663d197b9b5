"""Spaces: IntBox, FloatBox, Composite and the Gymnasium space wrapper."""

from __future__ import annotations

import keyword
import pickle

import numpy as np
import pytest
from gymnasium import spaces as gs
from hypothesis import given, settings
from hypothesis import strategies as st

from rlpyt.spaces.composite import Composite
from rlpyt.spaces.float_box import FloatBox
from rlpyt.spaces.gym_wrapper import GymSpaceWrapper, to_field_name, to_field_names
from rlpyt.spaces.int_box import IntBox
from rlpyt.utils.collections import NamedTupleSchema, namedtuple

shapes = st.lists(st.integers(0, 3), min_size=0, max_size=3).map(tuple)


# ----- IntBox -------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(low=st.integers(-50, 50), width=st.integers(1, 30), shape=shapes, seed=st.integers(0, 99))
def test_int_box_samples_lie_in_box(low, width, shape, seed):
    box = IntBox(low, low + width, shape=shape)
    box.seed(seed)
    for _ in range(5):
        x = box.sample()
        assert x.shape == shape and x.dtype == np.int32
        assert box.contains(x)
        assert np.all((x >= low) & (x < low + width))
    assert box.n == width
    null = box.null_value()
    assert null.shape == shape and np.all(null == low)


def test_int_box_array_bounds_and_defaults():
    box = IntBox(low=[0, 5], high=[3, 6], dtype="int64", null_value=[1, 5])
    assert box.shape == (2,) and box.dtype == np.int64
    assert np.array_equal(box.n, [3, 1])
    assert np.array_equal(box.null_value(), [1, 5])
    assert all(box.contains(box.sample()) for _ in range(20))
    assert not box.contains(np.array([3, 5]))  # high is exclusive
    assert not box.contains(np.array([0.5, 5.0]))  # not integers
    assert not box.contains(np.array([0, 5, 0]))  # wrong shape
    assert np.array([1, 5]) in box


def test_int_box_uint8_image_space():
    box = IntBox(0, 256, shape=(2, 4, 4), dtype="uint8")
    assert box.n == 256
    x = box.sample()
    assert x.dtype == np.uint8 and x.shape == (2, 4, 4)


def test_int_box_seed_is_reproducible():
    a, b = IntBox(0, 100, shape=(5,)), IntBox(0, 100, shape=(5,))
    a.seed(3)
    b.seed(3)
    assert all(np.array_equal(a.sample(), b.sample()) for _ in range(10))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(low=3, high=3), "low < high"),
        (dict(low=0, high=4, dtype="float32"), "integer"),
        (dict(low=0, high=300, dtype="uint8"), "does not fit"),
        (dict(low=0, high=4, null_value=-1, dtype="uint8"), "null_value"),
        (dict(low=[0, 1], high=[2, 3, 4]), "broadcast"),
        (dict(low=[0, 1], high=3, shape=(3,)), "broadcast"),
        (dict(low=0.5, high=3), "integers"),
    ],
)
def test_int_box_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        IntBox(**kwargs)


# ----- FloatBox -----------------------------------------------------------------

bounds = st.one_of(st.floats(-100, 100), st.just(np.inf), st.just(-np.inf))


@settings(max_examples=60, deadline=None)
@given(data=st.data(), n=st.integers(1, 4), seed=st.integers(0, 99))
def test_float_box_samples_lie_in_box(data, n, seed):
    low = np.array(data.draw(st.lists(bounds, min_size=n, max_size=n)))
    high = np.array(data.draw(st.lists(bounds, min_size=n, max_size=n)))
    low, high = np.minimum(low, high), np.maximum(low, high)
    if np.any(np.isinf(low) & (low == high)):  # [inf, inf] holds no real number
        return
    box = FloatBox(low, high)
    box.seed(seed)
    for _ in range(5):
        x = box.sample()
        assert x.shape == (n,) and x.dtype == np.float32
        assert np.all(np.isfinite(x))
        assert box.contains(x)


def test_float_box_scalar_bounds_shape_and_null():
    box = FloatBox(-1, 1, shape=(2, 3), null_value=0.5, dtype="float64")
    assert box.shape == (2, 3) and box.dtype == np.float64
    assert np.all(box.null_value() == 0.5)
    assert box.bounds == (-1.0, 1.0)
    assert not box.contains(np.full((2, 3), 1.5))
    assert not box.contains(np.full((2, 3), np.nan))
    scalar = FloatBox(0, 1)
    assert scalar.sample().shape == ()


def test_float_box_seed_is_reproducible():
    a, b = FloatBox(-np.inf, np.inf, shape=(4,)), FloatBox(-np.inf, np.inf, shape=(4,))
    a.seed(11)
    b.seed(11)
    assert np.array_equal(a.sample(), b.sample())


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(low=1, high=0), "low <= high"),
        (dict(low=0, high=1, dtype="int32"), "float dtype"),
        (dict(low=np.nan, high=1), "no NaN"),
        (dict(low=0, high=1, shape=(2,), null_value=[1, 2, 3]), "null_value"),
    ],
)
def test_float_box_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        FloatBox(**kwargs)


# ----- Composite ----------------------------------------------------------------

Pair = namedtuple("Pair", ["image", "vector"], module=__name__)


def make_composite():
    inner = Composite([IntBox(0, 3), FloatBox(-1, 1, shape=(2,))], NamedTupleSchema("In", "a b"))
    return Composite([IntBox(0, 256, shape=(2, 2), dtype="uint8"), inner], Pair)


def test_composite_sample_null_shape_dtype():
    space = make_composite()
    x = space.sample()
    assert type(x).__name__ == "Pair" and type(x.vector).__name__ == "In"
    assert space.contains(x)
    null = space.null_value()
    assert np.all(null.image == 0) and np.all(null.vector.b == 0)
    assert space.shape.image == (2, 2) and space.shape.vector.b == (2,)
    assert space.dtype.image == np.uint8 and space.dtype.vector.b == np.float32
    assert space.names == ("image", "vector")
    assert not space.contains((x.image, x.vector))  # a plain tuple has no fields


def test_composite_seed_and_pickle():
    a, b = make_composite(), make_composite()
    a.seed(5)
    b.seed(5)
    xa, xb = a.sample(), b.sample()
    assert np.array_equal(xa.image, xb.image) and np.array_equal(xa.vector.b, xb.vector.b)
    c = pickle.loads(pickle.dumps(a))
    ya, yc = a.sample(), c.sample()
    assert np.array_equal(ya.image, yc.image)  # the generator state travels too


def test_composite_bad_arguments():
    with pytest.raises(ValueError, match="2 spaces"):
        Composite([IntBox(0, 2), IntBox(0, 2)], NamedTupleSchema("One", ["a"]))
    with pytest.raises(TypeError, match="NamedTupleCls"):
        Composite([IntBox(0, 2)], dict)
    with pytest.raises(TypeError, match="not an rlpyt Space"):
        Composite([gs.Discrete(2)], NamedTupleSchema("One", ["a"]))


# ----- Field names ----------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(keys=st.lists(st.one_of(st.text(max_size=8), st.integers(-5, 50)), max_size=6))
def test_to_field_names_are_valid_unique_fields(keys):
    names = to_field_names(keys)
    assert len(names) == len(keys) == len(set(names))
    for name in names:
        assert name.isidentifier() and not keyword.iskeyword(name)
        assert not name.startswith("_") and name not in ("get", "items")
    namedtuple("Check", names)  # rlpyt's namedtuple accepts them all


@pytest.mark.parametrize(
    "key, name",
    [("TimeLimit.truncated", "TimeLimit_truncated"), ("_x", "x"), ("1st", "f1st"),
     ("class", "class_"), ("get", "get_"), ("", "f"), ("ok", "ok")],
)
def test_to_field_name_examples(key, name):
    assert to_field_name(key) == name


def test_to_field_names_dedupes():
    assert to_field_names(["a-b", "a_b", "a.b"]) == ["a_b", "a_b_2", "a_b_3"]


# ----- GymSpaceWrapper ------------------------------------------------------------

GYM_SPACES = {
    "box64": gs.Box(-2.0, 3.0, shape=(3,), dtype=np.float64),
    "box_unbounded": gs.Box(-np.inf, np.inf, shape=(2, 2), dtype=np.float32),
    "box_uint8": gs.Box(0, 255, shape=(4, 4), dtype=np.uint8),
    "box_int": gs.Box(low=np.array([1, -3]), high=np.array([4, 3]), dtype=np.int64),
    "discrete": gs.Discrete(5),
    "discrete_start": gs.Discrete(4, start=-2),
    "multi_discrete": gs.MultiDiscrete([3, 5, 2]),
    "multi_discrete_start": gs.MultiDiscrete([3, 2], start=[1, 10]),
    "multi_binary": gs.MultiBinary(4),
    "tuple": gs.Tuple((gs.Discrete(3), gs.Box(0, 1, (2,)))),
    "dict": gs.Dict(
        {
            "my-pos": gs.Box(-1, 1, (2,), dtype=np.float64),
            "nested": gs.Dict({"flags": gs.MultiBinary(3), "n": gs.Discrete(2, start=1)}),
            "class": gs.Tuple((gs.MultiDiscrete([2, 2]),)),
        }
    ),
}


def assert_same_gym_value(a, b):
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            assert_same_gym_value(a[k], b[k])
    elif isinstance(a, tuple):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert_same_gym_value(x, y)
    else:
        np.testing.assert_allclose(np.asarray(a, dtype=np.float64), np.asarray(b, np.float64),
                                   rtol=1e-6)


@pytest.mark.parametrize("name", list(GYM_SPACES))
def test_gym_space_round_trip(name):
    gym_space = GYM_SPACES[name]
    gym_space.seed(0)
    wrapper = GymSpaceWrapper(gym_space)
    wrapper.seed(0)
    for _ in range(20):
        gym_value = gym_space.sample()
        value = wrapper.convert(gym_value)
        assert wrapper.space.contains(value), (gym_value, value)
        back = wrapper.revert(value)
        assert gym_space.contains(back), (value, back)
        assert_same_gym_value(gym_value, back)
        # Samples drawn on the rlpyt side are valid Gymnasium values once reverted.
        assert gym_space.contains(wrapper.revert(wrapper.sample()))
    assert wrapper.space.contains(wrapper.null_value())


def test_gym_space_types_and_offsets():
    box = GymSpaceWrapper(GYM_SPACES["box64"])
    assert isinstance(box.space, FloatBox) and box.dtype == np.float32
    assert box.revert(np.zeros(3, np.float32)).dtype == np.float64
    assert GymSpaceWrapper(GYM_SPACES["box64"], force_float32=False).dtype == np.float64

    image = GymSpaceWrapper(GYM_SPACES["box_uint8"]).space
    assert isinstance(image, IntBox) and image.dtype == np.uint8 and image.high == 256

    discrete = GymSpaceWrapper(GYM_SPACES["discrete_start"])
    assert discrete.n == 4 and discrete.space.low == 0  # agents see range(n)
    assert discrete.convert(-2) == 0 and discrete.revert(np.array(3)) == 1
    assert isinstance(discrete.revert(np.int64(0)), int)
    with pytest.raises(ValueError, match="one integer"):
        discrete.revert(np.array([1, 2]))

    multi = GymSpaceWrapper(GYM_SPACES["multi_discrete_start"])
    assert np.array_equal(multi.n, [3, 2])
    assert np.array_equal(multi.convert(np.array([2, 11])), [1, 1])
    assert np.array_equal(multi.revert(np.array([0, 1])), [1, 11])


def test_gym_dict_becomes_composite_of_namedtuples():
    wrapper = GymSpaceWrapper(GYM_SPACES["dict"], name="obs")
    space = wrapper.space
    assert isinstance(space, Composite)
    assert space.names == ("class_", "my_pos", "nested")  # gymnasium sorts dict keys
    value = wrapper.convert(GYM_SPACES["dict"].sample())
    assert type(value).__name__ == "obs" and type(value.nested).__name__ == "obs_nested"
    assert value.my_pos.dtype == np.float32
    assert set(wrapper.revert(value)) == {"my-pos", "nested", "class"}
    clone = pickle.loads(pickle.dumps(wrapper))
    assert clone.space.names == space.names
    assert pickle.loads(pickle.dumps(value)).nested.n == value.nested.n


def test_gym_null_value_stays_in_range():
    assert GymSpaceWrapper(GYM_SPACES["box_int"], null_value=0).null_value().tolist() == [1, 0]
    assert GymSpaceWrapper(gs.Box(-1, 1, (2,)), null_value=0.5).null_value().tolist() == [0.5] * 2


def test_gym_unsupported_space():
    with pytest.raises(TypeError, match="unsupported space"):
        GymSpaceWrapper(gs.Text(5))
