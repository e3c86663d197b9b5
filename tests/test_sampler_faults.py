"""Worker faults surface in the master as WorkerError within 10 s, and leave nothing behind.

Each test injects one fault (an env raising while stepping or while being set up,
an env raising during evaluation, a worker killed by a signal, Ctrl-C in the
master, the master killed) and checks: the error is raised and names the worker,
its env ranks and its traceback; no child process is left; no shared-memory
segment is left in /dev/shm.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import psutil
import pytest
import torch

from rlpyt.agents.pg.categorical import CategoricalPgAgent
from rlpyt.envs.base import Env, EnvStep
from rlpyt.samplers.base import WorkerError
from rlpyt.samplers.parallel.cpu.sampler import CpuSampler
from rlpyt.samplers.parallel.gpu.alternating_sampler import (
    AlternatingSampler,
    NoOverlapAlternatingSampler,
)
from rlpyt.samplers.parallel.gpu.sampler import GpuSampler
from rlpyt.spaces.float_box import FloatBox
from rlpyt.spaces.int_box import IntBox
from rlpyt.utils.collections import namedtuple
from rlpyt.utils.seed import env_seeds

SEED, B = 11, 4
SEEDS = env_seeds(SEED, B + 1 + 2)  # Training envs, the example env, 2 eval envs.
SAMPLERS = [CpuSampler, GpuSampler, AlternatingSampler]
DEADLINE_S = 10.0
Info = namedtuple("Info", ["timeout"], module=__name__)


class FaultyEnv(Env):
    """Raises ``RuntimeError("injected fault")`` at ``fail_step`` (or in ``seed`` when
    ``fail_step == "seed"``) if its seed is ``fail_seed``; episodes last 5 steps."""

    def __init__(self, fail_seed=None, fail_step=3):
        self.fail_seed, self.fail_step = fail_seed, fail_step
        self._action_space = IntBox(0, 2)
        self._observation_space = FloatBox(-1, 1, shape=(2,))
        self.faulty, self.t, self.n = False, 0, 0

    def seed(self, seed):
        self.faulty = seed == self.fail_seed
        if self.faulty and self.fail_step == "seed":
            raise RuntimeError("injected fault in seed")
        self._action_space.seed(seed)

    def reset(self):
        self.t = 0
        return np.zeros(2, dtype=np.float32)

    def step(self, action):
        self.t += 1
        self.n += 1
        if self.faulty and self.n == self.fail_step:
            raise RuntimeError("injected fault in step")
        return EnvStep(np.zeros(2, dtype=np.float32), 1.0, self.t >= 5, Info(False))


class HangingEnv(FaultyEnv):
    """``FaultyEnv`` whose faulty env never returns from ``step`` number ``fail_step``
    (from its first ``reset`` when ``fail_step == "reset"``)."""

    def reset(self):
        if self.faulty and self.fail_step == "reset":
            hang_forever()
        return super().reset()

    def step(self, action):
        if self.faulty and self.n + 1 == self.fail_step:
            hang_forever()
        return super().step(action)


def hang_forever():
    while True:
        time.sleep(3600)


def shm_entries() -> set:
    try:
        return set(os.listdir("/dev/shm"))
    except FileNotFoundError:  # pragma: no cover - not Linux
        return set()


def mapped_shm_files() -> set:
    """Names of the /dev/shm files this process has mapped (by inode: a named semaphore is
    mapped under the temporary name it was created with, then linked to its real name)."""
    try:
        with open("/proc/self/maps") as f:
            inodes = {int(line.split()[4]) for line in f if "/dev/shm/" in line}
    except OSError:  # pragma: no cover - not Linux
        return set()
    names = set()
    for name in shm_entries():
        try:
            if os.stat(os.path.join("/dev/shm", name)).st_ino in inodes:
                names.add(name)
        except OSError:
            continue
    return names


def our_children() -> set:
    """Child processes (recursively), not counting multiprocessing's own helpers (the
    resource tracker and the fork server), which live as long as this process by design."""
    from multiprocessing import forkserver, resource_tracker

    helpers = {getattr(forkserver._forkserver, "_forkserver_pid", None),
               getattr(resource_tracker._resource_tracker, "_pid", None)}
    return {c.pid for c in psutil.Process().children(recursive=True)} - helpers


@pytest.fixture
def leak_check():
    """Asserts that a test leaves no child process and no /dev/shm entry behind."""
    torch.set_num_threads(1)
    shm_before, children_before = shm_entries(), our_children()
    yield
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        new_shm = shm_entries() - shm_before
        new_children = our_children() - children_before
        if not new_shm and not new_children:
            break
        time.sleep(0.2)
    # Other processes may add entries meanwhile; ours carry our pid (torch, heaps) or are
    # still mapped by this process (named semaphores).
    mine = {e for e in new_shm if str(os.getpid()) in e or e in mapped_shm_files()}
    assert not new_children, f"child processes left behind: {new_children}"
    assert not mine, f"shared-memory segments left behind: {mine}"


def make_sampler(SamplerCls, start_method=None, **env_kwargs):
    return SamplerCls(EnvCls=FaultyEnv, env_kwargs=env_kwargs, batch_T=4, batch_B=B,
                      max_decorrelation_steps=0, eval_n_envs=2, eval_max_trajectories=4,
                      start_method=start_method)


def assert_worker_error(excinfo, worker: int, env_ranks, text: str):
    message = str(excinfo.value)
    assert f"sampler worker {worker} (env ranks {env_ranks}" in message
    assert text in message


@pytest.mark.parametrize("SamplerCls,start_method", [
    *[(cls, "fork") for cls in SAMPLERS], (GpuSampler, "forkserver")])
def test_env_exception_while_sampling(SamplerCls, start_method, leak_check):
    sampler = make_sampler(SamplerCls, fail_seed=SEEDS[3], fail_step=6,
                           start_method=start_method)
    sampler.initialize(CategoricalPgAgent(), affinity=dict(n_workers=2), seed=SEED)
    start = time.monotonic()
    with pytest.raises(WorkerError) as excinfo:
        for itr in range(10):
            sampler.obtain_samples(itr)
    assert time.monotonic() - start < DEADLINE_S
    assert_worker_error(excinfo, 1, [2, 3], "RuntimeError: injected fault in step")
    assert "Traceback (most recent call last)" in str(excinfo.value)
    assert "in step" in str(excinfo.value)
    assert all(not p.is_alive() for p in sampler.processes)


@pytest.mark.parametrize("SamplerCls", SAMPLERS)
def test_env_exception_while_starting(SamplerCls, leak_check):
    sampler = make_sampler(SamplerCls, fail_seed=SEEDS[0], fail_step="seed")
    with pytest.raises(WorkerError) as excinfo:
        sampler.initialize(CategoricalPgAgent(), affinity=dict(n_workers=2), seed=SEED)
    assert_worker_error(excinfo, 0, [0, 1], "RuntimeError: injected fault in seed")


@pytest.mark.parametrize("SamplerCls", SAMPLERS)
def test_env_exception_while_evaluating(SamplerCls, leak_check):
    # The second eval env (eval rank 1, in worker 1) fails on its second step.
    sampler = make_sampler(SamplerCls, fail_seed=SEEDS[B + 2], fail_step=2)
    agent = CategoricalPgAgent()
    sampler.initialize(agent, affinity=dict(n_workers=2), seed=SEED)
    sampler.obtain_samples(0)
    with pytest.raises(WorkerError) as excinfo:
        agent.eval_mode(0)
        sampler.evaluate_agent(0)
    assert_worker_error(excinfo, 1, [2, 3], "injected fault in step")
    assert "eval env ranks [1]" in str(excinfo.value)


@pytest.mark.parametrize("SamplerCls", SAMPLERS)
def test_worker_killed_by_signal(SamplerCls, leak_check):
    sampler = make_sampler(SamplerCls)
    sampler.initialize(CategoricalPgAgent(), affinity=dict(n_workers=2), seed=SEED)
    victim = sampler.processes[1].pid
    killed_at = []

    def kill():
        killed_at.append(time.monotonic())
        os.kill(victim, signal.SIGKILL)

    timer = threading.Timer(0.5, kill)
    timer.start()
    try:
        with pytest.raises(WorkerError) as excinfo:
            for itr in range(100_000):
                sampler.obtain_samples(itr)
    finally:
        timer.cancel()
    assert time.monotonic() - killed_at[0] < DEADLINE_S
    assert_worker_error(excinfo, 1, [2, 3], "killed by signal SIGKILL")


@pytest.mark.parametrize("SamplerCls", [*SAMPLERS, NoOverlapAlternatingSampler])
def test_hung_env_is_reported_with_its_stack(SamplerCls, leak_check):
    """An env that never returns from ``step``: WorkerError within step_timeout + 10 s,
    naming the worker, its envs, the timeout and where the worker hangs."""
    timeout = 1.0
    sampler = SamplerCls(EnvCls=HangingEnv, env_kwargs=dict(fail_seed=SEEDS[3], fail_step=3),
                         batch_T=4, batch_B=B, max_decorrelation_steps=0, step_timeout=timeout)
    sampler.initialize(CategoricalPgAgent(), affinity=dict(n_workers=2), seed=SEED)
    start = time.monotonic()
    with pytest.raises(WorkerError) as excinfo:
        sampler.obtain_samples(0)
    assert time.monotonic() - start < timeout + DEADLINE_S
    assert_worker_error(excinfo, 1, [2, 3], f"step_timeout={timeout} s")
    assert "hung" in str(excinfo.value)
    assert "in hang_forever" in str(excinfo.value), "the worker's Python stack is shown"
    assert all(not p.is_alive() for p in sampler.processes)


class SlowEnv(FaultyEnv):
    """Every step takes 0.15 s."""

    def step(self, action):
        time.sleep(0.15)
        return super().step(action)


def test_step_timeout_is_per_env_call_not_per_batch_or_pause(leak_check):
    """Batches longer than the timeout and master pauses longer than it are fine: only
    one env call that does not return in time counts."""
    sampler = CpuSampler(EnvCls=SlowEnv, env_kwargs={}, batch_T=4, batch_B=B,
                         max_decorrelation_steps=0, step_timeout=1.0)
    sampler.initialize(CategoricalPgAgent(), affinity=dict(n_workers=2), seed=SEED)
    try:
        for itr in range(2):
            sampler.obtain_samples(itr)  # 1.2 s per worker and batch.
            time.sleep(1.5)  # A long optimization step.
    finally:
        sampler.shutdown()


@pytest.mark.parametrize("SamplerCls", [CpuSampler, GpuSampler])
def test_hung_env_while_evaluating(SamplerCls, leak_check):
    # The second eval env (eval rank 1, in worker 1) never returns from its second step.
    sampler = SamplerCls(EnvCls=HangingEnv, env_kwargs=dict(fail_seed=SEEDS[B + 2], fail_step=2),
                         batch_T=4, batch_B=B, max_decorrelation_steps=0, eval_n_envs=2,
                         eval_max_trajectories=4, step_timeout=1)
    agent = CategoricalPgAgent()
    sampler.initialize(agent, affinity=dict(n_workers=2), seed=SEED)
    sampler.obtain_samples(0)
    start = time.monotonic()
    with pytest.raises(WorkerError) as excinfo:
        agent.eval_mode(0)
        sampler.evaluate_agent(0)
    assert time.monotonic() - start < 1 + DEADLINE_S
    assert_worker_error(excinfo, 1, [2, 3], "step_timeout=1.0 s")
    assert "eval env ranks [1]" in str(excinfo.value)
    assert "in hang_forever" in str(excinfo.value)


def test_hung_env_while_starting(leak_check):
    sampler = CpuSampler(EnvCls=HangingEnv,
                         env_kwargs=dict(fail_seed=SEEDS[0], fail_step="reset"),
                         batch_T=4, batch_B=B, step_timeout=1)
    start = time.monotonic()
    with pytest.raises(WorkerError, match=r"sampler worker 0 \(env ranks \[0, 1\]\) hung"):
        sampler.initialize(CategoricalPgAgent(), affinity=dict(n_workers=2), seed=SEED)
    assert time.monotonic() - start < 1 + DEADLINE_S


@pytest.mark.parametrize("bad", [0, -1, "60", float("nan"), True])
def test_bad_step_timeout_is_named(bad):
    with pytest.raises(ValueError, match="step_timeout="):
        CpuSampler(EnvCls=FaultyEnv, env_kwargs={}, batch_T=4, batch_B=B, step_timeout=bad)


def test_shutdown_is_idempotent(leak_check):
    sampler = make_sampler(GpuSampler)
    sampler.initialize(CategoricalPgAgent(), affinity=dict(n_workers=2), seed=SEED)
    sampler.obtain_samples(0)
    sampler.shutdown()
    sampler.shutdown()
    with pytest.raises(RuntimeError, match="was shut down"):
        sampler.obtain_samples(1)


# ---- the master interrupted or killed (in a subprocess) --------------------------------------
SCRIPT = textwrap.dedent("""
    import faulthandler, signal, sys, time
    faulthandler.register(signal.SIGUSR1, all_threads=False)  # Stacks if shutdown stalls.
    signal.signal(signal.SIGINT, signal.default_int_handler)  # Even under a background job.
    sys.path.insert(0, {tests_dir!r})
    import torch
    torch.set_num_threads(1)
    from test_sampler_faults import make_sampler, SEED
    from rlpyt.agents.pg.categorical import CategoricalPgAgent
    from rlpyt.samplers.parallel.{module} import {sampler}
    sampler = make_sampler({sampler})
    sampler.initialize(CategoricalPgAgent(), affinity=dict(n_workers=2), seed=SEED)
    print(" ".join(str(p.pid) for p in sampler.processes), flush=True)
    itr = 0
    while True:
        sampler.obtain_samples(itr)
        itr += 1
""")


def run_master(sampler: str, module: str):
    code = SCRIPT.format(tests_dir=os.path.dirname(__file__), sampler=sampler, module=module)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if not line.strip():
        proc.kill()
        raise AssertionError(f"master script failed to start: {proc.stderr.read()}")
    return proc, [int(pid) for pid in line.split()]


def communicate_or_dump_stacks(proc, workers) -> str:
    """The master's stderr once it exits and its pipes close.  If that takes too long,
    fail with what is still running and the Python stacks of the master and its
    workers (the script registers SIGUSR1 with faulthandler; forked workers inherit it)."""
    try:
        return proc.communicate(timeout=DEADLINE_S)[1]
    except subprocess.TimeoutExpired:
        holders = _process_tree(proc.pid) + [p for p in workers if p != proc.pid]
        report = {p: _describe(p) for p in dict.fromkeys(holders)}
        for pid in report:  # One at a time, so the stacks do not interleave.
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGUSR1)
            time.sleep(0.3)
        for pid in report:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        try:
            stderr = proc.communicate(timeout=DEADLINE_S)[1]
        except subprocess.TimeoutExpired:
            stderr = "(stderr still open after killing the master and its workers)"
        pytest.fail(f"master's pipes still open {DEADLINE_S} s after SIGINT; processes: "
                    f"{report}\nstderr with stacks:\n{stderr[-8000:]}")
    finally:
        proc.kill()


def _process_tree(pid: int) -> list:
    try:
        return [pid] + [c.pid for c in psutil.Process(pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def _describe(pid: int) -> str:
    try:
        p = psutil.Process(pid)
        return f"{p.status()} {' '.join(p.cmdline())[:120]}"
    except psutil.Error:
        return "gone"


def wait_gone(pids, timeout=DEADLINE_S) -> list:
    deadline = time.monotonic() + timeout
    alive = list(pids)
    while alive and time.monotonic() < deadline:
        alive = [p for p in alive if _running(p)]
        time.sleep(0.1)
    return alive


def _running(pid) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.mark.parametrize("sampler,module", [("CpuSampler", "cpu.sampler"),
                                            ("GpuSampler", "gpu.sampler")])
def test_ctrl_c_in_master(sampler, module):
    proc, workers = run_master(sampler, module)
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    stderr = communicate_or_dump_stacks(proc, workers)
    assert proc.returncode != 0
    assert "KeyboardInterrupt" in stderr
    assert "WorkerError" not in stderr
    assert not wait_gone(workers), "workers outlived the interrupted master"
    assert not [e for e in shm_entries() if str(proc.pid) in e]


def test_master_killed_workers_exit():
    proc, workers = run_master("GpuSampler", "gpu.sampler")
    time.sleep(1.0)
    proc.kill()
    proc.wait()
    assert not wait_gone(workers), "workers outlived a master killed with SIGKILL"
    assert not [e for e in shm_entries() if str(proc.pid) in e]
