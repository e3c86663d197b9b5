"""Launch scripts written for classic rlpyt's async mode run unchanged (but env ids and sizes).

The body of ``build_and_train`` below has the shape of classic rlpyt's
``atari_dqn_async_cpu.py`` / ``atari_dqn_async_gpu.py`` / ``atari_r2d1_async_gpu.py``
train scripts: slot affinity code in, ``Db...`` collectors, ``AsyncRlEval``.  On a CPU-only
machine the GPU layouts are asked for with ``n_gpu=0`` (central inference on a CPU).
"""

from __future__ import annotations

import pytest
import torch
from test_async_runs import restore_affinity  # noqa: F401  (a fixture)

from rlpyt.agents.dqn.atari.atari_dqn_agent import AtariDqnAgent
from rlpyt.agents.dqn.atari.atari_r2d1_agent import AtariR2d1Agent
from rlpyt.algos.dqn.dqn import DQN
from rlpyt.algos.dqn.r2d1 import R2D1
from rlpyt.envs.atari.atari_env import AtariEnv, AtariTrajInfo
from rlpyt.runners.async_rl import AsyncRlEval
from rlpyt.samplers.async_.collectors import DbCpuResetCollector, DbGpuResetCollector
from rlpyt.samplers.async_.cpu_sampler import AsyncCpuSampler
from rlpyt.samplers.async_.gpu_sampler import AsyncGpuSampler
from rlpyt.utils.launching.affinity import affinity_from_code, encode_affinity
from rlpyt.utils.logging.context import logger_context

SMALL_MODEL = dict(channels=[8, 8, 8], kernel_sizes=[8, 4, 3], strides=[4, 2, 1],
                   paddings=[0, 1, 1])


def build_and_train(slot_affinity_code, log_dir, run_ID, config):
    affinity = affinity_from_code(slot_affinity_code)
    SamplerCls, CollectorCls = config["sampler_cls"]
    sampler = SamplerCls(
        EnvCls=AtariEnv,
        TrajInfoCls=AtariTrajInfo,
        env_kwargs=config["env"],
        CollectorCls=CollectorCls,
        eval_env_kwargs=config["eval_env"],
        **config["sampler"],
    )
    algo = config["algo_cls"](optim_kwargs=config["optim"], **config["algo"])
    agent = config["agent_cls"](model_kwargs=config["model"], **config["agent"])
    runner = AsyncRlEval(algo=algo, agent=agent, sampler=sampler, affinity=affinity,
                         **config["runner"])
    name = "async_" + config["algo_cls"].__name__.lower()
    with logger_context(log_dir, run_ID, name, dict(config=str(config))):
        return runner.train()


def config_for(kind):
    env = dict(game="pong", horizon=200)
    base = dict(env=env, eval_env=env, optim=dict(),
                sampler=dict(batch_T=8, batch_B=4, max_decorrelation_steps=0, eval_n_envs=2,
                             eval_max_trajectories=2, eval_max_steps=400),
                runner=dict(n_steps=1600, log_interval_steps=800))
    if kind == "r2d1":
        return dict(base, sampler_cls=(AsyncGpuSampler, DbGpuResetCollector),
                    algo_cls=R2D1, agent_cls=AtariR2d1Agent, agent=dict(),
                    model=dict(fc_size=32, lstm_size=32, head_size=32, channels=[8, 8, 8]),
                    algo=dict(batch_T=8, batch_B=4, warmup_T=4, store_rnn_state_interval=8,
                              min_steps_learn=400, replay_size=4000, replay_ratio=1,
                              n_step_return=3, target_update_interval=10))
    SamplerCls, CollectorCls = ((AsyncCpuSampler, DbCpuResetCollector) if kind == "cpu"
                                else (AsyncGpuSampler, DbGpuResetCollector))
    return dict(base, sampler_cls=(SamplerCls, CollectorCls), algo_cls=DQN,
                agent_cls=AtariDqnAgent, agent=dict(),
                model=SMALL_MODEL,
                algo=dict(batch_size=16, min_steps_learn=400, replay_size=4000,
                          replay_ratio=2, target_update_interval=10))


@pytest.mark.parametrize("kind", ["cpu", "gpu", "r2d1"])
@pytest.mark.usefixtures("restore_affinity")
def test_classic_async_script_runs(kind, tmp_path):
    torch.set_num_threads(1)
    # The classic GPU scripts' layout, on a CPU-only machine: n_gpu=0; pinning on, as a
    # launch script has it (the optimizer pins this process: restore_affinity undoes it).
    code = encode_affinity(n_cpu_core=2, n_gpu=0, cpu_per_run=2, async_sample=True,
                           sample_gpu_per_run=0, optim_sample_share_gpu=False)
    summary = build_and_train(f"0slt_{code}", str(tmp_path), 0, config_for(kind))
    assert len(summary["eval_history"]) == 3
