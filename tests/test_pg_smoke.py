"""Smoke runs: the PG agents and collectors train end to end on Atari and MuJoCo.

These check that the pieces fit (shapes, dtypes, recurrent state, wait-reset
masking, bootstrap values) and that losses stay finite; learning is tested on
CartPole in test_pg_learning.py.
"""

import math

import pytest
import torch

from rlpyt.agents.pg.atari import AtariFfAgent, AtariLstmAgent
from rlpyt.agents.pg.mujoco import MujocoFfAgent
from rlpyt.algos.pg.a2c import A2C
from rlpyt.algos.pg.ppo import PPO
from rlpyt.envs.atari.atari_env import AtariEnv, AtariTrajInfo
from rlpyt.envs.gym import make
from rlpyt.runners.minibatch_rl import MinibatchRl
from rlpyt.samplers.parallel.cpu.collectors import CpuResetCollector, CpuWaitResetCollector
from rlpyt.samplers.serial.sampler import SerialSampler
from rlpyt.utils.logging.context import logger_context

pytestmark = pytest.mark.slow


def _run(algo, agent, sampler, n_steps, tmp_path):
    runner = MinibatchRl(algo=algo, agent=agent, sampler=sampler, n_steps=n_steps, seed=1,
                         log_interval_steps=n_steps)
    with logger_context(str(tmp_path), 0, "smoke", override_prefix=True):
        runner.train()
    return runner


@pytest.mark.parametrize("AgentCls", [AtariFfAgent, AtariLstmAgent])
@pytest.mark.parametrize("CollectorCls", [CpuResetCollector, CpuWaitResetCollector])
def test_atari_a2c_smoke(AgentCls, CollectorCls, tmp_path):
    sampler = SerialSampler(EnvCls=AtariEnv, env_kwargs=dict(game="pong"), batch_T=5, batch_B=4,
                            CollectorCls=CollectorCls, TrajInfoCls=AtariTrajInfo,
                            max_decorrelation_steps=50)
    agent = AgentCls(model_kwargs=dict(fc_sizes=64, **({"lstm_size": 64}
                                                        if AgentCls is AtariLstmAgent else {})))
    runner = _run(A2C(), agent, sampler, 2_000, tmp_path)
    assert runner.algo.update_counter == runner.n_itr
    for p in agent.parameters():
        assert torch.isfinite(p).all()


def test_ppo_mujoco_ff_halfcheetah_smoke(tmp_path):
    sampler = SerialSampler(EnvCls=make, env_kwargs=dict(id="HalfCheetah-v5"), batch_T=128,
                            batch_B=2, max_decorrelation_steps=0)
    agent = MujocoFfAgent(model_kwargs=dict(normalize_observation=True))
    runner = _run(PPO(minibatches=4, epochs=2), agent, sampler, 2_048, tmp_path)
    summary = runner.summary()
    assert runner.algo.update_counter == runner.n_itr * 4 * 2
    assert not math.isnan(summary["train_return"]) or runner.diagnostics.cum_completed_trajs == 0
    for p in agent.parameters():
        assert torch.isfinite(p).all()
