"""SIGINT or SIGTERM sent to the launcher's PID alone (what a job scheduler, a supervisor
or ``timeout`` sends) stops every process of the run within 5 s, keeps the last
checkpoint readable, and exits 130 / 143 (a launcher of ours; torchrun's exit status is
its own)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import psutil
import pytest

from rlpyt.runners.checkpoint_files import load_checkpoint
from rlpyt.utils.logging.run_dir import latest_checkpoint

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TORCHRUN = os.path.join(os.path.dirname(sys.executable), "torchrun")
STOP_WITHIN_S = 5.0

# The command line, with Python's own SIGINT handler (a test run started as a background
# job starts its children with SIGINT ignored), and its threads' stacks on SIGUSR1 for a
# launcher that misses its bound (``_communicate_or_dump``).
LAUNCHER = textwrap.dedent("""
    import faulthandler, signal, sys
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from rlpyt.cli import main
    sys.exit(main())  # (as the rlpyt program: arguments from sys.argv)
""")

RUNS = {
    "syncrl": ["--algo", "a2c", "--nproc", "2"],
    "async": ["--algo", "dqn", "--runner", "async", "--algo.min_steps_learn", "200"],
    "cpu": ["--algo", "a2c", "--sampler-type", "cpu", "--workers", "2"],
}


@pytest.mark.parametrize("run, signum", [
    ("syncrl", signal.SIGINT), ("syncrl", signal.SIGTERM),
    ("async", signal.SIGTERM), ("cpu", signal.SIGTERM),
])
def test_a_signal_to_the_launcher_alone_stops_the_run(run, signum, tmp_path):
    run_dir = str(tmp_path / "run_0")
    proc = subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, "train", *RUNS[run], "--n-steps", "10000000",
         "--log-dir", str(tmp_path), "--runner.log_interval_steps", "800",
         "--runner.checkpoint_interval_steps", "800"],
        env=dict(os.environ, PYTHONPATH=ROOT), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, start_new_session=True)
    code, err = _signal_after_a_checkpoint(proc, signum, run_dir, f"{run} ")
    assert code == 128 + signum, (code, err)
    assert "rlpyt train: interrupted" in err, err
    assert "Resume with: rlpyt train --resume" in err, err


@pytest.mark.skipif(not os.path.exists(TORCHRUN), reason="torchrun is not installed")
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_to_torchrun_alone_stops_every_rank(signum, tmp_path):
    """torchrun passes the signal to its ranks; each stops as a plain run does (rank 0
    says how to resume).  torchrun's own exit status is torch's: 1, after its
    ``SignalException`` (docs/cli.md)."""
    run_dir = str(tmp_path / "run_0")
    proc = subprocess.Popen(
        [TORCHRUN, "--standalone", "--nnodes", "1", "--nproc-per-node", "2", "-m", "rlpyt",
         "train", "--algo", "a2c", "--n-steps", "10000000", "--log-dir", str(tmp_path),
         "--runner.log_interval_steps", "80", "--runner.checkpoint_interval_steps", "80"],
        env=dict(os.environ, PYTHONPATH=ROOT, OMP_NUM_THREADS="1"), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, start_new_session=True)
    code, err = _signal_after_a_checkpoint(proc, signum, run_dir, "torchrun ")
    assert code != 0, err
    assert f"got signal: {int(signum)}" in err, err  # torchrun passed it on
    assert err.count("rlpyt train: interrupted; latest checkpoint") == 1, err  # rank 0 alone
    assert "Resume with: rlpyt train --resume" in err, err


def _signal_after_a_checkpoint(proc, signum, run_dir: str, what: str) -> tuple[int, str]:
    """Wait for the run's first checkpoint, send ``signum`` to ``proc`` alone, and check
    that it and every process under it end within ``STOP_WITHIN_S`` with the checkpoint
    readable; returns its exit code and stderr."""
    try:
        deadline = time.monotonic() + 240
        while latest_checkpoint(run_dir) is None:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no checkpoint within 240 s"
            time.sleep(0.2)
        children = psutil.Process(proc.pid).children(recursive=True)
        start = time.monotonic()
        os.kill(proc.pid, signum)  # the launcher's PID only
        children_s = code = elapsed = None
        while time.monotonic() - start < 30 and (code is None or children_s is None):
            now = time.monotonic() - start
            if children_s is None and all(_status(p) in (psutil.STATUS_ZOMBIE, None)
                                          for p in children):
                children_s = now
            if code is None and proc.poll() is not None:
                code = proc.returncode
                elapsed = now
            time.sleep(0.02)
    finally:
        _kill_group(proc)
    out, err = proc.communicate()
    print(f"{what}{signal.Signals(signum).name}: {len(children)} child processes gone after "
          f"{children_s} s, the launcher after {elapsed} s")
    assert children_s is not None and children_s < STOP_WITHIN_S, children_s
    assert code is not None and elapsed < STOP_WITHIN_S, elapsed
    state = load_checkpoint(run_dir)  # the last complete checkpoint reads
    assert state["itr"] >= 0
    return code, err


def _communicate_or_dump(proc, timeout: float, what: str) -> str:
    """``proc``'s stderr once it exits within ``timeout``; else fail with the stacks of
    its threads (``LAUNCHER``'s SIGUSR1 handler) and what it printed, to show where it
    stalled."""
    try:
        return proc.communicate(timeout=timeout)[1]
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGUSR1)
        time.sleep(1.0)
        _kill_group(proc)
        err = proc.communicate()[1]
        pytest.fail(f"{what}: the launcher did not exit within {timeout} s; its stderr and "
                    f"stacks:\n{err[-6000:]}")


def _status(process) -> str | None:
    """A zombie has exited (only its parent has not reaped it yet); None: gone."""
    try:
        return process.status()
    except psutil.NoSuchProcess:
        return None


def _kill_group(proc) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


# Seconds after the launcher starts: while it imports, while its children import torch,
# while they build envs and agents.  A signal at any of them ends the run as one later
# would: exit 128 + signum, the interrupt line (no tracebacks of starting children), and
# nothing left.
START_UP_DELAYS_S = (0.3, 1.0, 2.5, 4.0)
START_UP_RUNS = {"serial": ["--algo", "a2c"], **RUNS}


@pytest.mark.slow
@pytest.mark.parametrize("run", sorted(START_UP_RUNS))
def test_a_signal_during_start_up_ends_the_run_cleanly(run, tmp_path):
    for i, delay in enumerate(START_UP_DELAYS_S):
        signum = signal.SIGINT if i % 2 == 0 else signal.SIGTERM
        proc = subprocess.Popen(
            [sys.executable, "-c", LAUNCHER, "train", *START_UP_RUNS[run], "--n-steps",
             "10000000", "--log-dir", str(tmp_path / str(i))],
            env=dict(os.environ, PYTHONPATH=ROOT), stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, start_new_session=True)
        what = f"{run}, {signum.name} after {delay} s"
        try:
            time.sleep(delay)
            with_children = psutil.Process(proc.pid).children(recursive=True)
            proc.send_signal(signum)
            err = _communicate_or_dump(proc, STOP_WITHIN_S + 5, what)
        finally:
            _kill_group(proc)
        assert proc.returncode == 128 + signum, (what, proc.returncode, err[-3000:])
        # Once training runs, Ctrl-C also says it is finishing the iteration, and the
        # resume command follows: at most three lines, never a traceback.
        lines = err.strip().splitlines()
        assert "Traceback" not in err and len(lines) <= 3, (what, err)
        assert any(line.startswith("rlpyt train: interrupted") for line in lines), (what, err)
        deadline = time.monotonic() + STOP_WITHIN_S
        left = [p for p in with_children if _status(p) not in (None, psutil.STATUS_ZOMBIE)]
        while left and time.monotonic() < deadline:
            time.sleep(0.2)
            left = [p for p in left if _status(p) not in (None, psutil.STATUS_ZOMBIE)]
        assert not left, (what, [p.pid for p in left])


# One rank waits in the group's first collective (C++, where no Python signal handler
# runs) for a peer that is still building its envs when the signal comes.
SLOW_PEER = textwrap.dedent("""
    import signal, sys
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from rlpyt.agents.pg.categorical import CategoricalPgAgent
    from rlpyt.algos.pg.a2c import A2C
    from rlpyt.runners.sync_rl import SyncRl
    from rlpyt.samplers.serial.sampler import SerialSampler
    from rlpyt.utils.supervisor import interrupt_on_sigterm
    from tests.test_signals import SlowFirstEnv

    sampler = SerialSampler(EnvCls=SlowFirstEnv, env_kwargs=dict(marker=sys.argv[1]),
                            batch_T=5, batch_B=1)
    runner = SyncRl(A2C(), CategoricalPgAgent(), sampler, n_steps=1e6,
                    affinity=[dict(set_affinity=False)] * 2)
    try:
        with interrupt_on_sigterm():
            runner.train()
    except KeyboardInterrupt as e:
        print("interrupted", file=sys.stderr)
        sys.exit(128 + getattr(e, "signum", signal.SIGINT))
""")


def SlowFirstEnv(marker: str):
    """CartPole; the first one built (by whichever rank) takes a minute to build."""
    from rlpyt.envs.gym import make

    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL))
        with open(marker + ".slow", "w"):
            pass
        time.sleep(60)
    except FileExistsError:
        pass
    return make(id="CartPole-v1")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_a_rank_waits_for_a_starting_peer(signum, tmp_path):
    marker = str(tmp_path / "first_env")
    proc = subprocess.Popen([sys.executable, "-c", SLOW_PEER, marker],
                            env=dict(os.environ, PYTHONPATH=ROOT), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not os.path.exists(marker + ".slow"):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no env was built within 120 s"
            time.sleep(0.1)
        time.sleep(3.0)  # the other rank is now in the first collective
        ranks = psutil.Process(proc.pid).children(recursive=True)
        start = time.monotonic()
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=STOP_WITHIN_S + 10)
        elapsed = time.monotonic() - start
    finally:
        _kill_group(proc)
    assert proc.returncode == 128 + signum, (proc.returncode, err)
    assert elapsed < STOP_WITHIN_S, elapsed
    assert err.strip() == "interrupted", err  # no rank's warnings or tracebacks
    left = ranks
    while left and time.monotonic() - start < STOP_WITHIN_S:
        time.sleep(0.2)
        left = [p for p in left if _status(p) not in (None, psutil.STATUS_ZOMBIE)]
    assert not left, [(p.pid, p.name()) for p in left]
