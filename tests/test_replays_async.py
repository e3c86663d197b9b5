"""Async replay twins shared across processes (fork and spawn)."""

from __future__ import annotations

import multiprocessing as mp

import numpy as np
import pytest
from test_replays import check_against_reference
from test_replays_reference import Stream

from rlpyt.replays.non_sequence.frame import AsyncPrioritizedReplayFrameBuffer
from rlpyt.replays.non_sequence.uniform import AsyncUniformReplayBuffer
from rlpyt.replays.sequence.prioritized import AsyncPrioritizedSequenceReplayBuffer

APPENDS = (5, 6, 7, 9)


def append_stream(buf, seed, stream_kwargs, appends):
    """Child process: append a seeded stream's batches."""
    stream = Stream(buf.B, seed=seed, **stream_kwargs)
    for T_new in appends:
        buf.append_samples(stream.batch(T_new))


def append_then_report(buf, seed, stream_kwargs, appends, queue, go):
    """Child process: append a seeded stream, then (when told) report what this process
    sees of the shared state."""
    append_stream(buf, seed, stream_kwargs, appends)
    queue.put("appended")
    if go.wait(timeout=60):
        queue.put((buf.count, buf.priority_tree.total, buf.priority_tree.leaf_values().copy()))


def append_tagged(buf, writer, n_batches, T_new):
    """Child process: append batches whose rewards say (writer, batch number)."""
    stream = Stream(buf.B, seed=writer)
    for i in range(n_batches):
        batch = stream.batch(T_new)
        batch.reward[:] = 1000 * writer + i
        buf.append_samples(batch)


def run_child(ctx, target, *args):
    proc = ctx.Process(target=target, args=args)
    proc.start()
    proc.join(timeout=120)
    assert proc.exitcode == 0, f"child {target.__name__} failed with exit code {proc.exitcode}"


@pytest.mark.parametrize("start_method", ["fork", "spawn"])
def test_state_written_in_one_process_is_seen_in_the_others(start_method):
    ctx = mp.get_context(start_method)
    stream_kwargs = {"n_frames": 4}
    stream = Stream(2, seed=11, **stream_kwargs)
    buf = AsyncPrioritizedReplayFrameBuffer(stream.example(), 20, 2, discount=0.9,
                                            n_step_return=2)
    queue, go = ctx.Queue(), ctx.Event()
    child = ctx.Process(target=append_then_report,
                        args=(buf, 11, stream_kwargs, APPENDS, queue, go))
    child.start()
    try:
        assert queue.get(timeout=60) == "appended"
        for T_new in APPENDS:  # The same stream in this process, as the reference.
            stream.batch(T_new)
        assert buf.count == sum(APPENDS)
        check_against_reference(buf, stream, 2, 0.9, 3)

        np.random.seed(0)
        buf.sample_batch(16)
        buf.update_batch_priorities(np.linspace(1.0, 4.0, 16))
        go.set()
        count, total, leaves = queue.get(timeout=60)
    finally:
        go.set()
        child.join(timeout=60)
    assert child.exitcode == 0
    assert count == buf.count
    assert total == buf.priority_tree.total
    assert np.array_equal(leaves, buf.priority_tree.leaf_values())


def test_sequence_twin_shares_rnn_states_across_fork():
    ctx = mp.get_context("fork")
    stream = Stream(2, seed=4, rnn=True)
    buf = AsyncPrioritizedSequenceReplayBuffer(stream.example(), 48, 2, batch_T=4,
                                               rnn_state_interval=2, warmup_T=2)
    run_child(ctx, append_stream, buf, 4, {"rnn": True}, (8, 8, 6))
    for T_new in (8, 8, 6):
        stream.batch(T_new)
    assert np.array_equal(buf.samples_prev_rnn_state.h[:11], stream.history["h"][0:22:2])
    assert buf.sample_batch(3).init_rnn_state.c.shape == (3, 1, 4)


def test_concurrent_writers_append_whole_batches_while_a_reader_samples():
    ctx = mp.get_context("fork")
    T_new, n_batches = 3, 15
    buf = AsyncUniformReplayBuffer(Stream(2, seed=0).example(), 2 * 100, 2)
    procs = [ctx.Process(target=append_tagged, args=(buf, w, n_batches, T_new))
             for w in (1, 2)]
    for p in procs:
        p.start()
    n_sampled = 0
    while any(p.is_alive() for p in procs):
        if buf.valid_row_range()[1] > buf.valid_row_range()[0]:
            assert buf.sample_batch(8).return_.shape == (8,)
            n_sampled += 1
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert buf.count == 2 * n_batches * T_new
    tags = buf.samples.reward[:buf.count, 0].reshape(-1, T_new)
    assert np.all(tags == tags[:, :1]), "a batch was interleaved with another writer's"
    for writer in (1, 2):  # Each writer's batches arrive whole and in order.
        mine = tags[:, 0][tags[:, 0] // 1000 == writer] % 1000
        assert np.array_equal(mine, np.arange(n_batches))
