"""Every CLI error is one line on stderr, ``rlpyt <command>: error: ...``, its cause first
(the failing process's exception type and message); the traceback goes to the run's
debug.log, and to stderr only with --debug."""

from __future__ import annotations

import glob
import os
import signal
import subprocess
import sys
import threading
import time

import gymnasium as gym
import pytest
from test_async_rl import _wait_for_grandchild, cartpole_sampler, small_dqn, train
from test_sync_rl import _cpu_ranks, _no_children_left

from rlpyt.agents.pg.categorical import CategoricalPgAgent
from rlpyt.algos.pg.a2c import A2C
from rlpyt.cli import _one_line, main
from rlpyt.envs.gym import GymEnvWrapper
from rlpyt.runners.async_rl import AsyncRl, AsyncRunError
from rlpyt.runners.sync_rl import SyncRl, SyncRlError
from rlpyt.samplers.async_.cpu_sampler import AsyncCpuSampler
from rlpyt.samplers.serial.sampler import SerialSampler
from rlpyt.utils.logging.context import logger_context

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def one_error_line(capsys) -> str:
    captured = capsys.readouterr()
    assert captured.out == "", captured.out
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rlpyt train: error: "), captured.err
    return lines[0]


@pytest.mark.parametrize("args, expected", [
    (["--cuda-idx", "0"], "--cuda-idx 0: cuda_idx=0, but this torch has no usable CUDA"),
    (["--algo.learning_rate", "abc"], "--algo.learning_rate 'abc': not a number"),
    (["--runner", "async", "--algo", "ppo"], "--algo ppo (PPO) cannot run with --runner async"),
    (["--nproc", "2", "--runner", "async", "--algo", "dqn"], "does not combine with --nproc"),
    (["--algo.learnin_rate", "1e-3"], "did you mean learning_rate?"),
    (["--nproc", "0"], "--nproc 0: the number of ranks must be >= 1"),
])
def test_config_errors_are_one_line_on_stderr(args, expected, tmp_path, capsys):
    import torch

    if args[0] == "--cuda-idx" and torch.cuda.is_available():
        pytest.skip("this torch has CUDA")
    assert main(["train", "--log-dir", str(tmp_path / "runs"), *args]) == 2
    assert expected in one_error_line(capsys)
    assert not os.path.exists(tmp_path / "runs")  # nothing left behind


@pytest.mark.parametrize("args, expected", [
    (["--agent.model_kwargs.hidden_sizes", "[a,b]"],
     "--agent.model_kwargs.hidden_sizes '[a,b]': not a valid list; write it as a Python "
     "literal whose items are numbers, quoted strings, True, False or None, e.g. [64, 64]"),
    (["--agent.model_kwargs.hidden_sizes", "abc"],
     "--agent.model_kwargs.hidden_sizes 'abc': not layer widths; give a list of positive "
     "ints (e.g. [64, 64]), one positive int, or None"),
    (["--agent.model_kwargs.hidden_sizes=[64,-1]"],
     "--agent.model_kwargs.hidden_sizes '[64,-1]': not layer widths"),
    (["--log-dir", "{file}"], "--log-dir '{file}': a file, not a directory; give a "
                              "directory (made if missing) to hold the run folders"),
    (["--log-dir", "{file}/runs"], "--log-dir '{file}/runs': '{file}' is a file, not a "
                                   "directory"),
    (["--resume", "{file}"], "--resume '{file}': a file, not a run directory; give the "
                             "run_<k> directory of an earlier run (it holds params.json)"),
])
def test_bad_paths_and_values_fail_before_any_run_directory(args, expected, tmp_path, capsys,
                                                            monkeypatch):
    """Values that used to get past the early checks (a list that does not parse, seen
    as a string and garbled by the model; a file given as --log-dir or --resume, an
    OSError from making the run directory): one line naming the flag, the value as typed
    and what is valid, exit code 2, nothing written, every time."""
    monkeypatch.chdir(tmp_path)
    file = tmp_path / "afile"
    file.write_text("not a directory")
    args = [a.format(file=file) for a in args]
    if "--log-dir" not in args and "--resume" not in args:
        args += ["--log-dir", str(tmp_path / "runs")]
    for _ in range(2):  # a second try finds nothing left by the first
        assert main(["train", "--n-steps", "100", *args]) == 2
        assert expected.format(file=file) in one_error_line(capsys)
        assert sorted(os.listdir(tmp_path)) == ["afile"]
    assert file.read_text() == "not a directory"


@pytest.mark.parametrize("algo, env, space, fits", [
    ("dqn", "Pendulum-v1", "continuous (FloatBox(low=-2.0, high=2.0, shape=(1,)",
     "a2c, appo, ddpg, impala, ppo, sac, td3"),
    ("sac", "CartPole-v1", "discrete (IntBox(low=0, high=2",
     "a2c, appo, cat_dqn, dqn, impala, ppo, r2d1"),
])
def test_an_algorithm_that_does_not_fit_the_action_space(algo, env, space, fits, tmp_path,
                                                          capsys):
    assert main(["train", "--algo", algo, "--env", env, "--log-dir", str(tmp_path)]) == 2
    line = one_error_line(capsys)
    assert f"--algo {algo} ({algo.upper()}) does not fit {env}: its action space is " \
           f"{space}" in line, line
    assert line.endswith(f"actions: {fits}"), line


def test_cli_syncrl_divergence_is_one_line_and_the_traceback_is_in_the_log(tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT)
    proc = subprocess.run(
        [sys.executable, "-m", "rlpyt", "train", "--algo", "a2c", "--nproc", "2",
         "--algo.learning_rate", "1e6", "--n-steps", "4000", "--log-dir", str(tmp_path)],
        env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("rlpyt train: error: DivergenceError: A2C: paramNorm jumped to "
                               ), lines[0]
    assert "(in SyncRl rank " in lines[0] and "^^^" not in lines[0] and len(lines[0]) < 600
    log = open(tmp_path / "run_0" / "debug.log").read()
    assert "The run failed:\nTraceback (most recent call last):" in log
    assert "SyncRlError: SyncRl rank" in log


class RaisingCartPole(GymEnvWrapper):
    """CartPole that raises at its 30th step on SyncRl rank 1 (the rank's seed differs)."""

    def __init__(self):
        super().__init__(gym.make("CartPole-v1"))
        self.n = 0

    def step(self, action):
        self.n += 1
        import torch.distributed as dist

        if self.n == 30 and dist.is_initialized() and dist.get_rank() == 1:
            raise RuntimeError("env broke on rank one")
        return super().step(action)


def test_syncrl_env_raise_reads_cause_first(tmp_path):
    sampler = SerialSampler(EnvCls=RaisingCartPole, env_kwargs={}, batch_T=8, batch_B=2,
                            max_decorrelation_steps=0)
    runner = SyncRl(A2C(), CategoricalPgAgent(), sampler, n_steps=100_000, seed=0,
                    affinity=_cpu_ranks(), log_interval_steps=1e9)
    with logger_context(str(tmp_path), 0, "env", override_prefix=True):
        with pytest.raises(SyncRlError) as info:
            runner.train()
    line = _one_line(info.value)
    assert line.startswith("RuntimeError: env broke on rank one (in SyncRl rank 1"), line
    assert "Traceback" not in line and "^^^" not in line
    assert _no_children_left()


def test_async_worker_death_reads_cause_first(tmp_path, leak_check):
    algo, agent = small_dqn()
    runner = AsyncRl(algo, agent, cartpole_sampler(AsyncCpuSampler), n_steps=200_000,
                     affinity=dict(workers_cpus=[0, 0]))

    def kill_a_worker():
        while runner.sampler_process is None or runner.control is None or \
                runner.control.appended.value < 40:
            time.sleep(0.05)
        os.kill(_wait_for_grandchild(runner.sampler_process.pid), signal.SIGKILL)

    threading.Thread(target=kill_a_worker, daemon=True).start()
    with pytest.raises(AsyncRunError) as info:
        train(runner, tmp_path)
    line = _one_line(info.value)
    assert line.startswith("WorkerError: sampler worker "), line
    assert "killed by signal SIGKILL" in line and "(in the sampler" in line, line
    assert "Traceback" not in line and len(line) < 400, line
    assert glob.glob(str(tmp_path / "**" / "debug.log"), recursive=True)
