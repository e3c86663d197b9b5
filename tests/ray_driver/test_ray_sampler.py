"""RaySampler on a local multi-node Ray cluster (head + 2 nodes, 1 CPU each).

One cluster serves the whole module (starting one costs tens of seconds on a loaded
2-core machine).  The module runs in its own pytest process (``tests/test_ray_driver.py``):
Ray's driver runs gRPC threads, which a later ``fork`` in the same process can crash.  The tests:
same seed, same numbers (also the same as ``CpuSampler`` with as many workers);
batches equal ``SerialSampler``'s under a deterministic policy; PPO learns CartPole
with 3 actors; an actor killed (mid-batch) or its node removed is replaced and the
run goes on; an env that raises or hangs stops the run with its traceback or stack;
nothing is left running; a killed CLI run on Ray resumes from its checkpoint.  The
node-removal tests run last: they shrink the cluster.
"""

from __future__ import annotations

import contextlib
import csv
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import psutil
import pytest
import torch

ray = pytest.importorskip("ray")

from helpers import make_learning_only  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402
from test_parallel_samplers import (  # noqa: E402
    ArgmaxAgent,
    ArgmaxRnnAgent,
    assert_same_batches,
    collect,
)
from test_sampler_faults import FaultyEnv, HangingEnv  # noqa: E402

from rlpyt.agents.pg.categorical import CategoricalPgAgent  # noqa: E402
from rlpyt.algos.pg.ppo import PPO  # noqa: E402
from rlpyt.envs.base import Env, EnvStep  # noqa: E402
from rlpyt.envs.gym import make  # noqa: E402
from rlpyt.runners.minibatch_rl import MinibatchRlEval  # noqa: E402
from rlpyt.samplers.parallel.cpu.collectors import (  # noqa: E402
    CpuResetCollector,
    CpuWaitResetCollector,
)
from rlpyt.samplers.parallel.cpu.sampler import CpuSampler  # noqa: E402
from rlpyt.samplers.ray_.sampler import ActorError, RaySampler  # noqa: E402
from rlpyt.samplers.serial.sampler import SerialSampler  # noqa: E402
from rlpyt.spaces.float_box import FloatBox  # noqa: E402
from rlpyt.spaces.int_box import IntBox  # noqa: E402
from rlpyt.utils.logging.context import logger_context  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TIME_COLUMNS = ("Time", "PerSecond")


def _start_cluster(attempts: int = 3) -> Cluster:
    """Head + 2 nodes of 1 CPU each.  Ray gives a starting node a fixed 30 s to register,
    which a heavily loaded 2-core machine can miss: then start over."""
    for attempt in range(attempts):
        c = Cluster()
        try:
            c.add_node(num_cpus=1, include_dashboard=False)
            for _ in range(2):
                c.add_node(num_cpus=1)
            c.wait_for_nodes()
            return c
        except Exception as e:  # noqa: BLE001 - Ray raises a bare Exception here
            c.shutdown()
            if attempt == attempts - 1 or "timed out during startup" not in str(e):
                raise
    raise AssertionError("unreachable")


@pytest.fixture(scope="module")
def cluster():
    """The module's cluster, this process connected as the driver.  Actor processes
    import this module's envs (and the test modules it imports), so both test
    directories are on their path."""
    saved = os.environ.get("PYTHONPATH")
    tests = os.path.join(ROOT, "tests")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, tests, HERE, saved) if p)
    c = None
    try:
        c = _start_cluster()
        ray.init(address=c.address, log_to_driver=False)
        yield c
    finally:
        if ray.is_initialized():
            ray.shutdown()
        if c is not None:
            c.shutdown()
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved


def actor_processes() -> list:
    """Processes of this machine that run a Ray sampler actor."""
    found = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            if any("EnvActor" in part for part in p.info["cmdline"] or ()):
                found.append(p.pid)
        except (psutil.Error, TypeError):
            continue
    return found


def assert_no_actor_left(pids, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = [pid for pid in pids if psutil.pid_exists(pid)
                 and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE]
        if not alive:
            return
        time.sleep(0.2)
    raise AssertionError(f"actor processes still running: {alive}")


class CountingEnv(Env):
    """Observation: steps since the last reset; episodes of 1000 steps; each step
    sleeps ``sleep_s`` (so a batch takes long enough to be interrupted)."""

    def __init__(self, sleep_s=0.0):
        self.sleep_s = sleep_s
        self._action_space = IntBox(0, 2)
        self._observation_space = FloatBox(0, 1e6, shape=(1,))
        self.t = 0

    def seed(self, seed):
        self._action_space.seed(seed)

    def reset(self):
        self.t = 0
        return np.zeros(1, dtype=np.float32)

    def step(self, action):
        time.sleep(self.sleep_s)
        self.t += 1
        return EnvStep(np.array([self.t], dtype=np.float32), 1.0, self.t >= 1000, None)


def ray_sampler(**kwargs):
    defaults = dict(EnvCls=make, env_kwargs=dict(id="CartPole-v1"), batch_T=8, batch_B=4,
                    max_decorrelation_steps=5, n_actors=2, restart_timeout=60)
    return RaySampler(**{**defaults, **kwargs})


def started(sampler, seed=1):
    sampler.initialize(CategoricalPgAgent(), seed=seed)
    return sampler


# ---- reproducibility -------------------------------------------------------------------------
def _short_ppo_run(SamplerCls, log_dir, **sampler_kwargs):
    sampler = SamplerCls(EnvCls=make, env_kwargs=dict(id="CartPole-v1"), batch_T=16,
                         batch_B=4, max_decorrelation_steps=20, eval_n_envs=3,
                         eval_max_trajectories=5, **sampler_kwargs)
    runner = MinibatchRlEval(PPO(epochs=2, minibatches=2), CategoricalPgAgent(), sampler,
                             n_steps=640, seed=5, log_interval_steps=128,
                             affinity=dict(n_workers=2, set_affinity=False),
                             checkpoint_interval_steps=0)
    with logger_context(str(log_dir), 0, "ray", override_prefix=True):
        runner.train()
    with open(os.path.join(log_dir, "run_0", "progress.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    return [{k: v for k, v in r.items() if not any(t in k for t in TIME_COLUMNS)}
            for r in rows]


def test_same_seed_same_progress_as_cpu_sampler(cluster, tmp_path):
    """A PPO run on 2 actors writes the progress.csv of the same run on ``CpuSampler``
    with 2 workers, cell for cell: so a Ray run repeats itself with the same seed as
    ``CpuSampler`` does (``tests/test_sampler_determinism.py``)."""
    a = _short_ppo_run(RaySampler, tmp_path / "a", n_actors=2)
    assert len(a) == 6
    assert all(r["ActorRestarts"] == "0" for r in a)
    assert int(a[-1]["TrajsInEval"]) == 5
    # Actor w seeds its RNGs as CpuSampler's worker w: the same numbers as 2 workers.
    cpu = _short_ppo_run(CpuSampler, tmp_path / "cpu")
    assert [{k: v for k, v in r.items() if k != "ActorRestarts"} for r in a] == cpu


@pytest.mark.parametrize("AgentCls,CollectorCls,n_actors", [
    (ArgmaxAgent, CpuResetCollector, 1),
    (ArgmaxRnnAgent, CpuWaitResetCollector, 2),
])
def test_deterministic_policy_batches_equal_serial_sampler(cluster, AgentCls, CollectorCls,
                                                           n_actors):
    recurrent = AgentCls is ArgmaxRnnAgent
    expected = collect(SerialSampler, AgentCls, CollectorCls, recurrent)
    got = collect(RaySampler, AgentCls, CollectorCls, recurrent, n_actors=n_actors)
    assert_same_batches(expected, got)


# ---- faults -----------------------------------------------------------------------------------
def test_actor_killed_mid_batch_is_replaced_and_its_batch_collected_whole(cluster):
    T = 8
    sampler = started(ray_sampler(EnvCls=CountingEnv, env_kwargs=dict(sleep_s=0.1),
                                  batch_T=T, max_decorrelation_steps=0))
    try:
        samples, _ = sampler.obtain_samples(0)
        victim = sampler.group.specs[1]
        old_pid = victim.pid
        killer = threading.Timer(0.3, os.kill, (old_pid, signal.SIGKILL))
        killer.start()  # Lands while the actors step their 2nd batch (0.8 s).
        samples, _ = sampler.obtain_samples(1)
        killer.join()
        obs = samples.env.observation[..., 0].numpy()
        lo, hi = victim.env_slice
        # The replacement's envs start from a reset: one whole fresh batch ...
        assert (obs[:, lo:hi] == np.arange(T)[:, None]).all()
        # ... while the survivor's envs go on from the first batch.
        assert (obs[:, :lo] == np.arange(T, 2 * T)[:, None]).all()
        assert sampler.diagnostics()["ActorRestarts"] == 1
        assert victim.pid != old_pid and victim.restarts == 1
        sampler.obtain_samples(2)
        pids = [s.pid for s in sampler.group.specs]
    finally:
        sampler.shutdown()
    assert_no_actor_left(pids)


def test_env_raising_stops_the_run_with_its_traceback(cluster):
    from test_sampler_faults import SEED

    from rlpyt.utils.seed import env_seeds

    seeds = env_seeds(SEED, 4 + 1)
    sampler = started(ray_sampler(EnvCls=FaultyEnv,
                                  env_kwargs=dict(fail_seed=seeds[3], fail_step=6),
                                  max_decorrelation_steps=0, batch_T=4), seed=SEED)
    pids = [s.pid for s in sampler.group.specs]
    with pytest.raises(ActorError) as excinfo:
        for itr in range(3):
            sampler.obtain_samples(itr)
    message = str(excinfo.value)
    assert "actor 1 (env ranks 2-3)" in message
    # The env's traceback, down to the line that raised.
    assert "test_sampler_faults.py" in message and 'raise RuntimeError("injected fault in step")' \
        in message
    assert sampler.group is not None and sampler.group.n_restarts == 0  # No retry.
    assert_no_actor_left(pids)


def test_hung_env_hits_step_timeout_with_its_stack(cluster):
    from test_sampler_faults import SEED

    from rlpyt.utils.seed import env_seeds

    seeds = env_seeds(SEED, 4 + 1)
    sampler = started(ray_sampler(EnvCls=HangingEnv,
                                  env_kwargs=dict(fail_seed=seeds[0], fail_step=3),
                                  max_decorrelation_steps=0, batch_T=4, step_timeout=2.0),
                      seed=SEED)
    pids = [s.pid for s in sampler.group.specs]
    start = time.monotonic()
    with pytest.raises(ActorError) as excinfo:
        sampler.obtain_samples(0)
    assert time.monotonic() - start < 2.0 + 10.0
    message = str(excinfo.value)
    assert "actor 0 (env ranks 0-1)" in message and "step_timeout=2" in message
    assert "hang_forever" in message  # The actor's stack.
    assert_no_actor_left(pids)


def test_ray_connection_closed_when_the_sampler_opened_it(cluster):
    ray.shutdown()
    try:
        sampler = started(ray_sampler(ray_address=cluster.address))
        sampler.obtain_samples(0)
        pids = [s.pid for s in sampler.group.specs]
        sampler.shutdown()
        assert not ray.is_initialized()
        assert_no_actor_left(pids)
    finally:
        if not ray.is_initialized():
            ray.init(address=cluster.address, log_to_driver=False)


def test_bad_keywords_are_named():
    with pytest.raises(ValueError, match="n_actors=5 exceeds batch_B=4"):
        ray_sampler(n_actors=5)
    with pytest.raises(ValueError, match="max_actor_restarts=-1"):
        ray_sampler(max_actor_restarts=-1)
    with pytest.raises(TypeError, match="actor_resources"):
        ray_sampler(actor_resources=2)
    with pytest.raises(ValueError, match="step_timeout=0"):
        ray_sampler(step_timeout=0)


def test_actors_that_cannot_be_placed_fail_with_the_cluster_named(cluster):
    sampler = ray_sampler(actor_resources=dict(num_cpus=1, absent_gadget=1), restart_timeout=3)
    with pytest.raises(ActorError, match="not started within restart_timeout=3"):
        started(sampler)


def test_cli_ray_flags_need_the_ray_sampler(tmp_path, capsys):
    from rlpyt.cli import main

    assert main(["train", "--actors", "2", "--log-dir", str(tmp_path)]) == 2
    assert "--actors: only for the Ray sampler; add --sampler-type ray" in capsys.readouterr().err


# ---- resume, through the command line -------------------------------------------------------
def _cli(args, ray_address=None, **popen):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    if ray_address is not None:
        env["RAY_ADDRESS"] = ray_address
    return subprocess.Popen([sys.executable, "-m", "rlpyt", "train", *args], env=env, **popen)


def _wait_for_checkpoint(proc, run_dir, after: int, timeout: float) -> int:
    """The iteration of the run's first checkpoint past ``after`` (the run must live)."""
    from rlpyt.runners.checkpoint_files import list_checkpoints

    deadline = time.monotonic() + timeout
    while True:
        found = list_checkpoints(str(run_dir))
        if found and found[-1][0] > after:
            return found[-1][0]
        assert proc.poll() is None, proc.stderr.read().decode()[-3000:]
        assert time.monotonic() < deadline, f"no checkpoint after itr {after} in {timeout} s"
        time.sleep(0.05)


@contextlib.contextmanager
def _sigkilled_after(proc):
    """Kill the CLI run ``proc`` with SIGKILL once the block is done (as a crash would);
    whatever happens in the block, the process is gone and its stderr closed after."""
    try:
        yield
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        proc.kill()
        proc.stderr.close()


def _resume(run_dir, address):
    """``rlpyt train --resume`` of a killed run: ``(stdout, progress rows, the
    iteration of the checkpoint it resumed from)``."""
    from rlpyt.runners.checkpoint_files import list_checkpoints

    killed_at = list_checkpoints(str(run_dir))[-1][0]
    done = _cli(["--resume", str(run_dir)], address, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, text=True)
    out, err = done.communicate(timeout=300)
    assert done.returncode == 0, err[-3000:]
    with open(run_dir / "progress.csv", newline="") as f:
        return out, list(csv.DictReader(f)), killed_at


def test_killed_cli_run_on_ray_resumes_from_its_checkpoint(cluster, tmp_path):

    run_dir = tmp_path / "run_0"
    # No --ray-address: Ray's default joins the cluster RAY_ADDRESS names (a sampler
    # that asked that cluster for num_cpus failed here).
    args = ["--algo", "ppo", "--n-steps", "3072", "--sampler-type", "ray", "--actors", "2",
            "--log-dir", str(tmp_path),
            "--runner.log_interval_steps", "512", "--runner.checkpoint_interval_steps", "256",
            "--algo.epochs", "2", "--sampler.batch_T", "16", "--sampler.batch_B", "4"]
    proc = _cli(args, cluster.address, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    with _sigkilled_after(proc):
        _wait_for_checkpoint(proc, run_dir, -1, timeout=120)
    out, rows, killed_at = _resume(run_dir, cluster.address)
    assert f"after iteration {killed_at}" in out and "envs restart from new seeds" in out
    # Rows continue without gaps or duplicates, to the end of the run.
    assert [int(r["CumSteps"]) for r in rows] == [0] + list(range(512, 3072 + 1, 512))
    assert all(r["ActorRestarts"] == "0" for r in rows[1:])
    assert_no_actor_left(actor_processes())


# ---- AsyncRaySampler -------------------------------------------------------------------------
def actor_descendants() -> list:
    """Ray sampler actors of this test's cluster (its processes descend from this one;
    other Ray instances on the machine are left alone)."""
    found = []
    for p in psutil.Process().children(recursive=True):
        try:
            if any("EnvActor" in part for part in p.cmdline()):
                found.append(p.pid)
        except psutil.Error:
            continue
    return found


def test_stream_sends_the_next_slice_ahead_and_a_killed_actor_s_slice_comes_whole(cluster):
    """RayStreamSampler (AsyncRaySampler's sampler): with credit, each actor is sent
    batch itr + 1 as soon as its slice of itr arrived, tagged with the newest parameter
    version; an actor killed mid-slice is replaced and its slice collected whole by the
    replacement, the survivor's kept; ActorRestarts goes on from a checkpoint's count."""
    from rlpyt.samplers.ray_.stream import RayStreamSampler

    T = 8
    sampler = RayStreamSampler(EnvCls=CountingEnv, env_kwargs=dict(sleep_s=0.1), batch_T=T,
                               batch_B=4, max_decorrelation_steps=0, n_actors=2,
                               restart_timeout=60)
    agent = CategoricalPgAgent()
    sampler.initialize(agent, seed=1)
    try:
        agent.async_cpu(share_memory=False)  # A parameter board, as in an async run.
        agent.recv_shared_memory()
        assert sampler.start_batch(0) == 0
        agent.param_board.publish(agent.model)  # The optimizer publishes version 1.
        sampler.finish_batch(0, may_prefetch=lambda: True, refresh=agent.recv_shared_memory)
        assert sorted((i, c.itr, c.version) for i, c in sampler._calls.items()) == [
            (0, 1, 1), (1, 1, 1)]
        victim = sampler.group.specs[1]
        old_pid = victim.pid
        os.kill(old_pid, signal.SIGKILL)  # Batch 1's slices are running (0.8 s each).
        assert sampler.start_batch(1) == 1
        sampler.finish_batch(1)  # No credit: nothing is sent ahead.
        assert sampler._calls == {}
        obs = sampler.samples_np.env.observation[..., 0]
        lo, hi = victim.env_slice
        assert (obs[:, lo:hi] == np.arange(T)[:, None]).all()  # Fresh envs, whole slice.
        assert (obs[:, :lo] == np.arange(T, 2 * T)[:, None]).all()  # Going on.
        assert victim.pid != old_pid and sampler.diagnostics()["ActorRestarts"] == 1
        sampler.load_diagnostics(dict(ActorRestarts=2))  # A resumed run's earlier count.
        assert sampler.diagnostics()["ActorRestarts"] == 3
        pids = [s.pid for s in sampler.group.specs]
    finally:
        sampler.shutdown()
    assert_no_actor_left(pids)


def _run_async(kind, address, log_dir, timeout=300):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [ROOT, os.path.join(ROOT, "tests"), HERE, os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, os.path.join(HERE, "async_ray_runs.py"), kind,
                           address, str(log_dir)], env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_async_env_raising_stops_the_run_with_its_traceback(cluster, tmp_path):
    done = _run_async("faulty", cluster.address, tmp_path)
    assert done.returncode != 0
    err = done.stderr
    assert "AsyncRunError: the sampler process failed" in err, err[-3000:]
    assert "actor 1 (env ranks 2-3)" in err
    assert 'raise RuntimeError("injected fault in step")' in err
    assert_no_actor_left(actor_descendants())


def test_async_cli_run_on_ray_survives_a_killed_actor_and_resumes(cluster, tmp_path):
    """``rlpyt train --algo dqn --runner async --sampler-type ray``: an actor SIGKILLed mid-run is
    replaced and the run goes on (ActorRestarts 1); the run, killed after a later
    checkpoint, resumes from it with its rows continuing and the restart still
    counted; nothing is left running."""

    run_dir = tmp_path / "run_0"
    # 32 batches of 64 steps; learning (8 updates per batch) from batch 4 on, so the
    # replay ratio holds the sampler to the optimizer's pace and it still needs its
    # actors when one is killed (free-running, it could finish before the kill).
    n_steps, row = 2048, 512
    args = ["--algo", "dqn", "--runner", "async", "--n-steps", str(n_steps),
            "--sampler-type", "ray", "--actors", "2", "--ray-address", cluster.address,
            "--log-dir", str(tmp_path), "--runner.log_interval_steps", str(row),
            "--runner.checkpoint_interval_steps", str(row), "--sampler.batch_T", "16",
            "--sampler.batch_B", "4", "--sampler.eval_n_envs", "2",
            "--sampler.eval_max_trajectories", "2", "--algo.replay_size", "4096",
            "--algo.replay_ratio", "8", "--algo.min_steps_learn", "256"]
    proc = _cli(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    with _sigkilled_after(proc):
        first = _wait_for_checkpoint(proc, run_dir, -1, timeout=180)
        victims = actor_descendants()
        assert len(victims) == 2, victims
        os.kill(victims[0], signal.SIGKILL)
        _wait_for_checkpoint(proc, run_dir, first + 1, timeout=180)  # Two rows on: the restart is in the checkpoint.
    out, rows, killed_at = _resume(run_dir, cluster.address)
    assert "Resume: the sampler goes on from batch" in out
    assert [int(r["CumSteps"]) for r in rows] == [0] + list(range(row, n_steps + 1, row))
    restarts = [int(r["ActorRestarts"]) for r in rows]
    resumed = [int(r["CumSteps"]) > (killed_at + 1) * 64 for r in rows]
    assert restarts[0] == 0 and restarts[-1] >= 1, restarts
    assert all(n >= 1 for n, after in zip(restarts, resumed) if after), restarts
    assert "PolicyLagAverage" in rows[-1]
    assert_no_actor_left(actor_descendants())


# ---- learning ---------------------------------------------------------------------------------
@pytest.mark.learning
@make_learning_only("PPO's CartPole test on RaySampler, whose batches equal SerialSampler's "
                    "(test_deterministic_policy_batches_equal_serial_sampler)")
def test_ppo_learns_cartpole_with_3_actors(cluster, tmp_path):
    """The local learning tests' rule and budget (``helpers.EndOfRun``): mean eval return
    >= 475 within 100k steps, and the mean of the last two evaluations >= 427.5 (seed 0,
    or seed 1 if seed 0 misses)."""
    from helpers import EarlyStopRunner, EndOfRun

    from rlpyt.cli.presets import PRESETS

    preset = PRESETS["ppo"]
    solved, verdict = EndOfRun(475), dict(passed=False)
    for seed in (0, 1):
        sampler = RaySampler(EnvCls=make, env_kwargs=dict(id="CartPole-v1"), n_actors=3,
                             **{**preset.sampler_kwargs, "eval_n_envs": 4,
                                "eval_max_trajectories": 8})
        runner = EarlyStopRunner(algo=PPO(**preset.algo_kwargs), agent=CategoricalPgAgent(),
                                 sampler=sampler, n_steps=100_000, seed=seed,
                                 log_interval_steps=10_000, end_of_run=solved)
        with logger_context(str(tmp_path / f"s{seed}"), seed, "ppo", override_prefix=True):
            summary = runner.train()
        verdict = solved.judge(summary["eval_history"])
        print(f"PPO RaySampler(3 actors) seed {seed}: {verdict}; "
              f"history {summary['eval_history']}")
        if verdict["passed"]:
            break
    assert verdict["passed"], verdict


def _async_runs_hold(name: str, threshold: float, needed: int, seeds, cluster, tmp_path,
                     timeout: float) -> None:
    """Run ``ray_driver/async_ray_runs.py``'s ``name`` run per seed until ``needed`` seeds
    reach ``threshold`` and hold it (``helpers.EndOfRun``); assert that they did."""
    import json

    from helpers import EndOfRun

    passes, lines = 0, []
    for seed in seeds:
        done = _run_async(f"{name}-{seed}", cluster.address, tmp_path / str(seed),
                          timeout=timeout)
        assert done.returncode == 0, done.stderr[-3000:]
        line = [x for x in done.stdout.splitlines() if x.startswith("EVAL_HISTORY ")][-1]
        history = json.loads(line.split(" ", 1)[1])
        lines.append(EndOfRun(threshold).describe(f"{name} AsyncRaySampler", seed, history))
        print(lines[-1], flush=True)
        passes += EndOfRun(threshold).judge(history)["passed"]
        if passes >= needed:
            break
    assert passes >= needed, "\n".join(lines)


@pytest.mark.learning
@pytest.mark.timeout(1800)  # Up to 3 seeds under make learning.
@make_learning_only("test_async_learning.py's Impala test on AsyncRaySampler (the stream's "
                    "slices and versions: test_stream_sends_the_next_slice_ahead...)")
def test_impala_learns_cartpole_with_async_ray_sampler(cluster, tmp_path):
    """``tests/test_async_learning.py``'s Impala test on 2 Ray actors: a mean eval return
    of 475 within 300k env steps, held (``helpers.EndOfRun``: the mean of the next two
    evaluations at least 427.5), in 2 of 3 seeds (``make learning`` only)."""
    from helpers import seed_plan

    needed, seeds = seed_plan(full=(2, 3), quick=(1, 2))
    _async_runs_hold("impala", 475, needed, seeds, cluster, tmp_path, timeout=900)
    assert_no_actor_left(actor_descendants())


@pytest.mark.learning
@pytest.mark.timeout(3600)  # Up to 2 seeds.
@pytest.mark.skipif(os.environ.get("RLPYT_FULL_SEEDS") != "1",
                    reason="minutes of CPU: runs under make learning (RLPYT_FULL_SEEDS=1) only")
def test_r2d2_learns_masked_cartpole_with_async_ray_sampler(cluster, tmp_path):
    """``tests/test_async_learning.py``'s R2D2 test on 2 Ray actors: a mean eval return of
    400 on velocity-masked CartPole within 300k env steps, held (``helpers.EndOfRun``:
    the mean of the next two evaluations at least 360), in 1 of 2 seeds (``make
    learning`` only)."""
    _async_runs_hold("r2d2", 400, 1, range(2), cluster, tmp_path, timeout=1800)
    assert_no_actor_left(actor_descendants())


# ---- node removal (last: these shrink the cluster) --------------------------------------------
def _actor_on_worker_node(sampler, cluster):
    worker_ids = {n.node_id: n for n in cluster.worker_nodes}
    for spec in sampler.group.specs:
        if spec.node_id in worker_ids:
            return spec, worker_ids[spec.node_id]
    raise AssertionError("no actor on a removable node (SPREAD placement expected)")


def test_removed_node_actor_is_restarted_elsewhere(cluster):
    """One CPU left free: the actor of a removed node is restarted on it.  The node is
    added back afterwards."""
    n_actors = int(ray.cluster_resources()["CPU"]) - 1
    sampler = started(ray_sampler(n_actors=n_actors, batch_B=2 * n_actors))
    try:
        sampler.obtain_samples(0)
        spec, node = _actor_on_worker_node(sampler, cluster)
        old_node = spec.node_id
        cluster.remove_node(node)
        for itr in range(1, 3):
            samples, _ = sampler.obtain_samples(itr)
        assert spec.node_id != old_node and spec.restarts == 1
        assert sampler.diagnostics()["ActorRestarts"] == 1
        assert torch.isfinite(samples.env.observation).all()
    finally:
        sampler.shutdown()
        cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()


def test_no_room_for_a_replacement_fails_naming_actor_and_node(cluster):
    """One actor per CPU of the cluster, so none is left free: the replacement of an
    actor on a removed node cannot be placed, and the run stops after restart_timeout
    naming the actor and its node.  (Filling every CPU keeps the test independent of
    how many nodes the tests before it left; the node is added back afterwards.)"""
    n_cpus = int(ray.cluster_resources()["CPU"])
    sampler = started(ray_sampler(n_actors=n_cpus, batch_B=2 * n_cpus))
    try:
        sampler.obtain_samples(0)
        sampler.group.restart_timeout = 4  # Short for the replacement (not for the start).
        spec, node = _actor_on_worker_node(sampler, cluster)
        ip, node_id = spec.node_ip, spec.node_id
        cluster.remove_node(node)
        with pytest.raises(ActorError) as excinfo:
            sampler.obtain_samples(1)
        message = str(excinfo.value)
        assert f"actor {spec.index}" in message and ip in message
        assert node_id[:12] in message and "restart_timeout=4" in message
    finally:
        sampler.shutdown()
        cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
