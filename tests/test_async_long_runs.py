"""AsyncRl and long things.  A huge ``n_steps`` (``rlpyt train --runner async --n-steps
1e12``) starts sampling and training at once: nothing of its start-up grows with the
number of iterations (the evaluation schedule was once listed as a set of ~1e10
iterations).  A Ctrl-C while the sampler is inside a long batch (or evaluation), where
it does not look at the stop request, still ends the run within seconds (it waited 5 s
for the sampler, then more)."""

from __future__ import annotations

import _thread
import signal
import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_async_rl import SlowEnv, cartpole_sampler, small_dqn, train

from rlpyt.runners.async_rl import AsyncRl, AsyncRlEval, EvalItrs
from rlpyt.samplers.async_.serial_sampler import AsyncSerialSampler

START_DEADLINE_S = 60.0  # Typically 3-6 s on a loaded 2-core machine.


@pytest.fixture
def python_sigint():
    """Python's own SIGINT handler for the test: ``_thread.interrupt_main`` does nothing
    where SIGINT is ignored, as in a test run started as a background job (``make test
    &``), and the run would then go on to the test's timeout."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@given(n_itr=st.integers(1, 60), log_interval_itrs=st.integers(1, 12),
       start_itr=st.integers(0, 70))
@settings(max_examples=300, deadline=None)
def test_eval_itrs_match_the_listed_schedule(n_itr, log_interval_itrs, start_itr):
    # Plain-loop reference: every log row's iteration and the last, from the resume point
    # on (a run resumed with every batch sampled still evaluates its last), and -1 for
    # the evaluation before training in a fresh run.
    listed = set()
    for itr in range(min(start_itr, n_itr - 1), n_itr):
        if (itr + 1) % log_interval_itrs == 0 or itr == n_itr - 1:
            listed.add(itr)
    if start_itr == 0:
        listed.add(-1)
    itrs = EvalItrs(first=min(start_itr, n_itr - 1), n_itr=n_itr,
                    log_interval_itrs=log_interval_itrs, before_start=start_itr == 0)
    assert {itr for itr in range(-5, n_itr + 5) if itr in itrs} == listed


def test_eval_itrs_of_a_huge_run_take_no_time():
    start = time.process_time()
    itrs = EvalItrs(first=0, n_itr=10 ** 15, log_interval_itrs=3, before_start=True)
    assert -1 in itrs and 2 in itrs and 3 not in itrs and 10 ** 15 - 1 in itrs
    assert 10 ** 15 not in itrs
    assert time.process_time() - start < 0.1


def test_a_run_of_1e12_env_steps_starts_training(tmp_path, python_sigint):
    """The CLI's default async DQN set-up (AsyncRlEval, evaluations at log rows) with
    n_steps=1e12 reaches its first gradient steps; then Ctrl-C ends it."""
    algo, agent = small_dqn()
    sampler = cartpole_sampler(AsyncSerialSampler, eval_n_envs=1, eval_max_trajectories=1)
    runner = AsyncRlEval(algo, agent, sampler, n_steps=1e12, seed=0,
                         log_interval_steps=1e11)
    started = threading.Event()

    def interrupt_once_training():
        deadline = time.monotonic() + START_DEADLINE_S
        while time.monotonic() < deadline:
            board = getattr(agent, "param_board", None)
            if board is not None and board.version > 0:
                started.set()
                break
            time.sleep(0.05)
        _thread.interrupt_main()  # Ctrl-C, trained or not: the test never hangs.

    watcher = threading.Thread(target=interrupt_once_training, daemon=True)
    t0 = time.monotonic()
    watcher.start()
    try:
        train(runner, tmp_path)
    except KeyboardInterrupt:
        pass
    watcher.join()
    assert started.is_set(), (
        f"no gradient step within {START_DEADLINE_S}s of starting a run of n_steps=1e12 "
        f"({time.monotonic() - t0:.1f}s)")
    assert runner.n_itr == 10 ** 12 // 32


def test_ctrl_c_inside_a_long_sampler_batch_stops_within_seconds(tmp_path, leak_check,
                                                                 python_sigint):
    algo, agent = small_dqn()
    # One batch: 32 steps of 0.3 s, about 10 s without a look at the stop request.
    sampler = cartpole_sampler(AsyncSerialSampler, EnvCls=SlowEnv, env_kwargs=dict(delay=0.3))
    runner = AsyncRl(algo, agent, sampler, n_steps=10_000, seed=0)
    interrupted_at = []

    def interrupt_mid_batch():
        deadline = time.monotonic() + START_DEADLINE_S
        while time.monotonic() < deadline:
            proc = runner.sampler_process
            if proc is not None and proc.is_alive() and hasattr(runner, "_opt_itr"):
                break
            time.sleep(0.05)
        time.sleep(1.0)  # Inside the first batch.
        interrupted_at.append(time.monotonic())
        _thread.interrupt_main()

    watcher = threading.Thread(target=interrupt_mid_batch, daemon=True)
    watcher.start()
    try:
        train(runner, tmp_path)
    except KeyboardInterrupt:
        pass
    stopped_s = time.monotonic() - interrupted_at[0]
    watcher.join()
    assert runner.control is None  # Shut down: processes reaped, shared memory released.
    assert stopped_s < 3.5, f"the run took {stopped_s:.1f}s to stop after Ctrl-C"
