"""rlpyt.utils.misc, rlpyt.utils.quick_args and rlpyt.utils.prog_bar."""

import io

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from rlpyt.utils.collections import namedarraytuple
from rlpyt.utils.logging import logger
from rlpyt.utils.misc import empty, extract_sequences, iterate_mb_idxs, zeros
from rlpyt.utils.prog_bar import ProgBarCounter
from rlpyt.utils.quick_args import save__init__args

# ---------------------------------------------------------------- iterate_mb_idxs


@given(data_length=st.integers(1, 200), minibatch_size=st.integers(1, 50))
def test_iterate_mb_idxs_in_order_covers_full_minibatches(data_length, minibatch_size):
    if minibatch_size > data_length:
        return
    batches = list(iterate_mb_idxs(data_length, minibatch_size))
    assert len(batches) == data_length // minibatch_size
    assert all(isinstance(b, slice) for b in batches)
    covered = np.concatenate([np.arange(data_length)[b] for b in batches])
    # In order, each item once, the partial tail dropped.
    np.testing.assert_array_equal(covered, np.arange(len(batches) * minibatch_size))


@given(data_length=st.integers(1, 200), minibatch_size=st.integers(1, 50), seed=st.integers(0, 99))
def test_iterate_mb_idxs_shuffled_is_disjoint_full_minibatches(data_length, minibatch_size, seed):
    if minibatch_size > data_length:
        return
    rng = np.random.default_rng(seed)
    batches = list(iterate_mb_idxs(data_length, minibatch_size, shuffle=True, rng=rng))
    assert len(batches) == data_length // minibatch_size
    assert all(len(b) == minibatch_size for b in batches)
    covered = np.concatenate(batches)
    assert len(np.unique(covered)) == len(covered)
    assert covered.min() >= 0 and covered.max() < data_length


def test_iterate_mb_idxs_shuffle_follows_global_seed_and_actually_shuffles():
    np.random.seed(3)
    first = np.concatenate(list(iterate_mb_idxs(100, 10, shuffle=True)))
    np.random.seed(3)
    second = np.concatenate(list(iterate_mb_idxs(100, 10, shuffle=True)))
    np.testing.assert_array_equal(first, second)
    assert not np.array_equal(first, np.arange(100))
    np.testing.assert_array_equal(np.sort(first), np.arange(100))


@pytest.mark.parametrize(
    "args, error",
    [((10, 0), ValueError), ((5, 6), ValueError), ((-1, 1), ValueError), ((10.0, 2), TypeError)],
)
def test_iterate_mb_idxs_rejects_bad_sizes(args, error):
    with pytest.raises(error, match="data_length|minibatch_size"):
        list(iterate_mb_idxs(*args))


# ---------------------------------------------------------------- extract_sequences


def _loop_extract(array, T_idxs, B_idxs, T):
    """Reference: classic rlpyt's per-sample loop, splitting wrapped windows in two."""
    T_total = len(array)
    out = np.zeros((T, len(B_idxs)) + array.shape[2:], dtype=array.dtype)
    for i, (t, b) in enumerate(zip(T_idxs, B_idxs)):
        if t + T > T_total:
            m = T_total - t
            out[:m, i] = array[t:, b]
            out[m:, i] = array[: T - m, b]
        else:
            out[:, i] = array[t : t + T, b]
    return out


@st.composite
def _ring_and_windows(draw):
    T_total = draw(st.integers(1, 12))
    B_total = draw(st.integers(1, 5))
    trailing = draw(st.sampled_from([(), (3,), (2, 2)]))
    T = draw(st.integers(1, T_total))
    n = draw(st.integers(0, 10))
    T_idxs = draw(st.lists(st.integers(0, T_total - 1), min_size=n, max_size=n))
    B_idxs = draw(st.lists(st.integers(0, B_total - 1), min_size=n, max_size=n))
    size = T_total * B_total * int(np.prod(trailing, dtype=int))
    array = np.arange(size, dtype=np.float32).reshape((T_total, B_total) + trailing)
    return array, np.array(T_idxs, dtype=np.int64), np.array(B_idxs, dtype=np.int64), T


@settings(max_examples=200, deadline=None)
@given(_ring_and_windows())
def test_extract_sequences_matches_loop(case):
    array, T_idxs, B_idxs, T = case
    expected = _loop_extract(array, T_idxs, B_idxs, T)
    result = extract_sequences(array, T_idxs, B_idxs, T)
    assert result.shape == expected.shape
    np.testing.assert_array_equal(result, expected)


@settings(max_examples=50, deadline=None)
@given(_ring_and_windows())
def test_extract_sequences_on_namedarraytuple_and_tensor(case):
    array, T_idxs, B_idxs, T = case
    Inner = namedarraytuple("Inner", ["a"])
    Outer = namedarraytuple("Outer", ["x", "skip", "inner"])
    T_total, B_total = array.shape[:2]
    other = np.arange(T_total * B_total, dtype=np.int64).reshape(T_total, B_total) * 7
    buf = Outer(x=array, skip=None, inner=Inner(a=torch.from_numpy(other)))
    result = extract_sequences(buf, T_idxs, B_idxs, T)
    assert isinstance(result, Outer) and result.skip is None
    np.testing.assert_array_equal(result.x, _loop_extract(array, T_idxs, B_idxs, T))
    assert isinstance(result.inner.a, torch.Tensor)
    np.testing.assert_array_equal(result.inner.a.numpy(), _loop_extract(other, T_idxs, B_idxs, T))


def test_extract_sequences_wraps_past_the_ring_end():
    array = np.arange(5)[:, None] * np.ones((1, 2), dtype=int) + np.array([0, 100])  # [5, 2]
    result = extract_sequences(array, T_idxs=[3, 0], B_idxs=[1, 0], T=4)
    np.testing.assert_array_equal(result[:, 0], [103, 104, 100, 101])
    np.testing.assert_array_equal(result[:, 1], [0, 1, 2, 3])


def test_extract_sequences_returns_a_copy():
    array = np.zeros((4, 2))
    result = extract_sequences(array, [0], [0], 2)
    result[:] = 1
    assert array.sum() == 0


@pytest.mark.parametrize(
    "T_idxs, B_idxs, T, match",
    [
        ([0], [0], 5, "T=5 exceeds"),
        ([4], [0], 2, "T_idxs must lie in"),
        ([-1], [0], 2, "T_idxs must lie in"),
        ([0], [2], 2, "B_idxs must lie in"),
        ([0, 1], [0], 2, "must match"),
        ([0], [0], 0, "T must be >= 1"),
        ([[0]], [0], 1, "must be 1-D"),
        ([0.5], [0], 1, "must hold integers"),
    ],
)
def test_extract_sequences_rejects_bad_input(T_idxs, B_idxs, T, match):
    with pytest.raises((ValueError, TypeError), match=match):
        extract_sequences(np.zeros((4, 2)), T_idxs, B_idxs, T)


# ---------------------------------------------------------------- zeros / empty


def test_zeros_and_empty_numpy_and_torch():
    z = zeros((2, 3), np.float32)
    assert isinstance(z, np.ndarray) and z.dtype == np.float32 and not z.any()
    assert isinstance(zeros(4, "int64"), np.ndarray)
    e = empty((3,), np.uint8)
    assert isinstance(e, np.ndarray) and e.shape == (3,) and e.dtype == np.uint8
    t = zeros((2, 3), torch.float32)
    assert isinstance(t, torch.Tensor) and t.dtype == torch.float32 and not t.any()
    assert empty((5,), torch.int64).dtype == torch.int64
    with pytest.raises(TypeError, match="dtype="):
        zeros((2,), object())


# ---------------------------------------------------------------- save__init__args


class _Base:
    def __init__(self, a, b=2, *args, c=3, **kwargs):
        save__init__args(locals())


class _Child(_Base):
    def __init__(self, a, d=4):
        save__init__args(locals())
        super().__init__(a=a * 10, b=5)


class _ChildOnly(_Base):
    def __init__(self, a, b=7, d=4):
        save__init__args(locals(), subclass_only=True)
        super().__init__(a, b)


class _GrandChild(_ChildOnly):
    def __init__(self, e=9):
        super().__init__(a=1)


def test_save__init__args_stores_named_args_not_varargs():
    obj = _Base(1, 2, 99, c=8, extra=5)
    assert (obj.a, obj.b, obj.c) == (1, 2, 8)
    assert not hasattr(obj, "args") and not hasattr(obj, "kwargs") and not hasattr(obj, "extra")


def test_save__init__args_keeps_existing_unless_overwrite():
    obj = _Child(1)
    # The child stored a=1 first; the base call with a=10 does not overwrite it.
    assert (obj.a, obj.d, obj.b, obj.c) == (1, 4, 5, 3)

    class Over(_Base):
        def __init__(self, a):
            self.a = "old"
            save__init__args(locals(), overwrite=True)

    assert Over(7).a == 7


def test_save__init__args_underscore():
    class U:
        def __init__(self, x, y=1):
            save__init__args(locals(), underscore=True)

    u = U(3)
    assert (u._x, u._y) == (3, 1) and not hasattr(u, "x")


def test_save__init__args_subclass_only_uses_the_calling_init():
    obj = _GrandChild()
    # _ChildOnly's call (subclass_only) stored its own args a, b, d, even though
    # type(obj) is _GrandChild, whose __init__ has only `e`.
    assert (obj.a, obj.b, obj.d) == (1, 7, 4)
    assert obj.c == 3  # from _Base's own (non subclass_only) call
    assert not hasattr(obj, "e")


def test_save__init__args_needs_self():
    with pytest.raises(ValueError, match="'self'"):
        save__init__args({"a": 1})


# ---------------------------------------------------------------- ProgBarCounter


class _FakeTTY(io.StringIO):
    def isatty(self):
        return True


def test_prog_bar_quiet_when_not_a_tty(capsys, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    bar = ProgBarCounter(100)  # stdout is captured by pytest: not a TTY
    for count in range(0, 150, 10):
        bar.update(count)
    bar.stop()
    assert capsys.readouterr().out == ""
    stream = io.StringIO()
    bar = ProgBarCounter(10, stream=stream)
    bar.update(5)
    bar.stop()
    assert stream.getvalue() == ""


def test_prog_bar_quiet_under_ci_or_tabular_only(monkeypatch):
    monkeypatch.setenv("CI", "true")
    stream = _FakeTTY()
    ProgBarCounter(10, stream=stream).stop()
    assert stream.getvalue() == ""
    monkeypatch.delenv("CI")
    logger.set_log_tabular_only(True)
    try:
        stream = _FakeTTY()
        ProgBarCounter(10, stream=stream).stop()
        assert stream.getvalue() == ""
    finally:
        logger.set_log_tabular_only(False)


def test_prog_bar_draws_on_a_tty_and_survives_overshoot(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    stream = _FakeTTY()
    bar = ProgBarCounter(200, stream=stream)
    bar.update(50)
    bar.update(1000)  # past the total: a full bar
    bar.stop()
    bar.update(60)  # after stop: no output, no error
    out = stream.getvalue()
    assert out.startswith("\r") and out.endswith("\n")
    final = out.rstrip("\n").split("\r")[-1]
    assert "100%" in final and "200/200" in final and "step/s" in final
    assert bar.count == 60  # the count itself is kept as given


def test_prog_bar_redraws_at_most_every_tenth_of_a_second(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    stream = _FakeTTY()
    bar = ProgBarCounter(100_000, stream=stream)
    for count in range(1, 10_001):
        bar.update(count)
    bar.stop()
    assert stream.getvalue().count("\r") < 100  # not one redraw per update
    assert "10000/100000" in stream.getvalue().split("\r")[-1]


def test_prog_bar_rejects_bad_total():
    with pytest.raises(ValueError, match="total_count"):
        ProgBarCounter(0)


def test_prog_bar_starts_at_initial_and_log_lines_print_above_it(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    stream = _FakeTTY()
    bar = ProgBarCounter(1000, stream=stream, initial=400, unit="env step")
    try:
        logger.log("a log line", with_timestamp=False)  # through tqdm.write, not print
        bar.update(500)
    finally:
        bar.stop()
    out = stream.getvalue()
    assert "a log line\n" in out
    final = out.rstrip("\n").split("\r")[-1]
    assert "500/1000" in final and "env step/s" in final
    logger.log("after")  # the bar is gone: plain print again, nothing on the stream
    assert "after" not in stream.getvalue()


def test_run_progress_counts_env_steps_of_the_whole_run(monkeypatch):
    from types import SimpleNamespace

    from rlpyt.runners.diagnostics import RunProgress

    monkeypatch.delenv("CI", raising=False)
    stream = _FakeTTY()
    monkeypatch.setattr("sys.stdout", stream)
    diagnostics = SimpleNamespace(last_itr=2, itr_batch_size=256, n_itr=10)  # resumed at itr 3
    progress = RunProgress(diagnostics)
    progress.update(1)  # itr 3 done
    diagnostics.last_itr = 5
    progress.update(2)  # itr 7 done
    progress.stop()
    final = stream.getvalue().rstrip("\n").split("\r")[-1]
    assert "2048/2560" in final
