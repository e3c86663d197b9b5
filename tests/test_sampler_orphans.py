"""The master killed by SIGKILL or SIGTERM, under every start method, while its workers
start and while they run: within 10 s no process the run started is alive (workers,
the fork server, the resource tracker) and nothing it created is left in /dev/shm.

Each case runs a master script in a subprocess.  Every process of the run inherits a
marker in its environment, so the test finds them all even after they were
re-parented; the script prints the name of every named semaphore it creates, so the
test checks exactly those in /dev/shm.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import psutil
import pytest

from rlpyt.envs.base import Env, EnvStep
from rlpyt.spaces.float_box import FloatBox
from rlpyt.spaces.int_box import IntBox

DEADLINE_S = 10.0
START_TIMEOUT_S = 60.0

SCRIPT = textwrap.dedent("""
    import multiprocessing.synchronize as synchronize, sys
    sys.path.insert(0, {tests_dir!r})
    _init = synchronize.SemLock.__init__

    def _init_and_report(self, *args, **kwargs):  # Report every named semaphore.
        _init(self, *args, **kwargs)
        name = getattr(self._semlock, "name", None)
        if name:
            print("sem", name, flush=True)

    synchronize.SemLock.__init__ = _init_and_report
    import torch
    torch.set_num_threads(1)
    from test_sampler_orphans import SlowStartEnv
    from rlpyt.agents.pg.categorical import CategoricalPgAgent
    from rlpyt.samplers.parallel.{module} import {sampler}
    sampler = {sampler}(EnvCls=SlowStartEnv, env_kwargs=dict(delay={delay}), batch_T=4,
                        batch_B=4, max_decorrelation_steps=0, eval_n_envs=2,
                        eval_max_trajectories=2, start_method={start_method!r})
    print("starting", flush=True)
    sampler.initialize(CategoricalPgAgent(), affinity=dict(n_workers=2), seed=3)
    itr = 0
    while True:
        sampler.obtain_samples(itr)
        if itr == 0:
            print("running", flush=True)
        itr += 1
""")


class SlowStartEnv(Env):
    """Takes ``delay`` seconds to build (a window to kill the master while its workers
    start); episodes last 5 steps."""

    def __init__(self, delay=0.0):
        time.sleep(delay)
        self._action_space = IntBox(0, 2)
        self._observation_space = FloatBox(-1, 1, shape=(2,))
        self.t = 0

    def seed(self, seed):
        self._action_space.seed(seed)

    def reset(self):
        self.t = 0
        return np.zeros(2, dtype=np.float32)

    def step(self, action):
        self.t += 1
        return EnvStep(np.zeros(2, dtype=np.float32), 1.0, self.t >= 5, None)


def _marked(marker: str) -> list:
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get("RLPYT_TEST_RUN") == marker and \
                    proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except psutil.Error:
            continue
    return found


def _describe(procs) -> list:
    out = []
    for p in procs:
        try:
            out.append(f"{p.pid} {' '.join(p.cmdline())[:100]}")
        except psutil.Error:
            out.append(f"{p.pid} (gone)")
    return out


def _wait_for_line(proc, wanted: str, sems: list) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            raise AssertionError(f"master exited early: {proc.stderr.read()[-3000:]}")
        if line.startswith("sem "):
            sems.append(line.split()[1].lstrip("/"))
        elif line.strip() == wanted:
            return
    raise AssertionError(f"no {wanted!r} line within {START_TIMEOUT_S} s")


def _wait_for_workers(master_pid: int, n: int) -> None:
    """Until ``n`` sampler workers exist (they are still starting: their envs are slow)."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        try:  # The master's descendants: cheaper to poll than every process's environment.
            tree = psutil.Process(master_pid).children(recursive=True)
        except psutil.Error:
            tree = []
        workers = [p for p in tree if
                   "resource_tracker" not in " ".join(_cmdline(p)) and
                   not ("forkserver import main" in " ".join(_cmdline(p)) and
                        _ppid(p) == master_pid)]
        if len(workers) >= n:
            return
        time.sleep(0.02)
    raise AssertionError("workers did not start")


def _ppid(p) -> int:
    try:
        return p.ppid()
    except psutil.Error:
        return -1


def _cmdline(p) -> list:
    try:
        return p.cmdline()
    except psutil.Error:
        return []


CASES = {
    # start method: (sampler, module, signal, phase) cases, run at the same time.
    "fork": [("CpuSampler", "cpu.sampler", sig, phase)
             for sig in (signal.SIGKILL, signal.SIGTERM) for phase in ("start", "run")],
    **{method: [("CpuSampler", "cpu.sampler", signal.SIGKILL, "start"),
                ("GpuSampler", "gpu.sampler", signal.SIGKILL, "run"),
                ("GpuSampler", "gpu.sampler", signal.SIGTERM, "start"),
                ("CpuSampler", "cpu.sampler", signal.SIGTERM, "run")]
       for method in ("forkserver", "spawn")},
}


@pytest.mark.parametrize("start_method", list(CASES))
def test_master_killed_leaves_nothing(start_method):
    """SIGKILL and SIGTERM, while workers start and while they run (four masters at once)."""
    with ThreadPoolExecutor(len(CASES[start_method])) as pool:
        futures = [pool.submit(_kill_master_case, start_method, *case)
                   for case in CASES[start_method]]
        failures = [f.result() for f in futures]
    failures = [f for f in failures if f]
    assert not failures, "\n".join(failures)


def _kill_master_case(start_method, sampler, module, signum, phase):
    """Kill one master; returns what it left behind (None: nothing)."""
    case = f"{start_method} {sampler} {signum.name} while workers {phase}"
    marker = uuid.uuid4().hex
    code = SCRIPT.format(tests_dir=os.path.dirname(__file__), sampler=sampler, module=module,
                         start_method=start_method, delay=2.0 if phase == "start" else 0.0)
    env = dict(os.environ, RLPYT_TEST_RUN=marker)
    shm_before = set(os.listdir("/dev/shm"))
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    sems = []
    try:
        if phase == "start":
            _wait_for_line(proc, "starting", sems)
            _wait_for_workers(proc.pid, 2)
        else:
            _wait_for_line(proc, "running", sems)
        started = _marked(marker)
        proc.send_signal(signum)
        proc.wait(timeout=DEADLINE_S)
        deadline = time.monotonic() + DEADLINE_S
        alive = _marked(marker)
        while alive and time.monotonic() < deadline:
            time.sleep(0.25)
            alive = _marked(marker)
        if alive:
            return (f"{case}: alive {DEADLINE_S} s after the kill: {_describe(alive)} "
                    f"(the run had {_describe(started)})")
        for line in proc.stdout.read().splitlines():
            if line.startswith("sem "):
                sems.append(line.split()[1].lstrip("/"))
        if start_method != "fork" and not sems:  # Under fork, names go at creation.
            return f"{case}: the script reported no semaphore: the check would be weak"
        left = set(os.listdir("/dev/shm")) - shm_before
        mine = {e for e in left if str(proc.pid) in e or e[len("sem."):] in sems}
        if mine:
            return f"{case}: left in /dev/shm: {sorted(mine)}"
        return None
    except AssertionError as e:
        return f"{case}: {e}"
    finally:
        for p in _marked(marker):
            p.kill()
        proc.kill()
        proc.wait()


@pytest.mark.slow
@pytest.mark.parametrize("delay_s", [0.0, 1.5])
def test_nproc_launcher_killed_while_ranks_start_leaves_no_rank(delay_s, tmp_path):
    """``rlpyt train --nproc 2``: SIGKILL of the launcher as soon as it has its first rank
    (and a moment later, while the ranks import torch) leaves no rank alive: each rank is
    bound to the launcher before it unpickles the runner."""
    marker = uuid.uuid4().hex
    env = dict(os.environ, RLPYT_TEST_RUN=marker)
    proc = subprocess.Popen([sys.executable, "-m", "rlpyt", "train", "--algo", "ppo",
                             "--nproc", "2", "--n-steps", "20000", "--log-dir",
                             str(tmp_path)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=env)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            try:
                children = psutil.Process(proc.pid).children(recursive=True)
            except psutil.Error:
                children = []
            if any("resource_tracker" not in " ".join(_cmdline(p)) for p in children):
                break
            time.sleep(0.01)
        else:
            raise AssertionError("the launcher started no rank")
        time.sleep(delay_s)
        proc.kill()
        proc.wait(timeout=DEADLINE_S)
        deadline = time.monotonic() + DEADLINE_S
        alive = _marked(marker)
        while alive and time.monotonic() < deadline:
            time.sleep(0.25)
            alive = _marked(marker)
        assert not alive, f"left alive: {_describe(alive)}"
    finally:
        for p in _marked(marker):
            with contextlib.suppress(psutil.Error):
                p.kill()
