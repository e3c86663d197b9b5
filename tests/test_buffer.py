"""rlpyt.utils.buffer: allocation from examples, shared memory, numpy <-> torch views."""

import multiprocessing as mp
import os
import pickle

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from rlpyt.utils.buffer import (
    buffer_from_example,
    buffer_func,
    buffer_method,
    buffer_to,
    get_leading_dims,
    np_mp_array,
    numpify_buffer,
    torchify_buffer,
)
from rlpyt.utils.collections import is_namedarraytuple, namedarraytuple, namedtuple

EnvInfo = namedtuple("EnvInfo", ["timeout", "score", "nested"])
Nested = namedtuple("Nested", ["lives", "frame"])
Step = namedtuple("Step", ["observation", "reward", "done", "count", "info", "missing"])


def example_step():
    return Step(
        observation=np.zeros((2, 3), np.uint8),
        reward=1.5,  # python float -> float32
        done=True,  # python bool -> bool
        count=3,  # python int -> int64
        info=EnvInfo(timeout=np.bool_(False), score=np.float64(2.0),
                     nested=Nested(lives=np.int32(3), frame=np.ones(4, np.float16))),
        missing=None,
    )


lead_dims = hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=5)


# ---------------------------------------------------------------- buffer_from_example


@settings(max_examples=40, deadline=None)
@given(lead=lead_dims, share=st.booleans())
def test_buffer_from_example_shapes_and_dtypes(lead, share):
    buf = buffer_from_example(example_step(), lead, share_memory=share)
    assert is_namedarraytuple(buf) and type(buf).__name__ == "Step"
    assert buf._fields == Step._fields
    expected = {
        "observation": ((2, 3), np.uint8),
        "reward": ((), np.float32),
        "done": ((), np.bool_),
        "count": ((), np.int64),
    }
    for name, (shape, dtype) in expected.items():
        leaf = getattr(buf, name)
        assert leaf.shape == lead + shape and leaf.dtype == dtype, name
        assert not leaf.any()  # zero-initialised
    info = buf.info
    assert is_namedarraytuple(info) and is_namedarraytuple(info.nested)
    assert info.timeout.dtype == np.bool_ and info.timeout.shape == lead
    assert info.score.dtype == np.float64  # explicit numpy float64 stays float64
    assert info.nested.lives.dtype == np.int32
    assert info.nested.frame.shape == lead + (4,) and info.nested.frame.dtype == np.float16
    assert buf.missing is None
    if lead:
        assert get_leading_dims(buf, len(lead)) == lead


def test_buffer_from_example_int_leading_dims_and_torch_example():
    assert buffer_from_example(np.zeros(3), 5).shape == (5, 3)
    t = buffer_from_example(torch.ones(2, dtype=torch.int16), (4,))
    assert isinstance(t, np.ndarray) and t.shape == (4, 2) and t.dtype == np.int16
    assert buffer_from_example(None, (3,)) is None


@pytest.mark.parametrize(
    "example, error, match",
    [
        (np.array(["a", "b"], dtype=object), TypeError, "object dtype"),
        ("text", TypeError, "non-numeric"),
        (np.array(["ab"]), TypeError, "non-numeric"),
        ({"a": 1}, TypeError, "dict"),
        ((1, 2), TypeError, "plain tuple"),
        (Step(np.zeros(2), 0.0, False, 0, {"k": 1}, None), TypeError, "dict"),
    ],
)
def test_buffer_from_example_rejects_non_numeric(example, error, match):
    with pytest.raises(error, match=match):
        buffer_from_example(example, (2,))


def test_np_mp_array_rejects_object_dtype_and_takes_int_shape():
    with pytest.raises(TypeError, match="object"):
        np_mp_array((2,), object)
    a = np_mp_array(3, np.int32)
    assert a.shape == (3,) and a.dtype == np.int32 and not a.any()


# ---------------------------------------------------------------- shared memory


def _write_child(buf, value):
    """Child process: write through the shared buffer (received as a Process argument)."""
    buf.observation[:] = value
    buf.reward[1] = value
    buf.info.nested.frame[0, 0, -1] = value
    buf[-1, 1] = value  # namedarraytuple write of every field at once


def _shm_entries():
    try:
        return set(os.listdir("/dev/shm"))
    except FileNotFoundError:  # pragma: no cover - no /dev/shm on this platform
        return set()


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_shared_buffer_writes_in_child_seen_by_parent(method):
    if method not in mp.get_all_start_methods():
        pytest.skip(f"{method} not available here")
    before = _shm_entries()
    buf = buffer_from_example(example_step(), (3, 2), share_memory=True)
    view = buf[1:]  # views of shared memory keep addressing it in the child
    ctx = mp.get_context(method)
    proc = ctx.Process(target=_write_child, args=(view, 7))
    proc.start()
    proc.join(timeout=120)
    assert proc.exitcode == 0
    assert (buf.observation[0] == 0).all() and (buf.observation[1:] == 7).all()
    assert buf.reward[2, 0] == 7 and buf.reward[0].sum() == 0  # view row 1 is buffer row 2
    assert buf.info.nested.frame[1, 0, -1] == 7
    assert buf.count[2, 1] == 7 and buf.count[1, 1] == 0 and buf.done[2, 1]
    # Nothing of ours left behind in /dev/shm (blocks are unlinked at creation).
    new = _shm_entries() - before
    ours = {str(os.getpid()), str(proc.pid)}
    assert not [n for n in new if any(pid in n for pid in ours)], new


def test_shared_array_pickles_as_a_private_copy_outside_process_start():
    a = np_mp_array((3,), np.float32)
    copy = pickle.loads(pickle.dumps(a[1:]))
    copy[:] = 5
    assert not a.any()
    assert type(a + 1) is np.ndarray  # arithmetic gives ordinary arrays


# ---------------------------------------------------------------- numpy <-> torch


@pytest.mark.parametrize("share", [False, True])
def test_torchify_and_numpify_share_memory(share):
    buf = buffer_from_example(example_step(), (3,), share_memory=share)
    pyt = torchify_buffer(buf)
    assert isinstance(pyt.observation, torch.Tensor) and pyt.observation.dtype == torch.uint8
    assert pyt.missing is None and isinstance(pyt.info.nested.frame, torch.Tensor)
    pyt.reward[1] = 4.0  # torch write, numpy read
    pyt.info.nested.lives.add_(2)
    assert buf.reward[1] == 4.0 and (buf.info.nested.lives == 2).all()
    buf.observation[2, 1, 1] = 9  # numpy write, torch read
    assert pyt.observation[2, 1, 1] == 9
    back = numpify_buffer(pyt)
    assert isinstance(back.reward, np.ndarray)
    back.count[0] = 11  # numpy view of the torch view of the original
    assert buf.count[0] == 11 and pyt.count[0] == 11


def test_torchify_passes_other_leaves_and_numpy_scalars():
    Mixed = namedarraytuple("Mixed", ["arr", "scalar", "text", "tensor"])
    m = torchify_buffer(Mixed(np.zeros(2), np.float32(3), "keep", torch.ones(1)))
    assert isinstance(m.arr, torch.Tensor) and float(m.scalar) == 3.0
    assert m.text == "keep" and isinstance(m.tensor, torch.Tensor)
    assert numpify_buffer(Mixed(torch.zeros(2), None, "keep", 3)).text == "keep"


def test_buffer_to_method_func():
    pyt = torchify_buffer(buffer_from_example(example_step(), (2, 3)))
    assert buffer_to(pyt, None) is pyt
    moved = buffer_to(pyt, "cpu")
    assert moved.observation.device.type == "cpu" and type(moved) is type(pyt)
    moved64 = buffer_to(pyt, torch.float64)  # anything Tensor.to accepts
    assert moved64.reward.dtype == torch.float64 and moved64.missing is None
    flat = buffer_method(pyt, "flatten", 0, 1)
    assert flat.observation.shape == (6, 2, 3) and flat.info.nested.frame.shape == (6, 4)
    transposed = buffer_method(pyt.info.nested, "transpose", 0, 1)
    assert transposed.lives.shape == (3, 2) and transposed.frame.shape == (3, 2, 4)
    summed = buffer_func(pyt, torch.sum, 0)
    assert summed.reward.shape == (3,) and summed.missing is None and type(summed) is type(pyt)
    assert buffer_func(None, torch.sum) is None and buffer_method(None, "sum") is None


def test_buffer_method_reshape_keeps_trailing_dims():
    buf = buffer_from_example(example_step(), (2, 3))
    flat = buffer_method(buf, "reshape", (6, -1))
    assert flat.observation.shape == (6, 6) and flat.reward.shape == (6, 1)


# ---------------------------------------------------------------- get_leading_dims


@settings(max_examples=30, deadline=None)
@given(lead=hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5))
def test_get_leading_dims(lead):
    buf = buffer_from_example(example_step(), lead)
    assert get_leading_dims(buf, len(lead)) == lead
    assert get_leading_dims(buf) == lead[:1]
    assert get_leading_dims(buf.observation, 1) == lead[:1]


def test_get_leading_dims_error_names_the_field():
    buf = buffer_from_example(example_step(), (3, 2))
    bad = buf._replace(info=buf.info._replace(
        nested=buf.info.nested._replace(frame=np.zeros((3, 5, 4)))))
    with pytest.raises(ValueError, match=r"info\.nested\.frame"):
        get_leading_dims(bad, 2)
    assert get_leading_dims(bad, 1) == (3,)
    with pytest.raises(ValueError, match="no array fields"):
        get_leading_dims(Step(None, None, None, None, None, None))


def test_buffer_to_walks_plain_tuples_and_numpify_detaches():
    inputs = (torch.zeros(2), torch.ones(2, dtype=torch.int64), None)
    moved = buffer_to(inputs, torch.float64)
    assert type(moved) is tuple and moved[2] is None
    assert moved[0].dtype == torch.float64 and moved[1].dtype == torch.float64
    leaf = torch.zeros(3, requires_grad=True)
    out = numpify_buffer(ActReward(leaf, torch.ones(1)))
    assert isinstance(out.action, np.ndarray) and out.action.shape == (3,)
    assert out.reward.tolist() == [1.0]


ActReward = namedarraytuple("ActReward", ["action", "reward"])


def test_torchify_and_numpify_convert_plain_tuples_and_lists():
    """``torchify_buffer((obs, prev_action, prev_reward))``: what a hand-written loop
    passes to ``agent.step`` (issue 30)."""
    obs, action, reward = np.arange(4, dtype=np.float32), np.array(1), np.float32(0.5)
    got = torchify_buffer((obs, action, reward))
    assert type(got) is tuple and all(isinstance(x, torch.Tensor) for x in got)
    got[0][0] = 7.0
    assert obs[0] == 7.0  # shares memory
    assert got[2].item() == 0.5 and got[2].dim() == 0
    nested = torchify_buffer([obs, (action, [reward])])
    assert type(nested) is list and type(nested[1]) is tuple and type(nested[1][1]) is list
    assert isinstance(nested[1][1][0], torch.Tensor)
    back = numpify_buffer(nested)
    assert type(back) is list and isinstance(back[1][1][0], np.ndarray)
    assert back[0] is not obs and np.shares_memory(back[0], obs)
