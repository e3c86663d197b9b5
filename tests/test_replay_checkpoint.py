"""Replay buffers saved to a file and loaded into a fresh buffer continue identically."""

from __future__ import annotations

import io
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_replays import BUFFERS, concrete
from test_replays_reference import Stream

from rlpyt.replays.non_sequence.frame import UniformReplayFrameBuffer


def arrays_of(buf):
    from rlpyt.replays.replay_file import _contents

    arrays, scalars = _contents(buf)
    return {path: a.copy() for path, a in arrays}, scalars


@settings(max_examples=30, deadline=None)
@given(name=st.sampled_from(sorted(BUFFERS)), B=st.integers(1, 3), appends=st.lists(
    st.integers(1, 9), min_size=1, max_size=5), seed=st.integers(0, 2**16))
def test_round_trip_restores_contents_and_sampling(name, B, appends, seed):
    cls, stream_kwargs = BUFFERS[name][0], concrete(BUFFERS[name][1], 2)
    stream = Stream(B, seed=seed, **stream_kwargs)
    make = lambda: cls(stream.example(), 10 * B, B, discount=0.9, n_step_return=2)  # noqa: E731
    buf = make()
    for T_new in appends:
        buf.append_samples(stream.batch(T_new))
    f = io.BytesIO()
    buf.save_state(f)
    f.seek(0)
    loaded = make()
    loaded.load_state(f)
    before, after = arrays_of(buf), arrays_of(loaded)
    assert before[1] == after[1] and before[0].keys() == after[0].keys()
    for path in before[0]:
        assert np.array_equal(before[0][path], after[0][path]), path
    if buf.valid_row_range()[1] > buf.valid_row_range()[0]:
        np.random.seed(seed)
        expected = buf.sample_batch(4)
        np.random.seed(seed)
        got = loaded.sample_batch(4)
        for a, b in zip(expected, got):
            assert all(np.array_equal(x, y) for x, y in zip(_leaves(a), _leaves(b)))


def _leaves(x):
    if isinstance(x, tuple):
        for item in x:
            yield from _leaves(item)
    elif x is not None:
        yield np.asarray(x)


def test_saving_a_frame_buffer_makes_no_copy_of_it():
    stream = Stream(4, seed=0, n_frames=4)
    example = stream.example()
    example = example._replace(observation=np.zeros((4, 84, 84), np.uint8))
    buf = UniformReplayFrameBuffer(example, 40_000, 4)  # ~280 MB of frames
    buf.samples_frames[:] = 7

    class Sink(io.RawIOBase):  # counts bytes, keeps none
        n = 0

        def writable(self):
            return True

        def write(self, b):
            self.n += memoryview(b).nbytes
            return memoryview(b).nbytes

    sink = Sink()
    tracemalloc.start()
    buf.save_state(sink)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert sink.n > buf.samples_frames.nbytes
    assert peak < 5e6, f"saving allocated {peak / 1e6:.1f} MB"


def test_loading_into_a_buffer_of_another_size_names_the_mismatch():
    stream = Stream(2, seed=0)
    buf = BUFFERS["uniform"][0](stream.example(), 20, 2)
    f = io.BytesIO()
    buf.save_state(f)
    f.seek(0)
    other = BUFFERS["uniform"][0](stream.example(), 40, 2)
    with pytest.raises(ValueError, match="was replay_size, batch_B or the env changed"):
        other.load_state(f)


@pytest.mark.parametrize("prioritized", [True, False])
def test_sequence_buffer_resumes_mid_row(prioritized):
    """Appends that end between stored RNN states (sampler batch_T 3, state interval 4):
    a buffer saved there and loaded continues exactly as the original (rows, states,
    priorities, the sum tree's cursor and window)."""
    from rlpyt.replays.base import PrioritiesSamplesToBuffer
    from rlpyt.replays.sequence.prioritized import PrioritizedSequenceReplayBuffer
    from rlpyt.replays.sequence.uniform import UniformSequenceReplayBuffer

    B, rng = 2, np.random.default_rng(0)
    stream = Stream(B, seed=3, rnn=True)
    kwargs = dict(discount=0.9, n_step_return=2, batch_T=3, rnn_state_interval=4, warmup_T=2)
    if prioritized:
        kwargs.update(input_priorities=True, input_priority_shift=1)
    cls = PrioritizedSequenceReplayBuffer if prioritized else UniformSequenceReplayBuffer

    def make():
        return cls(stream.example(), 40 * B, B, **kwargs)

    def batch(T_new):
        samples = stream.batch(T_new)
        if prioritized:
            return PrioritiesSamplesToBuffer(priorities=rng.random((T_new, B)) + 0.1,
                                             samples=samples)
        return samples

    buf = make()
    for T_new in (3, 3, 3, 3, 3, 3, 3):  # 21 steps: the last row (20) begun mid-batch
        buf.append_samples(batch(T_new))
    f = io.BytesIO()
    buf.save_state(f)
    f.seek(0)
    loaded = make()
    loaded.load_state(f)
    for T_new in (3, 3, 5, 3, 3, 3, 3, 3, 3, 3, 3):  # wraps the 40-step ring
        new = batch(T_new)
        buf.append_samples(new)
        loaded.append_samples(new)
        before, after = arrays_of(buf), arrays_of(loaded)
        for path in before[0]:
            assert np.array_equal(before[0][path], after[0][path]), path
        assert loaded.valid_row_range() == buf.valid_row_range()
        np.random.seed(T_new)
        expected = buf.sample_batch(4)
        np.random.seed(T_new)
        got = loaded.sample_batch(4)
        for a, b in zip(expected, got):
            assert all(np.array_equal(x, y) for x, y in zip(_leaves(a), _leaves(b)))
        if prioritized:
            buf.update_batch_priorities(np.arange(1.0, 5.0))
            loaded.update_batch_priorities(np.arange(1.0, 5.0))
