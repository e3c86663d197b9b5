"""SAC smoke runs on MuJoCo (HalfCheetah-v5, Hopper-v5) with the default ``SacAgent()``."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from rlpyt.agents.qpg.sac_agent import SacAgent
from rlpyt.algos.qpg.sac import SAC
from rlpyt.envs.gym import make
from rlpyt.runners.minibatch_rl import MinibatchRlEval
from rlpyt.samplers.serial.sampler import SerialSampler
from rlpyt.utils.logging.context import logger_context

pytest.importorskip("mujoco")


@pytest.mark.slow
@pytest.mark.parametrize("env_id", ["HalfCheetah-v5", "Hopper-v5"])
def test_sac_trains_on_mujoco(env_id, tmp_path):
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(1)
    sampler = SerialSampler(
        EnvCls=make, env_kwargs=dict(id=env_id), batch_T=10, batch_B=2,
        max_decorrelation_steps=0, eval_n_envs=1, eval_max_trajectories=1,
    )
    # 3000 env steps; after the first 1000, 16 / 64 = one update per 4 env steps.
    algo = SAC(batch_size=64, replay_ratio=16, min_steps_learn=1000, replay_size=10_000)
    agent = SacAgent()  # the default (256, 256) networks
    runner = MinibatchRlEval(algo=algo, agent=agent, sampler=sampler, n_steps=3000, seed=0,
                             log_interval_steps=1500)
    try:
        with logger_context(str(tmp_path), 0, "sac_" + env_id, override_prefix=True):
            summary = runner.train()
    finally:
        torch.set_num_threads(previous_threads)
    assert algo.update_counter == 2000 * 16 // 64
    assert len(summary["eval_history"]) == 3
    assert all(math.isfinite(r) for _, r in summary["eval_history"])
    stored = algo.replay_buffer.samples
    action = stored.action[:1500]  # 1500 steps per env were stored
    assert np.all(np.abs(action) <= 1.0) and action.std() > 0.1
    if env_id == "HalfCheetah-v5":  # 1000-step time limit: truncations were stored
        assert stored.timeout[:1500].any()
    else:  # Hopper falls: terminations that are not truncations
        assert (stored.done[:1500] & ~stored.timeout[:1500]).any()
