"""A small training run for the kill-and-resume tests (run as a script).

``python tests/resume_driver.py CASE RUN_DIR [--resume]`` trains CASE (ppo, ppo_cpu,
dqn_frames, r2d1, sac, sync_dqn) into RUN_DIR, checkpointing every couple of iterations, and
saves the final agent state as ``RUN_DIR/final_agent.pt``.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import torch

from rlpyt.envs.base import Env, EnvStep
from rlpyt.spaces.int_box import IntBox


class FrameChase(Env):
    """An Atari-like uint8 frame-stack env: a dot moves on a 12x12 screen; the agent
    moves a paddle along the bottom row and is rewarded when under the dot."""

    def __init__(self, size=12, n_frames=4, horizon=60):
        self.size, self.n_frames, self._horizon = size, n_frames, horizon
        self._action_space = IntBox(0, 3)
        self._observation_space = IntBox(0, 256, shape=(n_frames, size, size), dtype="uint8")
        self.rng = np.random.default_rng()
        self.frames = np.zeros((n_frames, size, size), np.uint8)

    def seed(self, seed):
        self.rng = np.random.default_rng(seed)

    def _frame(self):
        frame = np.zeros((self.size, self.size), np.uint8)
        frame[self.dot_y, self.dot_x] = 255
        frame[-1, self.paddle] = 128
        return frame

    def _push(self):
        self.frames[:-1] = self.frames[1:]
        self.frames[-1] = self._frame()
        return self.frames.copy()

    def reset(self):
        self.t, self.paddle = 0, self.size // 2
        self.dot_x, self.dot_y = int(self.rng.integers(self.size)), 0
        self.frames[:] = 0
        return self._push()

    def step(self, action):
        self.paddle = int(np.clip(self.paddle + int(action) - 1, 0, self.size - 1))
        self.dot_y = (self.dot_y + 1) % (self.size - 1)
        if self.dot_y == 0:
            self.dot_x = int(self.rng.integers(self.size))
        self.t += 1
        reward = float(self.paddle == self.dot_x) if self.dot_y == self.size - 2 else 0.0
        done = self.t >= self._horizon
        return EnvStep(self._push(), reward, done, None)

    @property
    def horizon(self):
        return self._horizon


def build(case: str):
    from rlpyt.envs.gym import make
    from rlpyt.runners.minibatch_rl import MinibatchRl, MinibatchRlEval
    from rlpyt.samplers.serial.sampler import SerialSampler

    # Checkpoint every few iterations (RESUME_CKPT_STEPS overrides; 0 switches them off).
    ckpt_steps = os.environ.get("RESUME_CKPT_STEPS")
    ckpt = {} if ckpt_steps is None else dict(checkpoint_interval_steps=float(ckpt_steps))
    if case in ("ppo", "ppo_cpu"):
        from rlpyt.agents.pg.categorical import CategoricalPgAgent
        from rlpyt.algos.pg.ppo import PPO
        from rlpyt.samplers.parallel.cpu.sampler import CpuSampler

        SamplerCls = SerialSampler if case == "ppo" else CpuSampler
        sampler = SamplerCls(EnvCls=make, env_kwargs=dict(id="CartPole-v1"), batch_T=16,
                             batch_B=2, max_decorrelation_steps=5, eval_n_envs=2,
                             eval_max_trajectories=2)
        affinity = None if case == "ppo" else dict(workers_cpus=[0, 0])
        return MinibatchRlEval(PPO(epochs=2, minibatches=2), CategoricalPgAgent(), sampler,
                               n_steps=2400, seed=3, log_interval_steps=320,
                               affinity=affinity, **{"checkpoint_interval_steps": 128, **ckpt})
    if case == "dqn_frames":
        from rlpyt.agents.dqn.dqn_agent import DqnAgent
        from rlpyt.algos.dqn.dqn import DQN

        sampler = SerialSampler(EnvCls=FrameChase, env_kwargs={}, batch_T=4, batch_B=2,
                                max_decorrelation_steps=0)
        algo = DQN(prioritized_replay=True, min_steps_learn=160, replay_size=1000,
                   batch_size=16, replay_ratio=8, target_update_interval=20, eps_steps=800,
                   n_step_return=2, learning_rate=1e-3)
        agent = DqnAgent(model_kwargs=dict(hidden_sizes=[32]))
        return MinibatchRl(algo, agent, sampler, n_steps=960, seed=4, log_interval_steps=240,
                           **{"checkpoint_interval_steps": 48, **ckpt})
    if case == "r2d1":
        from rlpyt.agents.dqn.r2d1_agent import R2d1Agent
        from rlpyt.algos.dqn.r2d1 import R2D1

        sampler = SerialSampler(EnvCls=make, env_kwargs=dict(id="CartPole-v1"), batch_T=8,
                                batch_B=2, max_decorrelation_steps=0)
        algo = R2D1(batch_T=8, batch_B=8, warmup_T=4, store_rnn_state_interval=4,
                    n_step_return=2, min_steps_learn=160, replay_size=2000, replay_ratio=2,
                    target_update_interval=20, eps_steps=1000, learning_rate=1e-3)
        return MinibatchRl(algo, R2d1Agent(), sampler, n_steps=1600, seed=5,
                           log_interval_steps=320, **{"checkpoint_interval_steps": 64, **ckpt})
    if case == "sac":
        from rlpyt.agents.qpg.sac_agent import SacAgent
        from rlpyt.algos.qpg.sac import SAC

        sampler = SerialSampler(EnvCls=make, env_kwargs=dict(id="Pendulum-v1"), batch_T=4,
                                batch_B=1, max_decorrelation_steps=0)
        algo = SAC(batch_size=32, min_steps_learn=200, replay_size=2000, replay_ratio=8)
        agent = SacAgent(model_kwargs=dict(hidden_sizes=[32, 32]),
                         q_model_kwargs=dict(hidden_sizes=[32, 32]))
        return MinibatchRl(algo, agent, sampler, n_steps=1000, seed=6, log_interval_steps=200,
                           **{"checkpoint_interval_steps": 40, **ckpt})
    if case == "sync_dqn":  # Two gloo ranks, each with its own envs and replay.
        from rlpyt.agents.dqn.dqn_agent import DqnAgent
        from rlpyt.algos.dqn.dqn import DQN
        from rlpyt.runners.sync_rl import SyncRl

        sampler = SerialSampler(EnvCls=make, env_kwargs=dict(id="CartPole-v1"), batch_T=4,
                                batch_B=2, max_decorrelation_steps=0)
        algo = DQN(min_steps_learn=160, replay_size=1000, batch_size=16, replay_ratio=8,
                   target_update_interval=20, eps_steps=800, n_step_return=2,
                   learning_rate=1e-3)
        agent = DqnAgent(model_kwargs=dict(hidden_sizes=[32]))
        ranks = [dict(master_torch_threads=1, set_affinity=False)] * 2
        return SyncRl(algo, agent, sampler, n_steps=2000, seed=7, log_interval_steps=400,
                      affinity=ranks, **{"checkpoint_interval_steps": 80, **ckpt})
    raise ValueError(f"unknown case {case!r}")


def main(case: str, run_dir: str, resume: bool) -> None:
    from rlpyt.utils.logging.context import logger_context

    torch.set_num_threads(1)
    runner = build(case)
    runner.affinity.setdefault("master_torch_threads", 1)
    snapshots = "last" if case.startswith("sync") else "none"
    with logger_context(run_dir, 0, case, override_prefix=True, resume=resume,
                        snapshot_mode=snapshots) as path:
        runner.train()
    if case.startswith("sync"):  # The ranks trained in their own processes.
        state = torch.load(f"{path}/params.pkl", weights_only=False)["agent_state_dict"]
    else:
        state = runner.agent.state_dict()
    torch.save(state, f"{path}/final_agent.pt")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], "--resume" in sys.argv[3:])
