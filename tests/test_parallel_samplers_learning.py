"""Parallel samplers in real training: PPO learns CartPole with CpuSampler and GpuSampler
(the serial learning test's threshold and budget), and A2C with a recurrent Atari agent
runs on Pong with GpuWaitResetCollector and with the alternating samplers."""

from __future__ import annotations

import math

import pytest
from helpers import EarlyStopRunner, EndOfRun, make_learning_only

from rlpyt.agents.pg.atari import AlternatingAtariLstmAgent, AtariLstmAgent
from rlpyt.agents.pg.categorical import CategoricalPgAgent
from rlpyt.algos.pg.a2c import A2C
from rlpyt.algos.pg.ppo import PPO
from rlpyt.cli.presets import PRESETS
from rlpyt.envs.atari.atari_env import AtariEnv, AtariTrajInfo
from rlpyt.envs.gym import make
from rlpyt.runners.minibatch_rl import MinibatchRl
from rlpyt.samplers.parallel.cpu.sampler import CpuSampler
from rlpyt.samplers.parallel.gpu.alternating_sampler import AlternatingSampler
from rlpyt.samplers.parallel.gpu.collectors import GpuWaitResetCollector
from rlpyt.samplers.parallel.gpu.sampler import GpuSampler
from rlpyt.utils.logging.context import logger_context

TWO_WORKERS = dict(n_workers=2, worker_torch_threads=1)


SOLVED = EndOfRun(475)


def _ppo_cartpole(SamplerCls, seed, tmp_path) -> bool:
    preset = PRESETS["ppo"]
    sampler = SamplerCls(EnvCls=make, env_kwargs=dict(id="CartPole-v1"),
                         **{**preset.sampler_kwargs, "eval_n_envs": 4,
                            "eval_max_trajectories": 8})
    runner = EarlyStopRunner(algo=PPO(**preset.algo_kwargs), agent=CategoricalPgAgent(),
                             sampler=sampler, n_steps=100_000, seed=seed,
                             affinity=TWO_WORKERS, log_interval_steps=10_000, end_of_run=SOLVED)
    with logger_context(str(tmp_path / f"{SamplerCls.__name__}_{seed}"), seed, "ppo",
                        override_prefix=True):
        summary = runner.train()
    print(SOLVED.describe(f"PPO {SamplerCls.__name__}", seed, summary["eval_history"]))
    return SOLVED.judge(summary["eval_history"])["passed"]


@pytest.mark.learning
@make_learning_only("PPO's CartPole test on 2 parallel workers (test_pg_learning.py trains the "
                    "preset in make test, and these samplers' batches equal the serial "
                    "sampler's: tests/test_parallel_samplers.py)")
@pytest.mark.parametrize("SamplerCls", [CpuSampler, GpuSampler])
def test_ppo_learns_cartpole_with_two_workers(SamplerCls, tmp_path):
    """Mean eval return >= 475 within 100k steps and a mean of at least 427.5 over the two
    evaluations after (seed 0, or seed 1 if seed 0 misses); ``make learning`` only."""
    assert _ppo_cartpole(SamplerCls, 0, tmp_path) or _ppo_cartpole(SamplerCls, 1, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("SamplerCls,AgentCls,CollectorCls", [
    (GpuSampler, AtariLstmAgent, GpuWaitResetCollector),
    (AlternatingSampler, AlternatingAtariLstmAgent, GpuWaitResetCollector),
])
def test_a2c_lstm_pong_smoke(SamplerCls, AgentCls, CollectorCls, tmp_path):
    n_steps = 2000
    sampler = SamplerCls(EnvCls=AtariEnv, env_kwargs=dict(game="pong"), batch_T=5, batch_B=4,
                         CollectorCls=CollectorCls, TrajInfoCls=AtariTrajInfo,
                         max_decorrelation_steps=50)
    runner = MinibatchRl(algo=A2C(), agent=AgentCls(), sampler=sampler, n_steps=n_steps,
                         seed=2, affinity=TWO_WORKERS, log_interval_steps=n_steps)
    with logger_context(str(tmp_path), 0, "pong", override_prefix=True):
        runner.train()
    assert runner.algo.update_counter == math.ceil(n_steps / 20)
    for p in runner.agent.parameters():
        assert p.isfinite().all()
    assert not any(proc.is_alive() for proc in sampler.processes)
