"""Smoke test: AtariDqnAgent + DQN on Pong with frame replay, a few thousand steps."""

from __future__ import annotations

import math

import pytest
import torch

pytest.importorskip("ale_py")
from rlpyt.agents.dqn.atari.atari_dqn_agent import AtariDqnAgent  # noqa: E402
from rlpyt.algos.dqn.dqn import DQN  # noqa: E402
from rlpyt.algos.dqn.replay import TlUniformReplayFrameBuffer  # noqa: E402
from rlpyt.envs.atari.atari_env import AtariEnv, AtariTrajInfo  # noqa: E402
from rlpyt.runners.minibatch_rl import MinibatchRl  # noqa: E402
from rlpyt.samplers.serial.sampler import SerialSampler  # noqa: E402
from rlpyt.utils.logging.context import logger_context  # noqa: E402


@pytest.mark.slow
def test_atari_dqn_pong_smoke(tmp_path):
    torch.set_num_threads(1)
    sampler = SerialSampler(EnvCls=AtariEnv, TrajInfoCls=AtariTrajInfo,
                            env_kwargs=dict(game="pong"), batch_T=4, batch_B=2,
                            max_decorrelation_steps=0)
    algo = DQN(min_steps_learn=1000, replay_size=2000, batch_size=8, replay_ratio=1,
               target_update_interval=50, eps_steps=1500, double_dqn=True)
    agent = AtariDqnAgent(model_kwargs=dict(dueling=True, fc_sizes=64))  # Small head: fast.
    runner = MinibatchRl(algo=algo, agent=agent, sampler=sampler, n_steps=2000, seed=0,
                         log_interval_steps=1000)
    with logger_context(str(tmp_path), 0, "dqn_pong", override_prefix=True):
        runner.train()
    assert isinstance(algo.replay_buffer, TlUniformReplayFrameBuffer)  # uint8 frame stacks.
    assert algo.replay_buffer.samples_frames.shape[1:] == (2, 104, 80)
    assert algo.update_counter == (2000 - 1000) // 8  # One update per 8-step iteration.
    batch = algo.replay_buffer.sample_batch(4)
    assert batch.agent_inputs.observation.shape == (4, 4, 104, 80)
    loss, priorities = algo.loss(batch)
    assert math.isfinite(loss.item()) and priorities.shape == (4,)
    assert agent.distribution.epsilon.item() == pytest.approx(agent.eps_final)
