"""rlpyt.utils.seed and rlpyt.utils.synchronize (across forked and spawned processes).

torch is imported inside the tests that need it, so spawned children (which import
this module to find their target functions) start quickly.
"""

import multiprocessing as mp
import queue
import random
import socket
import threading
import time

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rlpyt.utils.seed import env_seeds, get_seed, make_seed, set_envs_seeds, set_seed
from rlpyt.utils.synchronize import RWLock, drain_queue, find_port

JOIN_TIMEOUT = 60  # Generous for a loaded machine; a deadlock still fails the test.

# ---------------------------------------------------------------- seeds


class _Env:
    def __init__(self):
        self.seeded_with = None

    def seed(self, seed):
        self.seeded_with = seed


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(0, 20), offset=st.integers(0, 20))
def test_env_seeds_offset_matches_slice_of_all(seed, n, offset):
    assert env_seeds(seed, n, offset) == env_seeds(seed, offset + n)[offset:]


def test_env_seeds_deterministic_distinct_and_from_one_seed_sequence():
    seeds = env_seeds(123, 64)
    assert seeds == env_seeds(123, 64)
    assert len(set(seeds)) == 64
    assert all(isinstance(s, int) and 0 <= s < 2**32 for s in seeds)
    children = np.random.SeedSequence(123).spawn(64)
    assert seeds == [int(c.generate_state(1)[0]) for c in children]
    assert env_seeds(124, 64) != seeds


def test_set_envs_seeds_gives_each_env_its_seed():
    envs = [_Env() for _ in range(5)]
    returned = set_envs_seeds(envs, 7)
    assert [e.seeded_with for e in envs] == env_seeds(7, 5) == returned
    # A worker owning envs 2..4 of the same run seeds them identically.
    worker_envs = [_Env() for _ in range(3)]
    set_envs_seeds(worker_envs, 7, offset=2)
    assert [e.seeded_with for e in worker_envs] == returned[2:]


def test_set_envs_seeds_none_leaves_envs_and_rejects_seedless_env():
    envs = [_Env()]
    assert set_envs_seeds(envs, None) is None
    assert envs[0].seeded_with is None
    with pytest.raises(TypeError, match=r"envs\[1\].*seed"):
        set_envs_seeds([_Env(), object()], 1)


def test_set_seed_makes_random_numpy_and_torch_repeat():
    import torch

    def draw():
        return random.random(), np.random.rand(), torch.rand(1).item()

    set_seed(42)
    first = draw()
    set_seed(42)
    assert draw() == first
    assert get_seed() == 42
    set_seed(43)
    assert draw() != first


@pytest.mark.parametrize("bad, error", [(-1, ValueError), (2**32, ValueError), (1.5, TypeError)])
def test_seed_range_is_checked(bad, error):
    with pytest.raises(error, match="seed"):
        set_seed(bad)
    with pytest.raises(error, match="seed"):
        env_seeds(bad, 2)


def test_make_seed_is_a_fresh_32_bit_int():
    seeds = [make_seed() for _ in range(8)]
    assert all(isinstance(s, int) and 0 <= s < 2**32 for s in seeds)
    assert len(set(seeds)) > 1


# ---------------------------------------------------------------- RWLock helpers (children)


def _hold_read_until(lock, holding, release):
    with lock.read_lock():
        with holding.get_lock():
            holding.value += 1
        release.wait(JOIN_TIMEOUT)


def _write_then_record(lock, order, tag, started):
    started.set()
    with lock.write_lock():
        _append(order, tag)


def _read_then_record(lock, order, tag, started):
    started.set()
    with lock:  # classic spelling of a read lock
        _append(order, tag)


def _append(order, tag):
    with order.get_lock():
        order[order[0] + 1] = tag
        order[0] += 1


def _stress(lock, counter, violations, n_iter):
    # counter[0]: completed writes; counter[1]: writers inside; counter[2]: readers inside.
    for i in range(n_iter):
        if i % 3 == 0:
            with lock.write_lock:
                with counter.get_lock():
                    counter[1] += 1
                    if counter[1] != 1 or counter[2] != 0:
                        violations.value += 1
                time.sleep(0.0005)
                with counter.get_lock():
                    counter[0] += 1
                    counter[1] -= 1
        else:
            with lock.read_lock():
                with counter.get_lock():
                    counter[2] += 1
                    if counter[1] != 0:
                        violations.value += 1
                time.sleep(0.0005)
                with counter.get_lock():
                    counter[2] -= 1


def _join_all(procs):
    for p in procs:
        p.join(JOIN_TIMEOUT)
    alive = [p for p in procs if p.is_alive()]
    for p in alive:
        p.kill()
    assert not alive, "RWLock deadlocked: processes still running"
    assert all(p.exitcode == 0 for p in procs), [p.exitcode for p in procs]


def _wait_for(condition, timeout=JOIN_TIMEOUT):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.005)


START_METHODS = ["fork", "spawn"]


@pytest.mark.parametrize("method", START_METHODS)
def test_rwlock_readers_share(method):
    ctx = mp.get_context(method)
    lock = RWLock()
    holding = ctx.Value("i", 0)
    release = ctx.Event()
    procs = [ctx.Process(target=_hold_read_until, args=(lock, holding, release)) for _ in range(2)]
    for p in procs:
        p.start()
    try:
        _wait_for(lambda: holding.value == 2)  # both inside the read lock at once
    finally:
        release.set()
        _join_all(procs)


@pytest.mark.parametrize("method", START_METHODS)
def test_rwlock_writer_excludes_and_is_preferred(method):
    ctx = mp.get_context(method)
    lock = RWLock()
    order = ctx.Array("i", 4)  # order[0]: count, then tags
    writer_started, reader_started = ctx.Event(), ctx.Event()
    lock.acquire_read()  # the parent is a reader
    writer = ctx.Process(target=_write_then_record, args=(lock, order, 1, writer_started))
    writer.start()
    try:
        # The writer waits for the parent's read lock to go ...
        _wait_for(lambda: lock._writers_waiting.value == 1)
        assert order[0] == 0
        # ... and a reader arriving now queues behind the waiting writer.
        reader = ctx.Process(target=_read_then_record, args=(lock, order, 2, reader_started))
        reader.start()
        assert reader_started.wait(JOIN_TIMEOUT)
        time.sleep(0.2)
        assert order[0] == 0
    finally:
        lock.release_read()
    _join_all([writer, reader])
    assert list(order) == [2, 1, 2, 0]  # writer first, then the reader


@pytest.mark.parametrize("method", START_METHODS)
def test_rwlock_stress_without_deadlock(method):
    ctx = mp.get_context(method)
    lock = RWLock()
    counter = ctx.Array("i", 3)
    violations = ctx.Value("i", 0)
    n_procs, n_iter = 4, 60
    procs = [
        ctx.Process(target=_stress, args=(lock, counter, violations, n_iter))
        for _ in range(n_procs)
    ]
    for p in procs:
        p.start()
    _join_all(procs)
    assert violations.value == 0
    assert counter[0] == n_procs * len(range(0, n_iter, 3))
    assert counter[1] == counter[2] == 0


def test_rwlock_threads_and_misuse():
    lock = RWLock()
    entered = threading.Event()

    def writer():
        with lock.write_lock():
            entered.set()

    with lock.read_lock():
        t = threading.Thread(target=writer)
        t.start()
        assert not entered.wait(0.1)  # blocked by our read lock
    t.join(JOIN_TIMEOUT)
    assert entered.is_set()
    with pytest.raises(RuntimeError, match="release_read"):
        lock.release_read()
    with pytest.raises(RuntimeError, match="release_write"):
        lock.release_write()


# ---------------------------------------------------------------- drain_queue


def _produce(q, items):
    for item in items:
        q.put(item)
    q.put(None)


def test_drain_queue_non_blocking_ignores_sentinels():
    q = queue.Queue()
    assert drain_queue(q) == []
    for item in [1, None, 2, 3]:
        q.put(item)
    assert drain_queue(q) == [1, 2, 3]
    assert q.empty()


def test_drain_queue_guard_sentinel_puts_it_back():
    q = queue.Queue()
    for item in [1, 2, None, 3]:
        q.put(item)
    assert drain_queue(q, guard_sentinel=True) == [1, 2]
    # The sentinel went back (behind 3), so a blocking drain still ends.
    assert drain_queue(q, n_sentinel=1, timeout=5) == [3]


@pytest.mark.parametrize("method", START_METHODS)
def test_drain_queue_waits_for_every_producer(method):
    ctx = mp.get_context(method)
    q = ctx.Queue()
    procs = [
        ctx.Process(target=_produce, args=(q, [10 * i + j for j in range(5)])) for i in range(3)
    ]
    for p in procs:
        p.start()
    contents = drain_queue(q, n_sentinel=3, timeout=JOIN_TIMEOUT)
    _join_all(procs)
    assert sorted(contents) == sorted(10 * i + j for i in range(3) for j in range(5))


def test_drain_queue_times_out_instead_of_hanging():
    q = queue.Queue()
    q.put("x")
    start = time.monotonic()
    with pytest.raises(TimeoutError, match="0 of n_sentinel=1"):
        drain_queue(q, n_sentinel=1, timeout=0.2)
    assert time.monotonic() - start < 5


def test_drain_queue_rejects_bad_arguments():
    with pytest.raises(ValueError, match="guard_sentinel"):
        drain_queue(queue.Queue(), n_sentinel=1, guard_sentinel=True)
    with pytest.raises(ValueError, match="n_sentinel"):
        drain_queue(queue.Queue(), n_sentinel=-1)


# ---------------------------------------------------------------- find_port


def test_find_port_returns_a_bindable_port():
    for port in (find_port(), find_port(offset=3)):
        assert 0 < port < 65536
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", port))
    assert find_port(offset=3) >= 29503
    with pytest.raises(ValueError, match="offset"):
        find_port(offset=-1)
