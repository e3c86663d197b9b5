"""``rlpyt.utils.supervisor``: children that raise, hang, are killed or ignore SIGTERM
are all stopped within the stated times, reaped, and leave no descendant."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import time

import psutil
import pytest

from rlpyt.utils.supervisor import (
    KILL_REAP_S,
    StopTimes,
    child_setup,
    describe_exit,
    die_with_parent,
    dump_stack_on_sigusr1,
    kill_processes,
    read_stack,
    signal_processes,
    stack_pipe,
    stop_processes,
)

ctx = mp.get_context("fork")
QUICK = StopTimes(join_s=0.5, terminate_s=0.5)


def _cooperative(stop):
    child_setup(torch_threads=None)
    while not stop.is_set():
        time.sleep(0.01)


def _ignores_sigterm(ready):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    ready.set()
    while True:
        time.sleep(0.01)


def _set_up_then_sleep(ready):
    child_setup(torch_threads=1)
    import torch

    ready.put((torch.get_num_threads(), signal.getsignal(signal.SIGINT) == signal.SIG_IGN))
    time.sleep(60)


def _raises():
    raise RuntimeError("boom")


def _with_grandchild(pid_queue):
    child_setup(torch_threads=None)
    grandchild = ctx.Process(target=time.sleep, args=(60,))
    grandchild.start()
    pid_queue.put(grandchild.pid)
    time.sleep(60)


def _orphan_maker(pid_queue):
    # The middle process: its child asks to die with it.
    child = ctx.Process(target=_dies_with_parent, args=(pid_queue,))
    child.start()
    time.sleep(60)


def _dies_with_parent(pid_queue):
    die_with_parent()
    pid_queue.put(os.getpid())
    time.sleep(60)


def _wait_gone(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


def test_a_child_that_stops_on_request_is_not_signalled():
    stop = ctx.Event()
    proc = ctx.Process(target=_cooperative, args=(stop,))
    proc.start()
    start = time.monotonic()
    stop_processes([proc], QUICK, request_stop=stop.set)
    assert proc.exitcode == 0
    assert time.monotonic() - start < QUICK.join_s


def test_a_child_that_ignores_sigterm_is_killed_after_the_stated_times():
    ready = ctx.Event()
    proc = ctx.Process(target=_ignores_sigterm, args=(ready,))
    proc.start()
    assert ready.wait(10)
    start = time.monotonic()
    stop_processes([proc], QUICK)
    elapsed = time.monotonic() - start
    assert proc.exitcode == -signal.SIGKILL
    assert QUICK.join_s + QUICK.terminate_s - 0.1 < elapsed < \
        QUICK.join_s + QUICK.terminate_s + KILL_REAP_S
    assert "SIGKILL" in describe_exit(proc.exitcode)


def test_a_hung_child_gets_sigterm_at_once_and_unwinds():
    stop = ctx.Event()  # never set: the child cannot see a request
    proc = ctx.Process(target=_cooperative, args=(stop,))
    proc.start()
    time.sleep(0.2)
    start = time.monotonic()
    stop_processes([proc], StopTimes(join_s=5.0, terminate_s=5.0), hung=[proc])
    assert proc.exitcode == 0  # child_setup: SIGTERM is a clean exit
    assert time.monotonic() - start < 2.0


def test_child_setup_ignores_ctrl_c_and_sets_one_torch_thread():
    answers = ctx.Queue()
    proc = ctx.Process(target=_set_up_then_sleep, args=(answers,))
    proc.start()
    threads, ignores_sigint = answers.get(timeout=30)
    assert (threads, ignores_sigint) == (1, True)
    os.kill(proc.pid, signal.SIGINT)
    time.sleep(0.3)
    assert proc.is_alive()
    signal_processes([proc], signal.SIGTERM)
    proc.join(5)
    assert proc.exitcode == 0


def test_a_child_that_raised_is_described():
    proc = ctx.Process(target=_raises)
    proc.start()
    proc.join(10)
    assert proc.exitcode == 1
    assert "exited with code 1" in describe_exit(proc.exitcode)
    stop_processes([proc], QUICK)  # already gone: nothing to do, nothing raised


def test_stopping_a_child_kills_what_it_started():
    pids = ctx.Queue()
    proc = ctx.Process(target=_with_grandchild, args=(pids,))
    proc.start()
    grandchild = pids.get(timeout=10)
    stop_processes([proc], QUICK)
    assert _wait_gone(grandchild, 2.0)


def test_kill_processes_ends_children_at_once():
    procs = [ctx.Process(target=time.sleep, args=(60,)) for _ in range(3)]
    for proc in procs:
        proc.start()
    start = time.monotonic()
    kill_processes(procs)
    assert time.monotonic() - start < 1.0
    assert all(proc.exitcode == -signal.SIGKILL for proc in procs)


@pytest.mark.skipif(not os.uname().sysname == "Linux", reason="PR_SET_PDEATHSIG is Linux's")
def test_a_child_dies_with_its_parent():
    pids = ctx.Queue()
    middle = ctx.Process(target=_orphan_maker, args=(pids,))
    middle.start()
    orphan = pids.get(timeout=10)
    os.kill(middle.pid, signal.SIGKILL)
    middle.join(5)
    assert _wait_gone(orphan, 2.0)


def _stuck_in_native_code(writer):
    child_setup(torch_threads=None)
    dump_stack_on_sigusr1(writer)
    time.sleep(60)  # one C call: the main thread never returns to Python


def test_a_hung_childs_stack_is_read_over_its_pipe():
    reader, writer = stack_pipe(ctx)
    proc = ctx.Process(target=_stuck_in_native_code, args=(writer,))
    proc.start()
    writer.close()
    time.sleep(0.5)
    stack = read_stack(proc.pid, reader)
    assert "_stuck_in_native_code" in stack, stack
    stop_processes([proc], QUICK)
    assert read_stack(proc.pid, reader) == "(the process is gone)"


class _SignalsItselfOnCollection:
    """Sends this process SIGTERM from ``__del__``, where Python prints the handler's
    exception as ignored and goes on (as in the import system's weakref callbacks)."""

    def __del__(self):
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(1000):  # The handler runs between these bytecodes.
            pass


def _swallow_a_sigterm() -> None:
    _SignalsItselfOnCollection()  # Collected at once: the signal lands in __del__.


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_sigterm_swallowed_where_it_landed_is_raised_again():
    from rlpyt.utils.supervisor import SignalInterrupt, interrupt_on_sigterm, raise_if_stopped

    with interrupt_on_sigterm():
        _swallow_a_sigterm()  # No exception here: it was ignored inside __del__.
        with pytest.raises(SignalInterrupt, match="SIGTERM") as raised:
            raise_if_stopped()
        assert raised.value.signum == signal.SIGTERM
    raise_if_stopped()  # Outside the block nothing is pending.


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_run_stops_on_a_swallowed_sigterm_before_its_next_iteration(tmp_path):
    from rlpyt.agents.pg.categorical import CategoricalPgAgent
    from rlpyt.algos.pg.ppo import PPO
    from rlpyt.envs.gym import make
    from rlpyt.runners.minibatch_rl import MinibatchRl
    from rlpyt.samplers.serial.sampler import SerialSampler
    from rlpyt.utils.supervisor import SignalInterrupt, interrupt_on_sigterm

    sampler = SerialSampler(EnvCls=make, env_kwargs=dict(id="CartPole-v1"), batch_T=16,
                            batch_B=2, max_decorrelation_steps=0)
    runner = MinibatchRl(PPO(), CategoricalPgAgent(), sampler, n_steps=10_000, seed=0,
                         log_interval_steps=1_000)
    trained = []
    train_itr = runner._train_itr
    runner._train_itr = lambda itr: (trained.append(itr), train_itr(itr))
    with interrupt_on_sigterm():
        _swallow_a_sigterm()
        with pytest.raises(SignalInterrupt):
            runner.train()
    assert trained == []  # Stopped before its first iteration, not after 10k steps.


# ---- process groups, the parent watch and stop signals ----------------------------------------
GROUP_QUICK = StopTimes(join_s=0.0, terminate_s=0.5)
_TERM_IGNORING_GROUP = (
    "import os, signal, subprocess, sys, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "kid = subprocess.Popen([sys.executable, '-c', 'import signal, time; "
    "signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)'])\n"
    "print(kid.pid, flush=True)\n"
    "time.sleep(60)\n")


def _start_group(code: str):
    import subprocess
    import sys

    leader = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                              start_new_session=True)
    return leader, int(leader.stdout.readline())


def test_stop_group_kills_a_group_that_ignores_sigterm_after_the_stated_time():
    from rlpyt.utils.supervisor import GROUP_SETTLE_S, stop_group

    leader, kid = _start_group(_TERM_IGNORING_GROUP)
    start = time.monotonic()
    stop_group(leader.pid, GROUP_QUICK, leader=leader)
    elapsed = time.monotonic() - start
    assert leader.returncode == -signal.SIGKILL
    assert _wait_gone(kid, 2.0)
    assert GROUP_QUICK.terminate_s - 0.1 < elapsed < \
        GROUP_QUICK.terminate_s + GROUP_SETTLE_S + KILL_REAP_S


def test_stop_group_lets_a_leader_that_leaves_on_sigterm_go_at_once_and_kills_the_rest():
    from rlpyt.utils.supervisor import stop_group

    # The leader exits on SIGTERM (Python's default), its child ignores it.
    code = _TERM_IGNORING_GROUP.replace("signal.signal(signal.SIGTERM, signal.SIG_IGN)\nkid",
                                        "kid", 1)
    leader, kid = _start_group(code)
    start = time.monotonic()
    stop_group(leader.pid, StopTimes(join_s=0.0, terminate_s=5.0), leader=leader)
    assert time.monotonic() - start < 2.0
    assert leader.returncode == -signal.SIGTERM
    assert _wait_gone(kid, 2.0)  # killed (a zombie until its new parent reaps it)


def test_stop_group_without_a_leader_waits_for_the_group_to_empty():
    from rlpyt.utils.supervisor import stop_group

    leader, kid = _start_group(_TERM_IGNORING_GROUP)
    stop_group(leader.pid, GROUP_QUICK)  # this process does not hold the leader
    assert _wait_gone(kid, 2.0) and _wait_gone(leader.pid, 2.0)
    leader.wait(5)


def _watches_its_parent(pids):
    from rlpyt.utils.supervisor import exit_when_parent_dies

    child_setup(torch_threads=None)
    alive = exit_when_parent_dies(grace_s=0.5)
    grandchild = ctx.Process(target=time.sleep, args=(60,))
    grandchild.start()
    pids.put((os.getpid(), grandchild.pid, alive()))
    time.sleep(60)


def _middle_with_a_watcher(pids):
    # This process's child runs the watch; no PR_SET_PDEATHSIG for it (spawned under
    # fork but the watch must work alone, as on macOS).
    child = ctx.Process(target=_watches_its_parent, args=(pids,))
    child.start()
    time.sleep(60)


def test_a_child_whose_parent_dies_ends_itself_and_what_it_started(monkeypatch):
    import rlpyt.utils.supervisor as supervisor

    monkeypatch.setattr(supervisor, "die_with_parent", lambda *a, **k: False)
    pids = ctx.Queue()
    middle = ctx.Process(target=_middle_with_a_watcher, args=(pids,))
    middle.start()
    watcher, grandchild, parent_alive = pids.get(timeout=10)
    assert parent_alive
    os.kill(middle.pid, signal.SIGKILL)
    middle.join(5)
    assert _wait_gone(watcher, 3.0) and _wait_gone(grandchild, 3.0)


def test_interrupt_on_signals_raises_for_each_named_signal_and_nests():
    from rlpyt.utils.supervisor import SignalInterrupt, interrupt_on_signals

    # A signal the process ignores stays ignored (nohup ignores SIGHUP): start from the
    # default action, as a terminal gives it.
    before = signal.signal(signal.SIGHUP, signal.SIG_DFL)
    with interrupt_on_signals():
        with interrupt_on_signals(signal.SIGTERM, signal.SIGHUP):
            with pytest.raises(SignalInterrupt) as raised:
                os.kill(os.getpid(), signal.SIGHUP)
                time.sleep(1)
            assert raised.value.signum == signal.SIGHUP
        with pytest.raises(SignalInterrupt) as raised:  # the outer block's SIGTERM
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1)
        assert raised.value.signum == signal.SIGTERM
    assert signal.getsignal(signal.SIGHUP) == signal.SIG_DFL
    signal.signal(signal.SIGHUP, before)


def _import_that_signals_itself(tmp_path, name: str, work_after_s: float):
    """Imports a module whose body sends this process SIGTERM, then runs Python code
    for ``work_after_s`` (bytecodes, where a handler would raise) and marks itself done."""
    import importlib
    import sys

    (tmp_path / f"{name}.py").write_text(
        "import os, signal, time\n"
        "os.kill(os.getpid(), signal.SIGTERM)\n"
        f"end = time.monotonic() + {work_after_s}\n"
        "while time.monotonic() < end:\n"
        "    pass\n"
        "done = True\n")
    sys.path.insert(0, str(tmp_path))
    try:
        importlib.import_module(name)
    finally:
        sys.path.remove(str(tmp_path))


def test_a_signal_inside_an_import_is_raised_once_the_import_is_over(tmp_path):
    """torch's C++ runs Python code while it loads, and an exception raised through it
    aborts the process: the import is allowed to finish, and the signal follows."""
    import sys

    from rlpyt.utils.supervisor import SignalInterrupt, interrupt_on_signals

    with interrupt_on_signals(signal.SIGTERM):
        with pytest.raises(SignalInterrupt) as raised:
            _import_that_signals_itself(tmp_path, "_rlpyt_signals_mid_import", 0.3)
            start = time.monotonic()
            while time.monotonic() - start < 5:  # raised here, within a poll
                pass
        assert time.monotonic() - start < 1.0
    assert raised.value.signum == signal.SIGTERM
    assert sys.modules.pop("_rlpyt_signals_mid_import").done  # the import ran to its end
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


def test_a_signal_held_back_by_an_import_is_raised_once_by_raise_if_stopped(tmp_path):
    """A training loop's ``raise_if_stopped`` may come before the redelivery: the signal
    it raises is not raised a second time, later, in the stop it began (where it would
    cut the children's stop in two)."""
    import sys

    from rlpyt.utils.supervisor import (
        PENDING_SIGNAL_POLL_S,
        SignalInterrupt,
        interrupt_on_signals,
        raise_if_stopped,
    )

    with interrupt_on_signals(signal.SIGTERM):
        with pytest.raises(SignalInterrupt):
            _import_that_signals_itself(tmp_path, "_rlpyt_signals_before_a_poll", 0.0)
            raise_if_stopped()  # (at once: before the redelivering thread's next poll)
        end = time.monotonic() + 20 * PENDING_SIGNAL_POLL_S
        while time.monotonic() < end:  # bytecodes, where a redelivery would raise
            pass
    assert sys.modules.pop("_rlpyt_signals_before_a_poll").done


def test_a_signal_in_the_last_import_of_a_block_is_raised_as_the_block_ends(tmp_path):
    import sys

    from rlpyt.utils.supervisor import SignalInterrupt, interrupt_on_signals

    with pytest.raises(SignalInterrupt):
        with interrupt_on_signals(signal.SIGTERM):
            _import_that_signals_itself(tmp_path, "_rlpyt_signals_last_import", 0.0)
    assert sys.modules.pop("_rlpyt_signals_last_import").done
    time.sleep(0.1)  # nothing is delivered after the block
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


def test_a_signal_while_signals_are_held_is_raised_as_the_hold_ends():
    """A child started under ``start_process`` is on the parent's list even when the
    stop signal lands while it starts."""
    from rlpyt.utils.supervisor import (
        SignalInterrupt,
        interrupt_on_signals,
        start_process,
        stop_signals_held,
    )

    started = []
    child = ctx.Process(target=time.sleep, args=(30,))
    with interrupt_on_signals(signal.SIGTERM):
        with pytest.raises(SignalInterrupt):
            with stop_signals_held():
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(0.2)  # held: nothing raised here
                start_process(child, started)  # a nested hold ends; the outer one holds
                assert started == [child]
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    child.kill()
    child.join(5)


def test_a_signal_during_stop_processes_is_raised_once_the_children_are_gone():
    """A second Ctrl-C while the first one's stop runs: every child is still reaped."""
    from rlpyt.utils.supervisor import SignalInterrupt, interrupt_on_signals

    ready = ctx.Event()
    proc = ctx.Process(target=_ignores_sigterm, args=(ready,))
    proc.start()
    assert ready.wait(10)
    with interrupt_on_signals(signal.SIGTERM):
        with pytest.raises(SignalInterrupt):
            stop_processes([proc], QUICK, request_stop=lambda: os.kill(os.getpid(),
                                                                         signal.SIGTERM))
    assert proc.exitcode == -signal.SIGKILL


def test_ctrl_c_waits_for_the_iteration_under_the_command_lines_handlers():
    """The command line's SIGINT handler (``interrupt_on_stop_signals``) counts as
    Python's own for ``DeferredInterrupt``: the first Ctrl-C of a run still lets the
    iteration finish."""
    from rlpyt.utils.interrupt import DeferredInterrupt
    from rlpyt.utils.supervisor import interrupt_on_stop_signals

    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with interrupt_on_stop_signals():
            assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler
            with DeferredInterrupt(message="") as interrupt:
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.2)
                assert interrupt.requested
            with pytest.raises(KeyboardInterrupt):
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(1)
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, before)


def _records_signals(queue):
    from rlpyt.utils.supervisor import StopSignals

    stop = StopSignals(signal.SIGTERM, signal.SIGHUP)
    queue.put("ready")
    while stop.signum is None:
        time.sleep(0.01)
    first = stop.signum
    queue.put("stopping")
    time.sleep(0.5)  # a second signal lands here and changes nothing
    queue.put(first if stop.signum == first else -1)


def test_stop_signals_keeps_the_first_and_outlives_a_second():
    queue = ctx.Queue()
    proc = ctx.Process(target=_records_signals, args=(queue,))
    proc.start()
    assert queue.get(timeout=10) == "ready"
    os.kill(proc.pid, signal.SIGHUP)
    assert queue.get(timeout=10) == "stopping"
    os.kill(proc.pid, signal.SIGTERM)
    assert queue.get(timeout=10) == signal.SIGHUP
    proc.join(5)
    assert proc.exitcode == 0


def test_join_all_shares_one_deadline():
    from rlpyt.utils.supervisor import join_all

    procs = [ctx.Process(target=time.sleep, args=(60,)) for _ in range(3)]
    for proc in procs:
        proc.start()
    start = time.monotonic()
    join_all(procs, 0.5)
    assert time.monotonic() - start < 1.0
    kill_processes(procs)
