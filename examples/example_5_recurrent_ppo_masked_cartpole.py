"""Example 5: recurrent PPO on CartPole with the velocities hidden.

With cart and pole velocities zeroed, the task is only solvable with memory: the
LSTM agent must infer velocities from successive positions.  ``CpuWaitResetCollector``
gives the agent clean sequences (an env that finishes idles until the batch ends);
PPO minibatches whole env columns and replays each from the recurrent state stored
at its first step.  These settings solve it (eval return 500) in about 60k steps.

    python examples/example_5_recurrent_ppo_masked_cartpole.py --n_steps 300000
"""

import argparse

import gymnasium as gym
import numpy as np

from rlpyt.agents.pg.categorical import RecurrentCategoricalPgAgent
from rlpyt.algos.pg.ppo import PPO
from rlpyt.envs.gym import GymEnvWrapper
from rlpyt.runners.minibatch_rl import MinibatchRlEval
from rlpyt.samplers.parallel.cpu.collectors import CpuWaitResetCollector
from rlpyt.samplers.serial.sampler import SerialSampler
from rlpyt.utils.logging.context import logger_context


class VelocityMask(gym.ObservationWrapper):
    """Zero CartPole's velocity entries (observation indices 1 and 3)."""

    def observation(self, observation):
        masked = np.array(observation, dtype=np.float32)
        masked[[1, 3]] = 0.0
        return masked


def make_masked_cartpole(**kwargs):
    """An ``EnvCls`` for the samplers: any callable returning an rlpyt env works."""
    return GymEnvWrapper(VelocityMask(gym.make("CartPole-v1", **kwargs)))


def build_and_train(n_steps=300_000, seed=0, run_ID=0, cuda_idx=None):
    sampler = SerialSampler(
        EnvCls=make_masked_cartpole,
        env_kwargs={},
        CollectorCls=CpuWaitResetCollector,  # whole sequences for the LSTM
        batch_T=32,
        batch_B=8,
        max_decorrelation_steps=0,
        eval_n_envs=5,
        eval_max_trajectories=5,
    )
    algo = PPO(
        discount=0.98,
        gae_lambda=0.8,
        learning_rate=1e-3,
        ratio_clip=0.2,
        epochs=20,
        minibatches=1,  # recurrent: minibatches split the batch's envs (batch_B)
        entropy_loss_coeff=0.0,
        value_loss_coeff=0.5,
        clip_grad_norm=0.5,
        normalize_advantage=True,
    )
    agent = RecurrentCategoricalPgAgent()  # MLP -> LSTM(64) -> policy and value MLP heads
    runner = MinibatchRlEval(algo=algo, agent=agent, sampler=sampler, n_steps=n_steps,
                             seed=seed, log_interval_steps=20_000,
                             affinity=dict(cuda_idx=cuda_idx))
    config = dict(n_steps=n_steps, seed=seed)
    with logger_context("example_5", run_ID, "rppo_masked_cartpole", config,
                        snapshot_mode="last"):
        return runner.train()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n_steps", type=float, default=300_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--run_ID", type=int, default=0)
    parser.add_argument("--cuda_idx", type=int, default=None)
    args = parser.parse_args()
    summary = build_and_train(int(args.n_steps), args.seed, args.run_ID, args.cuda_idx)
    print(f"Final evaluation return: {summary['final_eval_return']:.1f}")
