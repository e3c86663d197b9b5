"""Asynchronous runs as launch scripts make them (issues 25 and 26): CPU pinning on, the
R2D1 settings whose fractional update rate deadlocked the throttle, R2D1 with per-env
epsilons under the alternating sampler, the progress watchdog, the preflight checks,
and resuming a finished run."""

from __future__ import annotations

import glob
import os
import subprocess
import sys
import textwrap
import time

import pytest
import torch
from test_async_rl import cartpole_sampler, read_progress, small_dqn, train

from rlpyt.agents.dqn.dqn_agent import DqnAgent
from rlpyt.agents.dqn.r2d1_agent import R2d1Agent, R2d1AlternatingAgent
from rlpyt.algos.dqn.dqn import DQN
from rlpyt.algos.dqn.r2d1 import R2D1
from rlpyt.envs.gym import make
from rlpyt.runners.async_rl import AsyncRl, AsyncRunError
from rlpyt.samplers.async_.alternating_sampler import AsyncAlternatingSampler
from rlpyt.samplers.async_.collectors import DbGpuResetCollector
from rlpyt.samplers.async_.gpu_sampler import AsyncGpuSampler
from rlpyt.samplers.async_.serial_sampler import AsyncSerialSampler
from rlpyt.utils.launching.affinity import affinity_from_code, encode_affinity
from rlpyt.utils.process import available_cpus

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture
def restore_affinity():
    """The optimizer of an in-process async run pins this (pytest) process: undo it."""
    import psutil

    me = psutil.Process()
    before = me.cpu_affinity()
    yield
    me.cpu_affinity(before)
    torch.set_num_threads(1)


def two_cpu_async_code(**kwargs) -> str:
    """The launch-script affinity of one async run on this machine's CPUs, pinning on."""
    n = len(available_cpus())
    return encode_affinity(n_cpu_core=n, n_gpu=0, cpu_per_run=n, async_sample=True, **kwargs)


# ---- 1. pinning ----------------------------------------------------------------------------
PINNED_SCRIPT = textwrap.dedent("""
    import sys, psutil, torch
    sys.path.insert(0, {tests_dir!r})
    torch.set_num_threads(1)
    from test_async_rl import small_dqn, cartpole_sampler
    from rlpyt.runners.async_rl import AsyncRl
    from rlpyt.samplers.async_.cpu_sampler import AsyncCpuSampler
    from rlpyt.samplers.async_.serial_sampler import AsyncSerialSampler
    from rlpyt.utils.launching.affinity import affinity_from_code
    from rlpyt.utils.logging.context import logger_context
    affinity = affinity_from_code({code!r})
    for i, SamplerCls in enumerate([AsyncCpuSampler, AsyncSerialSampler]):
        algo, agent = small_dqn()
        runner = AsyncRl(algo, agent, cartpole_sampler(SamplerCls), n_steps=800, seed=i,
                         affinity=affinity, log_interval_steps=400)
        with logger_context({log_dir!r}, i, "pinned", override_prefix=True):
            runner.train()
        assert algo.update_counter == (800 - 256) * 4 // 32, algo.update_counter
        pinned = psutil.Process().cpu_affinity()
        assert pinned == list(affinity["optimizer"][0]["cpus"]), pinned
    print("trained with pinning")
""")


@pytest.mark.skipif(len(available_cpus()) < 2, reason="an async layout needs 2 CPUs")
def test_async_dqn_trains_with_default_pinning(tmp_path):
    """The default launch-script affinity pins the optimizer to one CPU and the sampler
    to the others; the sampler process (forked by the optimizer) must still pin itself
    to its own CPUs.  Both the CPU and the serial async sampler, in one process."""
    code = f"0slt_{two_cpu_async_code()}"
    assert affinity_from_code(code)["sampler"]["set_affinity"]  # Pinning is the default.
    script = PINNED_SCRIPT.format(tests_dir=TESTS_DIR, code=code, log_dir=str(tmp_path))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "trained with pinning" in proc.stdout


def test_a_child_pins_itself_from_the_cpus_its_parent_was_given():
    """A process forked after its parent pinned itself narrower widens back to its own."""
    import multiprocessing as mp

    from rlpyt.utils.process import apply_affinity, granted_cpus

    cpus = available_cpus()
    if len(cpus) < 2:
        pytest.skip("needs 2 CPUs")
    import psutil

    me = psutil.Process()
    before = me.cpu_affinity()
    granted_cpus()
    try:
        apply_affinity([cpus[0]], torch_threads=1)
        ctx = mp.get_context("fork")
        result = ctx.Queue()
        child = ctx.Process(target=_pin_and_report, args=([cpus[-1]], result))
        child.start()
        child.join(30)
        assert result.get(timeout=5) == [cpus[-1]]
    finally:
        me.cpu_affinity(before)


def _pin_and_report(cpus, result):
    import psutil

    from rlpyt.utils.process import apply_affinity

    try:
        apply_affinity(cpus, torch_threads=1)
        result.put(psutil.Process().cpu_affinity())
    except Exception as e:  # noqa: BLE001 - reported to the test
        result.put(repr(e))


# ---- 2 and 4. R2D1 on the CPU form of the GPU layouts -----------------------------------------
def r2d1_deadlock_settings():
    """The issue's R2D1 rate, scaled down: updates per batch = replay_ratio * sampler
    batch / (batch_B * batch_T) = 4 * 16 / (16 * 32) = 0.125 < 1 / max_ahead (2)."""
    return R2D1(batch_T=32, batch_B=16, warmup_T=4, store_rnn_state_interval=4,
                replay_ratio=4, min_steps_learn=320, replay_size=4000, n_step_return=3,
                target_update_interval=10)


@pytest.mark.timeout(300)  # It hung forever before the throttle was fixed.
@pytest.mark.parametrize("layout", ["gpu", "alternating"])
def test_r2d1_async_cpu_form_of_gpu_layouts(layout, tmp_path, restore_affinity, leak_check):
    """``async_gpu`` (AsyncGpuSampler) and ``async_alt`` (AsyncAlternatingSampler) R2D1
    layouts with n_gpu=0, pinning on, per-env epsilons (Ape-X style): both finish in
    bounded time with every update the ratio allows."""
    alternating = layout == "alternating"
    affinity = affinity_from_code(two_cpu_async_code(sample_gpu_per_run=0,
                                                     alternating=alternating))
    SamplerCls = AsyncAlternatingSampler if alternating else AsyncGpuSampler
    batch_B = 4 if alternating else 2  # Alternating: two groups of 2 envs.
    sampler = SamplerCls(EnvCls=make, env_kwargs=dict(id="CartPole-v1"), batch_T=16 // batch_B,
                         batch_B=batch_B, max_decorrelation_steps=0,
                         CollectorCls=DbGpuResetCollector)
    AgentCls = R2d1AlternatingAgent if alternating else R2d1Agent
    agent = AgentCls(eps_final_min=0.001, eps_final=0.4,
                     model_kwargs=dict(hidden_sizes=(16,), lstm_size=16, head_sizes=(16,)))
    algo = r2d1_deadlock_settings()
    runner = AsyncRl(algo, agent, sampler, n_steps=1600, seed=0, affinity=affinity,
                     log_interval_steps=800, progress_timeout=60)
    start = time.monotonic()
    train(runner, tmp_path)
    assert time.monotonic() - start < 180
    assert runner.throttle.updates_per_itr == 0.125
    assert algo.update_counter == (100 - 20) // 8  # Every update the ratio allows.
    assert int(read_progress(tmp_path)[-1]["CumUpdates"]) == algo.update_counter


def test_alternating_groups_act_with_their_own_per_env_epsilons():
    """Each half of the envs samples with its own slice of the per-env epsilons."""
    from rlpyt.envs.base import EnvSpaces
    from rlpyt.spaces.float_box import FloatBox
    from rlpyt.spaces.int_box import IntBox

    agent = R2d1AlternatingAgent(eps_final_min=0.01, eps_final=1.0, eps_itr_min=0,
                                 eps_itr_max=0,
                                 model_kwargs=dict(hidden_sizes=(8,), lstm_size=8,
                                                   head_sizes=(8,)))
    agent.initialize(EnvSpaces(observation=FloatBox(-1, 1, (3,)), action=IntBox(0, 2)),
                     global_B=4, env_ranks=[0, 1, 2, 3])
    agent.set_alternating_groups((2, 2))
    agent.sample_mode(10)
    per_env = agent.epsilon_at(10)
    assert per_env.shape == (4,)
    q = torch.tensor([[1.0, 0.0], [1.0, 0.0]])
    for envs in (slice(0, 2), slice(2, 4)):
        agent.act_on_envs(envs)
        probs = agent.distribution.probs(q)  # eps / 2 on the non-greedy action.
        assert torch.allclose(probs[:, 1] * 2, per_env[envs])
        step = agent.step(torch.zeros(2, 3), torch.zeros(2, dtype=torch.long), torch.zeros(2))
        assert step.action.shape == (2,)
    agent.act_on_envs(None)
    assert torch.allclose(agent.distribution.probs(q.repeat(2, 1))[:, 1] * 2, per_env)


# ---- 3. the progress watchdog ------------------------------------------------------------------
class CopierHangsDQN(DQN):
    """DQN whose memory copier hangs on its ``hang_at``-th batch: every process stays
    alive and no side can move (the sampler fills both slots, the optimizer waits)."""

    def __init__(self, hang_at=20, **kwargs):
        super().__init__(**kwargs)
        self.hang_at, self._stored = hang_at, 0

    def samples_to_buffer(self, samples):
        self._stored += 1  # Counted in the copier process (its own copy of the algo).
        if self._stored == self.hang_at:
            time.sleep(3600)
        return super().samples_to_buffer(samples)


def test_progress_watchdog_stops_a_stalled_run_naming_both_sides(tmp_path, leak_check):
    algo = CopierHangsDQN(min_steps_learn=256, replay_size=4000, batch_size=32, replay_ratio=4,
                          target_update_interval=50, eps_steps=2000)
    agent = DqnAgent(model_kwargs=dict(hidden_sizes=[32]))
    runner = AsyncRl(algo, agent, cartpole_sampler(AsyncSerialSampler), n_steps=20_000,
                     seed=0, progress_timeout=2.0)
    start = time.monotonic()
    with pytest.raises(AsyncRunError, match="progress_timeout=2s") as excinfo:
        train(runner, tmp_path)
    assert time.monotonic() - start < 60
    text = str(excinfo.value)
    for words in ("updates done of", "allowed by 19 batches appended", "update credit",
                  "21 batches sampled", "Optimizer waiting for data", "2 filled slot(s)"):
        assert words in text, text


def test_progress_timeout_is_checked():
    algo, agent = small_dqn()
    for bad in (0, -1, "5", True):
        with pytest.raises(ValueError, match="progress_timeout="):
            AsyncRl(algo, agent, cartpole_sampler(AsyncSerialSampler), n_steps=1000,
                    progress_timeout=bad)
    runner = AsyncRl(algo, agent, cartpole_sampler(AsyncSerialSampler), n_steps=1000,
                     progress_timeout=None)
    assert runner.progress_timeout is None


# ---- 5. preflight and layout errors --------------------------------------------------------------
def test_async_preflight_refuses_min_steps_learn_beyond_n_steps(tmp_path, leak_check):
    algo, agent = small_dqn(min_steps_learn=2000)
    runner = AsyncRl(algo, agent, cartpole_sampler(AsyncSerialSampler), n_steps=1600)
    start = time.monotonic()
    with pytest.raises(ValueError, match="min_steps_learn=2000 is not below the run's "
                                         "n_steps=1600"):
        train(runner, tmp_path)
    assert time.monotonic() - start < 5 and runner.sampler_process is None


def test_async_cpu_layout_error_speaks_of_cpus_and_names_cpu_per_run():
    with pytest.raises(ValueError) as excinfo:
        encode_affinity(n_cpu_core=2, n_gpu=0, async_sample=True)
    text = str(excinfo.value)
    assert "GPU" not in text and "for the optimizer" in text
    assert "cpu_per_run values that fit n_cpu_core=2: [2]" in text
    with pytest.raises(ValueError, match="n_cpu_core=1 is too few CPU cores for an async run"):
        encode_affinity(n_cpu_core=1, n_gpu=0, async_sample=True)


# ---- 6. resume ---------------------------------------------------------------------------------
def rlpyt_cli(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "rlpyt", *args], capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.timeout(400)
def test_async_resume_of_a_finished_run_and_below_its_checkpoint(tmp_path):
    from rlpyt.cli import main

    assert main(["train", "--algo", "dqn", "--runner", "async", "--n-steps", "768",
                 "--log-dir", str(tmp_path), "--algo.min_steps_learn", "192",
                 "--runner.log_interval_steps", "384"]) == 0
    (run_dir,) = glob.glob(str(tmp_path / "run_*"))
    first = read_progress(tmp_path)
    assert [int(r["CumSteps"]) for r in first] == [0, 384, 768]

    # A finished run: complete at once (it hung forever; the subprocess timeout bounds
    # it here, as wall time on a loaded machine would not), no process started.
    done = rlpyt_cli("train", "--resume", run_dir, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "already complete" in done.stdout
    assert "Asynchronous:" not in done.stdout  # Nothing was set up to train.
    assert read_progress(tmp_path) == first

    below = rlpyt_cli("train", "--resume", run_dir, "--n-steps", "384", timeout=240)
    assert below.returncode == 2
    (line,) = below.stderr.strip().splitlines()
    assert line.startswith("rlpyt train: error: n_steps=384 is below the 768 env steps")
    assert read_progress(tmp_path) == first

    # Training on: every counter goes on from where it stood.
    assert main(["train", "--resume", run_dir, "--n-steps", "1152"]) == 0
    rows = read_progress(tmp_path)
    assert [int(r["CumSteps"]) for r in rows] == [0, 384, 768, 1152]  # (0: evaluation)
    assert rows[:3] == first
    for key in ("CumUpdates", "OptimizerCalls", "ParameterVersion"):
        values = [int(float(r[key])) for r in rows[1:]]
        assert values[1] > values[0] > 0 and values[2] > values[1], (key, values)


class _Value:
    def __init__(self, value=0):
        self.value = value


class _FakeControl:
    """The counters and flags ``AsyncWatch`` reads (no processes)."""

    def __init__(self):
        from rlpyt.samplers.async_.control_block import ThrottleSpec

        self.throttle = ThrottleSpec(1, 32, 32, min_itr_learn=2)
        for name in ("sampled", "appended", "updates", "in_eval", "sampler_waiting",
                     "optimizer_waiting", "starving"):
            setattr(self, name, _Value())


def test_watch_fires_only_when_nothing_moves(monkeypatch):
    from rlpyt.runners import async_watch

    now = [1000.0]
    monkeypatch.setattr(async_watch.time, "monotonic", lambda: now[0])
    control = _FakeControl()
    watch = async_watch.AsyncWatch(control, 10.0, AsyncRunError)

    def run_for(seconds, **moving):
        end = now[0] + seconds
        while now[0] < end:
            now[0] += 0.2  # The optimizer's loop checks every FAULT_CHECK_S.
            for name, step in moving.items():
                getattr(control, name).value += step
            watch.check_progress(updates=control.updates.value, optimizer_calls=0)

    run_for(60, sampled=1)  # The sampler alone moving is progress.
    run_for(60, updates=1)  # So is the optimizer alone.
    control.in_eval.value = 1
    run_for(60)  # An evaluation of any length is progress.
    control.in_eval.value = 0
    run_for(9)
    now[0] += 30  # A long checkpoint in the optimizer: work, not a stall.
    run_for(9)
    with pytest.raises(AsyncRunError, match="progress_timeout=10s"):
        run_for(2)
    off = async_watch.AsyncWatch(control, None, AsyncRunError)
    for _ in range(1000):
        now[0] += 1
        off.check_progress(0, 0)  # None: never fires.


@pytest.mark.timeout(300)  # It hung forever before the sampler's exit was watched.
def test_sampler_stopped_from_outside_ends_the_run(tmp_path, leak_check):
    """A SIGTERM to the sampler process alone makes it exit with code 0 before its last
    batch: the optimizer must not wait for batches that never come."""
    import signal
    import threading

    algo, agent = small_dqn()
    runner = AsyncRl(algo, agent, cartpole_sampler(AsyncSerialSampler), n_steps=200_000)
    stopped_at: list[float] = []

    def stop_sampler_later():
        while runner.control is None or runner.control.appended.value < 20:
            time.sleep(0.05)
        os.kill(runner.sampler_process.pid, signal.SIGTERM)
        stopped_at.append(time.monotonic())

    threading.Thread(target=stop_sampler_later, daemon=True).start()
    with pytest.raises(AsyncRunError, match=r"exited \(code 0\) without sending its last"):
        train(runner, tmp_path)
    assert stopped_at and time.monotonic() - stopped_at[0] < 15


def test_async_impala_resumes_and_trains_on(tmp_path):
    """Impala's FIFO of batches is not saved: a resumed run's FIFO goes on empty, numbered
    from the sampler's batch count, and the learner skips the batches lost with the
    checkpoint (it stopped with "BatchFifo.batch: index=16 is not held")."""
    from rlpyt.cli import main

    assert main(["train", "--algo", "impala", "--runner", "async", "--n-steps", "2048",
                 "--log-dir", str(tmp_path), "--runner.log_interval_steps", "1024"]) == 0
    (run_dir,) = glob.glob(str(tmp_path / "run_*"))
    first = read_progress(tmp_path)
    assert main(["train", "--resume", run_dir, "--n-steps", "4096"]) == 0
    rows = read_progress(tmp_path)
    assert [int(r["CumSteps"]) for r in rows] == [0, 1024, 2048, 3072, 4096]
    assert rows[:3] == first
    updates = [int(float(r["CumUpdates"])) for r in rows[2:]]
    assert updates[2] > updates[1] > updates[0] > 0, updates
