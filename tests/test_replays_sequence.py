"""Sequence replay buffers against plain-loop references on random streams."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_replays_reference import (
    SamplesToBuffer,
    Stream,
    ref_n_step,
    ref_previous,
    retained_steps,
)

from rlpyt.replays.base import PrioritiesSamplesToBuffer
from rlpyt.replays.sequence.frame import (
    AsyncPrioritizedSequenceReplayFrameBuffer,
    AsyncUniformSequenceReplayFrameBuffer,
    PrioritizedSequenceReplayFrameBuffer,
    UniformSequenceReplayFrameBuffer,
)
from rlpyt.replays.sequence.prioritized import (
    AsyncPrioritizedSequenceReplayBuffer,
    PrioritizedSequenceReplayBuffer,
)
from rlpyt.replays.sequence.uniform import (
    AsyncUniformSequenceReplayBuffer,
    UniformSequenceReplayBuffer,
)

BUFFERS = {
    "uniform": (UniformSequenceReplayBuffer, {}),
    "prioritized": (PrioritizedSequenceReplayBuffer, {}),
    "frame_uniform": (UniformSequenceReplayFrameBuffer, {"n_frames": None}),
    "frame_prioritized": (PrioritizedSequenceReplayFrameBuffer, {"n_frames": None}),
    "async_uniform": (AsyncUniformSequenceReplayBuffer, {}),
    "async_prioritized": (AsyncPrioritizedSequenceReplayBuffer, {}),
    "async_frame_uniform": (AsyncUniformSequenceReplayFrameBuffer, {"n_frames": None}),
    "async_frame_prioritized": (AsyncPrioritizedSequenceReplayFrameBuffer,
                                {"n_frames": None}),
}


def reads_before(stream_kwargs):
    return max(1, stream_kwargs.get("n_frames", 1) - 1)


@st.composite
def setups(draw):
    name = draw(st.sampled_from(sorted(BUFFERS)))
    n_frames = draw(st.sampled_from([1, 3]))
    stream_kwargs = {k: (n_frames if v is None else v) for k, v in BUFFERS[name][1].items()}
    rsi = draw(st.integers(0, 3))
    interval = max(rsi, 1)
    batch_T, warmup_T, n = draw(st.integers(1, 4)), draw(st.integers(0, 3)), draw(st.integers(1, 3))
    length = warmup_T + batch_T + n
    min_rows = math.ceil(length / interval) + math.ceil(reads_before(stream_kwargs) / interval)
    rows = draw(st.integers(min_rows, min_rows + 4))
    # Appends of any length: the row grid need not line up with the batches.
    appends = draw(st.lists(st.integers(1, rows * interval), min_size=1, max_size=8))
    return dict(
        name=name, stream_kwargs=stream_kwargs, B=draw(st.integers(1, 3)), rsi=rsi, interval=interval, batch_T=batch_T,
        warmup_T=warmup_T, n=n, T=rows * interval, appends=appends,
        discount=draw(st.sampled_from([1.0, 0.8])), seed=draw(st.integers(0, 2**16)),
    )


def check_against_reference(buf, stream, setup, before):
    h, B, count = stream.history, stream.B, stream.count
    interval, n = setup["interval"], setup["n"]
    trained = setup["warmup_T"] + setup["batch_T"]
    length = trained + n
    valid = [p for p in retained_steps(count, buf.T, before, length - 1) if p % interval == 0]
    low, high = buf.valid_row_range()
    assert [u * interval for u in range(low, high)] == valid
    assert buf.rows_begun() == math.ceil(count / interval)
    if setup["rsi"] > 0:  # The state of every row begun and not overwritten is stored.
        for u in range(max(0, buf.rows_begun() - buf.n_rows), buf.rows_begun()):
            for b in range(B):
                stored = buf.samples_prev_rnn_state[u % buf.n_rows, b]
                assert np.array_equal(stored.h, h["h"][u * interval, b])
                assert np.array_equal(stored.c, h["c"][u * interval, b])
    if hasattr(buf, "priority_tree"):
        assert buf.priority_tree.count == buf.rows_begun()
        expected = np.zeros((buf.n_rows, B), dtype=bool)
        expected[(np.array(valid, dtype=np.int64) // interval) % buf.n_rows] = True
        assert np.array_equal(buf.priority_tree.leaf_values() > 0, expected)
    if not valid:
        with pytest.raises(RuntimeError, match="sample"):
            buf.sample_batch(2)
        return
    starts = np.repeat(valid, B)
    envs = np.tile(np.arange(B), len(valid))
    batch = buf.extract_batch(starts % buf.T, envs)
    assert batch.all_observation.shape[:2] == (length, len(starts))
    assert batch.return_.shape == (trained, len(starts))
    for i, (p, b) in enumerate(zip(starts, envs)):
        for k in range(length):
            assert np.array_equal(batch.all_observation[k, i].numpy(), h["observation"][p + k, b])
            assert batch.all_action[k, i] == ref_previous(h, "action", p + k, b)
            assert batch.all_reward[k, i] == ref_previous(h, "reward", p + k, b)
        for k in range(trained):
            ret, done_n, _ = ref_n_step(h, p + k, b, n, setup["discount"])
            assert batch.return_[k, i].item() == pytest.approx(ret, rel=1e-5, abs=1e-5)
            assert batch.done[k, i] == h["done"][p + k, b]
            assert batch.done_n[k, i] == done_n
        if setup["rsi"] > 0:
            assert np.array_equal(batch.init_rnn_state.h[i].numpy(), h["h"][p, b])
            assert np.array_equal(batch.init_rnn_state.c[i].numpy(), h["c"][p, b])
        else:
            assert batch.init_rnn_state is None


@settings(max_examples=60, deadline=None)
@given(setups())
def test_sequence_buffers_match_reference_on_random_streams(setup):
    cls, stream_kwargs = BUFFERS[setup["name"]][0], setup["stream_kwargs"]
    stream = Stream(setup["B"], seed=setup["seed"], rnn=True, **stream_kwargs)
    buf = cls(stream.example(), setup["T"] * setup["B"], setup["B"],
              discount=setup["discount"], n_step_return=setup["n"], batch_T=setup["batch_T"],
              rnn_state_interval=setup["rsi"], warmup_T=setup["warmup_T"])
    for T_new in setup["appends"]:
        buf.append_samples(stream.batch(T_new))
        check_against_reference(buf, stream, setup, reads_before(stream_kwargs))


def sequence_buffer(cls=PrioritizedSequenceReplayBuffer, B=2, T=24, **kwargs):
    stream = Stream(B, seed=5, rnn=True)
    kwargs = dict(dict(batch_T=4, rnn_state_interval=2, warmup_T=2, n_step_return=2), **kwargs)
    return cls(stream.example(), T * B, B, **kwargs), stream


def test_sample_batch_shapes_and_weights():
    np.random.seed(0)
    buf, stream = sequence_buffer()
    for _ in range(6):
        buf.append_samples(stream.batch(4))
    batch = buf.sample_batch(5)
    assert batch.all_observation.shape == (8, 5, 3)
    assert batch.all_action.shape == batch.all_reward.shape == (8, 5)
    assert batch.return_.shape == batch.done.shape == batch.done_n.shape == (6, 5)
    assert batch.init_rnn_state.h.shape == (5, 1, 4)
    assert batch.is_weights.shape == (5,)
    buf.update_batch_priorities(np.arange(1.0, 6.0))


def test_input_priorities_go_to_the_shifted_sequence_starts():
    buf, stream = sequence_buffer(alpha=1.0, input_priorities=True, input_priority_shift=1)
    first = np.array([[1.0, 2.0], [3.0, 4.0]])  # Two new starts (T=4, interval 2).
    buf.append_samples(PrioritiesSamplesToBuffer(priorities=first, samples=stream.batch(4)))
    stored = buf.priority_tree.priorities
    # Rows 0, 1 are new (max priority 1), row 0 then takes the second input row's value
    # shifted back by one; the first input row would go to row -1, which does not exist.
    assert np.array_equal(stored[:2], [[3.0, 4.0], [1.0, 1.0]])
    assert np.all(stored[2:] == 0)
    buf.append_samples(PrioritiesSamplesToBuffer(priorities=np.array([5.0, 6.0]),
                                                 samples=stream.batch(4)))
    assert np.array_equal(stored[:4], [[3.0, 4.0], [5.0, 6.0], [5.0, 6.0], [4.0, 4.0]])


def test_update_priorities_takes_sequence_starts():
    buf, stream = sequence_buffer(alpha=1.0)
    buf.append_samples(stream.batch(8))
    buf.update_priorities([2, 6], [1, 0], [3.0, 5.0])
    assert buf.priority_tree.priorities[1, 1] == 3.0
    assert buf.priority_tree.priorities[3, 0] == 5.0
    with pytest.raises(ValueError, match="multiples of 2"):
        buf.update_priorities([3], [0], [1.0])


def test_errors_name_the_argument():
    stream = Stream(2, seed=0, rnn=True)
    example = stream.example()
    with pytest.raises(ValueError, match="multiple of rnn_state_interval=5"):
        UniformSequenceReplayBuffer(example, 24 * 2, 2, batch_T=4, rnn_state_interval=5)
    with pytest.raises(ValueError, match="prev_rnn_state"):
        UniformSequenceReplayBuffer(SamplesToBuffer(*tuple(example)[:4]), 48, 2, batch_T=4,
                                    rnn_state_interval=2)
    with pytest.raises(ValueError, match="batch_T=0"):
        UniformSequenceReplayBuffer(example, 48, 2, batch_T=0, rnn_state_interval=2)
    with pytest.raises(ValueError, match="larger size"):
        UniformSequenceReplayBuffer(example, 16, 2, batch_T=6, rnn_state_interval=2,
                                    warmup_T=2)
    with pytest.raises(TypeError, match="rnn_state_interval"):
        UniformSequenceReplayBuffer(example, 48, 2, batch_T=4)
    buf = UniformSequenceReplayBuffer(example, 48, 2, batch_T=4, rnn_state_interval=2)
    buf.append_samples(stream.batch(3))  # Any T: the row grid need not match the batches.
    buf.append_samples(stream.batch(12))
    with pytest.raises(ValueError, match="start at multiples"):
        buf.extract_batch([1], [0])
    prioritized, stream = sequence_buffer(input_priorities=True)
    with pytest.raises(ValueError, match=r"do not fit \[2, 2\] .* or \[3, 2\]"):
        prioritized.append_samples(PrioritiesSamplesToBuffer(priorities=np.ones((4, 2)),
                                                             samples=stream.batch(3)))


@pytest.mark.parametrize("interval, appends", [(4, [3, 3, 3, 5, 6, 2, 9]), (3, [1, 7, 2, 4])])
def test_per_step_input_priorities_go_to_the_row_starts_among_the_steps(interval, appends):
    """Priorities given for every step are applied to the steps on the row grid, shifted."""
    shift, B = 1, 2
    buf, stream = sequence_buffer(alpha=1.0, input_priorities=True, input_priority_shift=shift,
                                  rnn_state_interval=interval, T=12 * interval, batch_T=2,
                                  warmup_T=interval, n_step_return=1)
    given = {}  # global step -> per-env priority given with it
    count = 0
    for T_new in appends:
        steps = np.arange(count, count + T_new)
        values = 10.0 * steps[:, None] + np.arange(B) + 1  # [T_new, B], distinct per step
        given.update(zip(steps.tolist(), values))
        buf.append_samples(PrioritiesSamplesToBuffer(priorities=values,
                                                     samples=stream.batch(T_new)))
        count += T_new
        for u in range(buf.rows_begun()):
            # Row u takes the priority given at the start step of row u + shift, once that
            # step has arrived; before that, the max priority seen when row u began.
            source = (u + shift) * interval
            stored = buf.priority_tree.priorities[u % buf.n_rows]
            if source < count:
                assert np.array_equal(stored, given[source]), (u, count)
        assert buf.priority_tree.count == buf.rows_begun()
