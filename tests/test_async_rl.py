"""AsyncRl: the throttle's arithmetic, the parameter board, every async sampler, the replay
ratio held both ways, and faults (an env raising or hanging, a process killed, Ctrl-C)
surfacing in the optimizer process within 10 s with nothing left behind."""

from __future__ import annotations

import csv
import glob
import math
import multiprocessing as mp
import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time

import gymnasium as gym
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from test_sampler_faults import shm_entries, wait_gone

from rlpyt.agents.dqn.dqn_agent import DqnAgent
from rlpyt.agents.param_board import ParameterBoard
from rlpyt.algos.dqn.dqn import DQN
from rlpyt.envs.gym import GymEnvWrapper, make
from rlpyt.runners.async_rl import AsyncRl, AsyncRlEval, AsyncRunError, split_affinity
from rlpyt.samplers.async_.alternating_sampler import AsyncAlternatingSampler
from rlpyt.samplers.async_.control_block import ThrottleSpec
from rlpyt.samplers.async_.cpu_sampler import AsyncCpuSampler
from rlpyt.samplers.async_.gpu_sampler import AsyncGpuSampler
from rlpyt.samplers.async_.serial_sampler import AsyncSerialSampler
from rlpyt.utils.logging.context import logger_context

DEADLINE_S = 10.0
ASYNC_SAMPLERS = [AsyncSerialSampler, AsyncCpuSampler, AsyncGpuSampler, AsyncAlternatingSampler]


# ---- the throttle ----------------------------------------------------------------------
@given(replay_ratio=st.sampled_from([0.25, 1, 4, 8, 32, 256]),
       samples_per_update=st.integers(1, 256), itr_env_steps=st.integers(1, 512),
       min_itr_learn=st.integers(0, 20), appended=st.integers(0, 2000))
@settings(max_examples=200, deadline=None)
def test_allowed_updates_hold_the_ratio(replay_ratio, samples_per_update, itr_env_steps,
                                        min_itr_learn, appended):
    spec = ThrottleSpec(replay_ratio, samples_per_update, itr_env_steps, min_itr_learn)
    allowed = spec.allowed_updates(appended)
    learn_steps = max(0, appended - min_itr_learn) * itr_env_steps
    # The largest update count whose samples stay within the ratio.
    budget = replay_ratio * learn_steps
    assert allowed * samples_per_update <= budget + 1e-6
    assert (allowed + 1) * samples_per_update > budget - 1e-6


@given(max_ahead=st.integers(1, 5), min_itr_learn=st.integers(0, 10),
       updates_per_itr=st.sampled_from([0.125, 0.5, 1, 3, 16]), itr=st.integers(0, 200))
@settings(max_examples=200, deadline=None)
def test_sampler_runs_max_ahead_or_as_far_as_the_next_update_needs(max_ahead, min_itr_learn,
                                                                   updates_per_itr, itr):
    spec = ThrottleSpec(replay_ratio=updates_per_itr, samples_per_update=8, itr_env_steps=8,
                        min_itr_learn=min_itr_learn, max_ahead=max_ahead)
    for updates in range(0, 100):
        consumed = updates / updates_per_itr
        next_needs = min_itr_learn + math.ceil((updates + 1) / updates_per_itr)
        expected = itr - min_itr_learn - consumed < max_ahead or itr < next_needs
        assert spec.may_sample(itr, updates) == expected
        if updates_per_itr * max_ahead >= 1:  # The classic bound alone holds the sampler.
            assert spec.may_sample(itr, updates) == (itr - min_itr_learn - consumed < max_ahead)


# Replay ratios as written in configs: fractions of a decimal, thirds, powers of two.
RATIOS = st.one_of(st.sampled_from([0.1, 0.25, 0.3, 1 / 3, 0.8, 1, 4, 8, 32, 256]),
                   st.floats(0.001, 512, allow_nan=False, allow_infinity=False))


@given(replay_ratio=RATIOS, samples_per_update=st.integers(1, 6000),
       itr_env_steps=st.integers(1, 1024), min_itr_learn=st.integers(0, 20),
       max_ahead=st.integers(1, 5), n_itr=st.integers(1, 300), order_seed=st.integers(0, 2 ** 32 - 1))
@settings(max_examples=300, deadline=None)
def test_throttle_never_deadlocks(replay_ratio, samples_per_update, itr_env_steps,
                                  min_itr_learn, max_ahead, n_itr, order_seed):
    """Sampler, copier (two double-buffer slots) and optimizer driven by the throttle's
    arithmetic alone, in a random order: whatever the settings, some side can always move
    until all ``n_itr`` batches are stored and every update they allow is taken."""
    spec = ThrottleSpec(replay_ratio, samples_per_update, itr_env_steps, min_itr_learn,
                        max_ahead)
    schedule = random.Random(order_seed)  # (hypothesis's own randoms are slow here)
    sampled = appended = updates = 0
    for _ in range(100 * n_itr + 100):
        moves = []
        if sampled < n_itr and sampled - appended < 2 and spec.may_sample(sampled, updates):
            moves.append("sample")
        if appended < sampled:
            moves.append("append")
        if updates < spec.allowed_updates(appended):
            moves.append("update")
        if not moves:
            break
        move = schedule.choice(moves)
        if move == "sample":
            sampled += 1
        elif move == "append":
            appended += 1
        else:  # The optimizer takes all or some of the updates it is allowed.
            allowed = spec.allowed_updates(appended)
            updates = allowed if schedule.random() < 0.5 else schedule.randint(updates + 1,
                                                                               allowed)
    assert (sampled, appended) == (n_itr, n_itr), \
        f"deadlock: {spec.describe(appended, updates)}, {sampled} sampled of {n_itr}"
    assert updates == spec.allowed_updates(n_itr)


def test_fractional_update_credit_accumulates():
    """The R2D1 settings that deadlocked: 4 * 160 / (64 * 80) = 0.125 updates per batch
    with max_ahead=2 (floor(2 * 0.125) = 0 updates, so no update ever started)."""
    spec = ThrottleSpec(replay_ratio=4, samples_per_update=64 * 80, itr_env_steps=40 * 4,
                        min_itr_learn=5, max_ahead=2)
    assert spec.updates_per_itr == 0.125
    assert [spec.allowed_updates(5 + n) for n in (0, 7, 8, 15, 16, 800)] == [0, 0, 1, 1, 2, 100]
    assert spec.may_sample(5 + 7, updates=0) and not spec.may_sample(5 + 8, updates=0)
    # Decimal ratios are read as written: 10 batches at 0.3 updates each allow 3.
    assert ThrottleSpec(0.3, 1, 1).allowed_updates(10) == 3
    assert ThrottleSpec(0.3, 1, 1).allowed_updates(9) == 2


def test_throttle_rejects_bad_values():
    with pytest.raises(ValueError, match="replay_ratio=0"):
        ThrottleSpec(0, 32, 32)
    with pytest.raises(ValueError, match="max_ahead=0"):
        ThrottleSpec(1, 32, 32, max_ahead=0)


# ---- the parameter board ---------------------------------------------------------------
def test_board_versions_and_read_into():
    src, dst = torch.nn.Linear(3, 2), torch.nn.Linear(3, 2)
    board = ParameterBoard(src)
    assert board.version == 0
    assert board.read_into(dst) == 0
    assert torch.equal(dst.weight, src.weight)
    assert board.read_into(dst, newer_than=0) is None
    with torch.no_grad():
        src.weight.add_(1.0)
    assert board.publish(src) == 1
    assert board.read_into(dst, newer_than=0) == 1
    assert torch.equal(dst.weight, src.weight)


def _publish_forever(board, stop):
    model = torch.nn.Linear(64, 64)
    value = 0.0
    while not stop.is_set():
        value += 1.0
        with torch.no_grad():
            for p in model.parameters():
                p.fill_(value)
        board.publish(model)


def test_board_reads_are_never_torn():
    """A writer fills every parameter with its version number; every read must be uniform."""
    torch.set_num_threads(1)
    initial = torch.nn.Linear(64, 64)
    with torch.no_grad():
        for p in initial.parameters():
            p.zero_()
    board = ParameterBoard(initial)
    stop = mp.get_context("fork").Event()
    writer = mp.get_context("fork").Process(target=_publish_forever, args=(board, stop))
    writer.start()
    try:
        reader = torch.nn.Linear(64, 64)
        last, reads = -1, 0
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            loaded = board.read_into(reader, newer_than=last)
            if loaded is None:
                continue
            reads += 1
            values = torch.cat([p.detach().flatten() for p in reader.parameters()])
            assert torch.all(values == values[0]), "a read mixed two published versions"
            last = loaded
        assert reads > 10
    finally:
        stop.set()
        writer.join(5)


# ---- affinity ----------------------------------------------------------------------------
def test_split_affinity_forms():
    from rlpyt.utils.launching.affinity import make_affinity

    affinity = make_affinity(n_cpu_core=2, cpu_per_run=2, async_sample=True, set_affinity=False)
    optimizer, sampler = split_affinity(affinity)
    assert optimizer["cuda_idx"] is None and "workers_cpus" in sampler
    optimizer, sampler = split_affinity(dict(cuda_idx=None, workers_cpus=[0, 1]))
    assert optimizer["cuda_idx"] is None and sampler["workers_cpus"] == [0, 1]
    with pytest.raises(ValueError, match="one device"):
        split_affinity(dict(optimizer=[{}, {}], sampler={}))


# ---- runs --------------------------------------------------------------------------------
def small_dqn(**kwargs):
    settings_ = dict(min_steps_learn=256, replay_size=4000, batch_size=32, replay_ratio=4,
                     target_update_interval=50, learning_rate=1e-3, eps_steps=2000)
    settings_.update(kwargs)
    return DQN(**settings_), DqnAgent(model_kwargs=dict(hidden_sizes=[32]))


def cartpole_sampler(SamplerCls, EnvCls=make, env_kwargs=None, **kwargs):
    return SamplerCls(EnvCls=EnvCls, env_kwargs=env_kwargs or dict(id="CartPole-v1"),
                      batch_T=8, batch_B=4, max_decorrelation_steps=0, **kwargs)


def read_progress(log_dir) -> list[dict]:
    (path,) = glob.glob(os.path.join(str(log_dir), "**", "progress.csv"), recursive=True)
    with open(path) as f:
        return list(csv.DictReader(f))


# ---- the rates of a log row -------------------------------------------------------------
def _logged_rates(monkeypatch, RunnerCls, interval_s, eval_time_s, new_steps, new_updates):
    """The rates ``log_diagnostics`` logs for a row ``interval_s`` wall seconds after the
    previous one, of which ``eval_time_s`` went to an evaluation."""
    from types import SimpleNamespace

    from rlpyt.runners import diagnostics as diagnostics_module
    from rlpyt.runners.diagnostics import RunDiagnostics

    algo = SimpleNamespace(update_counter=new_updates, batch_size=32, opt_info_fields=())
    runner = RunnerCls.__new__(RunnerCls)
    runner.diagnostics = RunDiagnostics(algo, SimpleNamespace(), 100, with_eval=True,
                                        eval_pauses_training=RunnerCls._eval_pauses_training)
    monkeypatch.setattr(diagnostics_module.time, "time", lambda: 1000.0)
    runner.diagnostics.start(n_itr=10, itr_batch_size=new_steps, log_interval_itrs=1,
                             replay_batch_size=32)
    runner.diagnostics.last_itr = 0
    runner.diagnostics._record_trajs = lambda traj_infos: None
    runner.save_itr_snapshot = lambda itr: None
    logged = {}
    monkeypatch.setattr(diagnostics_module.logger, "record_tabular",
                        lambda key, value, *a, **k: logged.__setitem__(key, value))
    monkeypatch.setattr(diagnostics_module.logger, "dump_tabular", lambda *a, **k: None)
    monkeypatch.setattr(diagnostics_module.time, "time", lambda: 1000.0 + interval_s)
    runner.log_diagnostics(1, eval_traj_infos=[], eval_time=eval_time_s)
    return logged["StepsPerSecond"], logged["UpdatesPerSecond"], logged["EvalTime (s)"]


def test_async_rates_count_the_time_the_sampler_process_evaluated(monkeypatch):
    """AsyncRl's optimizer trains on while the sampler process evaluates, so the rates
    divide by the whole interval; a serial runner's evaluation pauses training, so its
    rates leave the evaluation's time out."""
    from rlpyt.runners.minibatch_rl import MinibatchRlEval

    async_rates = _logged_rates(monkeypatch, AsyncRlEval, 10.0, 4.0, 1000, 50)
    assert async_rates == (pytest.approx(100.0), pytest.approx(5.0), 4.0)
    serial_rates = _logged_rates(monkeypatch, MinibatchRlEval, 10.0, 4.0, 1000, 50)
    assert serial_rates == (pytest.approx(1000 / 6), pytest.approx(50 / 6), 4.0)


def train(runner, log_dir, run_id=0):
    with logger_context(str(log_dir), run_id, "async", override_prefix=True,
                        snapshot_mode="last"):
        return runner.train()


@pytest.mark.parametrize("SamplerCls", ASYNC_SAMPLERS)
def test_each_async_sampler_trains_dqn(SamplerCls, tmp_path, leak_check):
    algo, agent = small_dqn()
    sampler = cartpole_sampler(SamplerCls, eval_n_envs=2, eval_max_trajectories=2)
    runner = AsyncRlEval(algo, agent, sampler, n_steps=1600, seed=3,
                         affinity=dict(workers_cpus=[0, 0]), log_interval_steps=800)
    summary = train(runner, tmp_path)
    rows = read_progress(tmp_path)
    assert [int(r["Iteration"]) for r in rows] == [-1, 24, 49]
    assert int(rows[-1]["CumSteps"]) == 1600
    # (1600 - 256 steps before learning) * ratio 4 / 32 samples per update.
    assert int(rows[-1]["CumUpdates"]) == 168
    assert len(summary["eval_history"]) == 3
    assert agent.param_board.version == 168  # Published after every update.
    for key in ("PolicyLagAverage", "SamplerWaitFraction", "OptimizerWaitFraction"):
        assert key in rows[-1]
    # The sampler process's evaluations took time, logged as such (issue 30: it was 0).
    assert all(float(r["EvalTime (s)"]) > 0 for r in rows)
    assert float(rows[-1]["CumEvalTime (s)"]) == pytest.approx(
        sum(float(r["EvalTime (s)"]) for r in rows))
    (debug_log,) = glob.glob(os.path.join(str(tmp_path), "**", "debug.log"), recursive=True)
    with open(debug_log) as f:
        log = f.read()
    assert "iterations of minibatch RL" not in log
    assert ("Running AsyncRlEval: 50 sampler batches of 32 env steps (1600 in all) and 168 "
            "gradient updates (replay ratio 4: 4 updates per batch, learning after 8 batches); "
            f"sampler process: {SamplerCls.__name__}, 4 envs + 2 eval envs ") in log
    workers = "" if SamplerCls is AsyncSerialSampler else "in 2 worker processes (pinned to CPUs 0, 0)"
    assert workers in log
    assert "optimizer in this process on the CPU, 1 torch thread, unpinned." in log


def test_sync_sampler_is_refused():
    from rlpyt.samplers.serial.sampler import SerialSampler

    algo, agent = small_dqn()
    with pytest.raises(TypeError, match="asynchronous sampler"):
        AsyncRl(algo, agent, SerialSampler(EnvCls=make, env_kwargs=dict(id="CartPole-v1"),
                                           batch_T=2, batch_B=2), n_steps=100)
    with pytest.raises(TypeError, match="runs under an asynchronous runner"):
        cartpole_sampler(AsyncSerialSampler).initialize(agent)


class SlowEnv(GymEnvWrapper):
    """CartPole whose every step sleeps ``delay`` seconds (a slow simulator)."""

    def __init__(self, delay=0.0):
        super().__init__(gym.make("CartPole-v1"))
        self.delay = delay

    def step(self, action):
        time.sleep(self.delay)
        return super().step(action)


class SlowDQN(DQN):
    """DQN whose every gradient step takes at least ``delay`` seconds (a big network)."""

    def __init__(self, delay=0.0, **kwargs):
        super().__init__(**kwargs)
        self.delay = delay

    def gradient_step(self, batch=None):
        time.sleep(self.delay)
        return super().gradient_step(batch)


@pytest.mark.parametrize("slow", ["sampler", "optimizer"])
def test_replay_ratio_is_held_both_ways(slow, tmp_path):
    env_delay, update_delay = (0.002, 0.0) if slow == "sampler" else (0.0, 0.01)
    n_steps = 1600 if slow == "sampler" else 3200
    kwargs = dict(min_steps_learn=256, replay_size=4000, batch_size=32, replay_ratio=2,
                  target_update_interval=50, eps_steps=2000)
    algo = SlowDQN(delay=update_delay, **kwargs)
    agent = DqnAgent(model_kwargs=dict(hidden_sizes=[32]))
    sampler = cartpole_sampler(AsyncSerialSampler, EnvCls=SlowEnv,
                               env_kwargs=dict(delay=env_delay))
    runner = AsyncRl(algo, agent, sampler, n_steps=n_steps, seed=1, log_interval_steps=800)
    train(runner, tmp_path)
    rows = read_progress(tmp_path)
    learn_steps = n_steps - 256
    measured = algo.update_counter * 32 / learn_steps
    assert abs(measured - 2) / 2 < 0.05, f"measured replay ratio {measured} vs 2"
    for row in rows:  # Every log row holds the ratio since learning began, too.
        assert abs(float(row["ReplayRatioSinceLearning"]) - 2) < 0.1 * 2 or \
            int(row["CumSteps"]) <= 800
    waits = [float(r["SamplerWaitFraction"]) for r in rows]
    opt_waits = [float(r["OptimizerWaitFraction"]) for r in rows]
    if slow == "optimizer":  # The fast sampler is the one held back, and vice versa.
        assert max(waits) > 0.3, rows
    else:
        assert max(opt_waits) > 0.3, rows


# ---- faults ------------------------------------------------------------------------------
class FaultyCartPole(GymEnvWrapper):
    """CartPole that raises (``mode="raise"``) or hangs (``mode="hang"``) at step ``at``."""

    def __init__(self, mode="raise", at=100):
        super().__init__(gym.make("CartPole-v1"))
        self.mode, self.at, self.n = mode, at, 0

    def step(self, action):
        self.n += 1
        if self.n == self.at:
            if self.mode == "raise":
                raise RuntimeError("injected env fault")
            time.sleep(3600)
        return super().step(action)


@pytest.mark.parametrize("SamplerCls", [AsyncSerialSampler, AsyncCpuSampler])
def test_env_exception_surfaces_with_traceback(SamplerCls, tmp_path, leak_check):
    algo, agent = small_dqn()
    sampler = cartpole_sampler(SamplerCls, EnvCls=FaultyCartPole, env_kwargs=dict(at=60))
    runner = AsyncRl(algo, agent, sampler, n_steps=20_000, affinity=dict(workers_cpus=[0, 0]))
    start = time.monotonic()
    with pytest.raises(AsyncRunError, match="injected env fault") as excinfo:
        train(runner, tmp_path)
    assert time.monotonic() - start < DEADLINE_S
    assert "Traceback" in str(excinfo.value)


def test_hung_env_surfaces_with_the_sampler_stack(tmp_path, leak_check):
    algo, agent = small_dqn()
    sampler = cartpole_sampler(AsyncSerialSampler, EnvCls=FaultyCartPole,
                               env_kwargs=dict(mode="hang", at=60), batch_timeout=2.0)
    runner = AsyncRl(algo, agent, sampler, n_steps=20_000)
    start = time.monotonic()
    with pytest.raises(AsyncRunError, match="batch_timeout=2.0") as excinfo:
        train(runner, tmp_path)
    assert time.monotonic() - start < 2.0 + DEADLINE_S
    assert "in step" in str(excinfo.value)  # The hung frame is in the stack shown.


def test_hung_env_in_a_worker_surfaces_with_the_worker_timeout(tmp_path, leak_check):
    algo, agent = small_dqn()
    sampler = cartpole_sampler(AsyncCpuSampler, EnvCls=FaultyCartPole,
                               env_kwargs=dict(mode="hang", at=60), step_timeout=2.0)
    runner = AsyncRl(algo, agent, sampler, n_steps=20_000, affinity=dict(workers_cpus=[0, 0]))
    start = time.monotonic()
    with pytest.raises(AsyncRunError, match="step_timeout=2.0") as excinfo:
        train(runner, tmp_path)
    assert time.monotonic() - start < 2.0 + DEADLINE_S
    assert "sampler worker" in str(excinfo.value)


@pytest.mark.parametrize("victim", ["sampler", "copier", "worker"])
def test_killed_process_surfaces(victim, tmp_path, leak_check):
    algo, agent = small_dqn()
    SamplerCls = AsyncCpuSampler if victim == "worker" else AsyncSerialSampler
    sampler = cartpole_sampler(SamplerCls)
    runner = AsyncRl(algo, agent, sampler, n_steps=200_000,
                     affinity=dict(workers_cpus=[0, 0]))

    def kill_later():
        while runner.sampler_process is None or runner.control is None or \
                runner.control.appended.value < 40:
            time.sleep(0.05)
        if victim == "worker":
            pid = _wait_for_grandchild(runner.sampler_process.pid)
        else:
            pid = (runner.sampler_process if victim == "sampler" else runner.copier_process).pid
        os.kill(pid, signal.SIGKILL)
        killed_at.append(time.monotonic())

    killed_at: list[float] = []
    thread = threading.Thread(target=kill_later, daemon=True)
    thread.start()
    with pytest.raises(AsyncRunError, match="SIGKILL|died|failed"):
        train(runner, tmp_path)
    assert killed_at and time.monotonic() - killed_at[0] < DEADLINE_S


def _wait_for_grandchild(pid: int) -> int:
    import psutil

    for _ in range(100):
        children = psutil.Process(pid).children()
        if children:
            return children[0].pid
        time.sleep(0.05)
    raise AssertionError("the sampler process started no worker")


CTRL_C_SCRIPT = textwrap.dedent("""
    import signal, sys, torch
    # Ctrl-C raises here even if the test run was started as a background job (which
    # starts with SIGINT ignored, and its children inherit that).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.path.insert(0, {tests_dir!r})
    torch.set_num_threads(1)
    from test_async_rl import small_dqn, cartpole_sampler
    from rlpyt.runners.async_rl import AsyncRl
    from rlpyt.samplers.async_.cpu_sampler import AsyncCpuSampler
    from rlpyt.utils.logging.context import logger_context
    algo, agent = small_dqn()
    runner = AsyncRl(algo, agent, cartpole_sampler(AsyncCpuSampler), n_steps=10_000_000,
                     affinity=dict(workers_cpus=[0, 0]), log_interval_steps=320)
    with logger_context({log_dir!r}, 0, "ctrl_c", override_prefix=True, snapshot_mode="last"):
        runner.train()
""")


def test_ctrl_c_stops_every_process_and_keeps_the_snapshot(tmp_path):
    code = CTRL_C_SCRIPT.format(tests_dir=os.path.dirname(__file__), log_dir=str(tmp_path))
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not glob.glob(str(tmp_path / "**" / "params.pkl"), recursive=True):
            assert proc.poll() is None, proc.communicate()[1][-3000:]
            assert time.monotonic() < deadline, "no snapshot within 60 s"
            time.sleep(0.2)
        import psutil

        tree = [c.pid for c in psutil.Process(proc.pid).children(recursive=True)]
        proc.send_signal(signal.SIGINT)
        stderr = proc.communicate(timeout=DEADLINE_S)[1]
    finally:
        proc.kill()
    assert proc.returncode != 0 and "KeyboardInterrupt" in stderr
    assert not wait_gone(tree), "processes outlived the interrupted run"
    assert not [e for e in shm_entries() if str(proc.pid) in e]
    (snapshot,) = glob.glob(str(tmp_path / "**" / "params.pkl"), recursive=True)
    state = torch.load(snapshot, weights_only=False)
    assert "agent_state_dict" in state


def test_main_killed_takes_every_process_with_it(tmp_path):
    code = CTRL_C_SCRIPT.format(tests_dir=os.path.dirname(__file__), log_dir=str(tmp_path))
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    import psutil

    try:
        deadline = time.monotonic() + 60
        tree: list[int] = []
        while len(tree) < 4:  # Sampler, copier and the sampler's two workers.
            assert proc.poll() is None and time.monotonic() < deadline
            tree = [c.pid for c in psutil.Process(proc.pid).children(recursive=True)
                    if "resource_tracker" not in " ".join(c.cmdline())]
            time.sleep(0.2)
        proc.kill()
        proc.wait()
    finally:
        proc.kill()
    assert not wait_gone(tree), "processes outlived a main process killed with SIGKILL"


# ---- checkpoints and resume --------------------------------------------------------------
def test_resume_continues_counters_replay_and_rows(tmp_path):
    """A run stopped after its second row resumes from its checkpoint: updates, replay
    contents, parameter-free counters and log rows go on with nothing repeated or lost."""
    from rlpyt.runners import checkpoint_files as ckpt

    class StopAfterTwoRows(AsyncRl):
        def should_stop(self):
            return self.diagnostics.last_itr >= 49

    algo, agent = small_dqn()
    runner = StopAfterTwoRows(algo, agent, cartpole_sampler(AsyncSerialSampler),
                              n_steps=3200, seed=2, log_interval_steps=800)
    train(runner, tmp_path)
    first_rows = read_progress(tmp_path)
    assert [int(r["Iteration"]) for r in first_rows] == [24, 49]
    (run_dir,) = glob.glob(str(tmp_path / "run_*"))
    state = ckpt.load_checkpoint(run_dir)
    assert state["itr"] == 49 and state["appended"] >= 50

    algo, agent = small_dqn()
    resumed = AsyncRl(algo, agent, cartpole_sampler(AsyncSerialSampler), n_steps=3200,
                      seed=2, log_interval_steps=800)
    with logger_context(str(tmp_path), 0, "async", override_prefix=True,
                        snapshot_mode="last", resume=True):
        resumed.train()
    rows = read_progress(tmp_path)
    assert [int(r["Iteration"]) for r in rows] == [24, 49, 74, 99]
    assert rows[:2] == first_rows[:2]
    # The replay ratio held across the restart: (3200 - 256) * 4 / 32 updates in all.
    assert algo.update_counter == 368
    assert int(rows[-1]["CumUpdates"]) == 368


# ---- command line --------------------------------------------------------------------------
def test_cli_runner_async_trains_dqn(tmp_path, capsys):
    from rlpyt.cli import main

    code = main(["train", "--algo", "dqn", "--runner", "async", "--n-steps", "1600",
                 "--log-dir", str(tmp_path), "--algo.min_steps_learn", "400",
                 "--runner.log_interval_steps", "800", "--sampler.batch_timeout", "60"])
    assert code == 0
    rows = read_progress(tmp_path)
    assert int(rows[-1]["CumSteps"]) == 1600 and "ReplayRatioSinceLearning" in rows[-1]


def test_cli_runner_async_refuses_on_policy_algorithms(tmp_path, capsys):
    from rlpyt.cli import main

    code = main(["train", "--algo", "ppo", "--runner", "async", "--log-dir", str(tmp_path)])
    assert code == 2
    err = capsys.readouterr()
    assert "cannot run with --runner async" in err.out + err.err and "dqn" in err.out + err.err


# ---- wait-reset collection with DQN-family replay ------------------------------------------
def test_categorical_dqn_accepts_wait_reset_collectors_and_masks_filler_steps(tmp_path):
    """Steps after an env's first done in a wait-reset batch are filler: stored, but
    flagged so that no transition whose n-step window reaches them enters the loss."""
    from rlpyt.agents.dqn.catdqn_agent import CatDqnAgent
    from rlpyt.algos.dqn.cat_dqn import CategoricalDQN
    from rlpyt.samplers.async_.collectors import DbCpuWaitResetCollector
    from rlpyt.utils.returns import valid_from_done

    algo = CategoricalDQN(min_steps_learn=200, replay_size=4000, batch_size=32,
                          replay_ratio=2, n_step_return=2, target_update_interval=20)
    agent = CatDqnAgent(model_kwargs=dict(hidden_sizes=[32]))
    sampler = cartpole_sampler(AsyncSerialSampler, CollectorCls=DbCpuWaitResetCollector)
    # batch_T=8 with CartPole's early random episodes: most columns end inside a batch.
    runner = AsyncRl(algo, agent, sampler, n_steps=1600, seed=4, log_interval_steps=800)
    train(runner, tmp_path)
    assert algo.update_counter == (1600 - 192) * 2 // 32
    replay = algo.replay_buffer
    done = torch.as_tensor(replay.samples.done[:50 * 8])
    stored = torch.as_tensor(replay.samples.timeout[:50 * 8])
    filler = torch.cat([valid_from_done(done[i:i + 8]) == 0 for i in range(0, 400, 8)])
    assert filler.any() and torch.equal(stored, filler)


@pytest.mark.parametrize("name", ["ddpg", "td3", "sac"])
def test_qpg_algorithms_run_under_async_rl(name, tmp_path):
    """DDPG, TD3 and SAC train under AsyncRl with the replay ratio held (Pendulum)."""
    from rlpyt.agents.qpg.ddpg_agent import DdpgAgent
    from rlpyt.agents.qpg.sac_agent import SacAgent
    from rlpyt.agents.qpg.td3_agent import Td3Agent
    from rlpyt.algos.qpg.ddpg import DDPG
    from rlpyt.algos.qpg.sac import SAC
    from rlpyt.algos.qpg.td3 import TD3

    AlgoCls, AgentCls = dict(ddpg=(DDPG, DdpgAgent), td3=(TD3, Td3Agent),
                             sac=(SAC, SacAgent))[name]
    hidden = dict(hidden_sizes=[32, 32])
    algo = AlgoCls(batch_size=32, replay_ratio=32, min_steps_learn=200, replay_size=4000)
    agent = AgentCls(model_kwargs=hidden, q_model_kwargs=hidden)
    sampler = AsyncSerialSampler(EnvCls=make, env_kwargs=dict(id="Pendulum-v1"), batch_T=4,
                                 batch_B=2, max_decorrelation_steps=0)
    runner = AsyncRl(algo, agent, sampler, n_steps=1000, seed=0, log_interval_steps=500)
    train(runner, tmp_path)
    assert algo.update_counter == 1000 - 200  # One update per env step after learning starts.
    assert agent.param_board.version == algo.update_counter
    rows = read_progress(tmp_path)
    losses = [float(v) for k, v in rows[-1].items() if "loss" in k.lower() and "Average" in k]
    assert losses and all(np.isfinite(losses))


def test_a_second_run_in_the_same_process_with_learner_threads_does_not_hang(tmp_path):
    """Two ``AsyncRl`` runs in one process, the learner on 2 torch threads: the second
    run's sampler is forked after the first run's optimizer has used OpenMP on 2 threads.
    With the affinity's ``master_torch_threads`` applied in the forked sampler too, its
    first parallel op (copying a large parameter into shared memory) waited for OpenMP
    threads the child does not have, until ``progress_timeout``; the sampler process now
    runs one torch thread."""
    from rlpyt.agents.pg.categorical import CategoricalPgAgent
    from rlpyt.algos.pg.impala import Impala
    from rlpyt.utils.logging.context import logger_context

    threads = torch.get_num_threads()
    try:
        for run in range(2):
            sampler = AsyncSerialSampler(EnvCls=make, env_kwargs=dict(id="CartPole-v1"),
                                         batch_T=8, batch_B=4, max_decorrelation_steps=0)
            # 512 x 512 weights: copies of them run on several OpenMP threads.
            agent = CategoricalPgAgent(model_kwargs=dict(hidden_sizes=[512, 512]))
            runner = AsyncRl(Impala(), agent, sampler, n_steps=640, seed=run,
                             log_interval_steps=320, progress_timeout=60,
                             affinity=dict(master_torch_threads=2))
            with logger_context(str(tmp_path), run, "threads", override_prefix=True):
                runner.train()
            assert runner.algo.update_counter > 0
    finally:
        torch.set_num_threads(threads)
