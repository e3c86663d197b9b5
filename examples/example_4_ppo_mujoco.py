"""Example 4: Gaussian PPO on MuJoCo (HalfCheetah-v5) with observation normalisation.

``MujocoFfAgent`` builds ``MujocoFfModel``: separate tanh MLPs for the action mean
and the value, a learned state-independent log std, and optional running
normalisation of observations (clipped to +-10).  Hyperparameters follow the
common MuJoCo PPO settings (2048 steps per update, 10 epochs, 32 minibatches).

    python examples/example_4_ppo_mujoco.py --env HalfCheetah-v5 --n_steps 1000000
"""

import argparse

from rlpyt.agents.pg.mujoco import MujocoFfAgent
from rlpyt.algos.pg.ppo import PPO
from rlpyt.envs.gym import make
from rlpyt.runners.minibatch_rl import MinibatchRlEval
from rlpyt.samplers.serial.sampler import SerialSampler
from rlpyt.utils.logging.context import logger_context


def build_and_train(env_id="HalfCheetah-v5", n_steps=1_000_000, seed=0, run_ID=0,
                    cuda_idx=None):
    sampler = SerialSampler(
        EnvCls=make,
        env_kwargs=dict(id=env_id),
        batch_T=2048,
        batch_B=1,
        max_decorrelation_steps=0,
        eval_n_envs=2,
        eval_max_trajectories=4,
    )
    algo = PPO(
        discount=0.99,
        gae_lambda=0.95,
        learning_rate=3e-4,
        ratio_clip=0.2,
        epochs=10,
        minibatches=32,
        value_loss_coeff=0.5,
        entropy_loss_coeff=0.0,
        clip_grad_norm=0.5,
        normalize_advantage=True,
    )
    agent = MujocoFfAgent(model_kwargs=dict(normalize_observation=True))
    runner = MinibatchRlEval(
        algo=algo,
        agent=agent,
        sampler=sampler,
        n_steps=n_steps,
        seed=seed,
        log_interval_steps=min(50_000, n_steps),
        affinity=dict(cuda_idx=cuda_idx),
    )
    config = dict(env_id=env_id, n_steps=n_steps)
    with logger_context("example_4", run_ID, f"ppo_{env_id}", config, snapshot_mode="last"):
        return runner.train()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--env", default="HalfCheetah-v5")
    parser.add_argument("--n_steps", type=float, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--run_ID", type=int, default=0)
    parser.add_argument("--cuda_idx", type=int, default=None)
    args = parser.parse_args()
    build_and_train(args.env, int(args.n_steps), args.seed, args.run_ID, args.cuda_idx)
