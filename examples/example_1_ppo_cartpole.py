"""Example 1: serial PPO on CartPole-v1, the smallest complete rlpyt launch script.

One process steps 8 envs, PPO updates the default actor-critic (64-64 tanh MLPs),
and the runner evaluates every 10k steps.  Solves CartPole (eval return 500) in
about 20k-60k steps.  Logs go to data/local/<date>/<time>/example_1/run_0/.

    python examples/example_1_ppo_cartpole.py --n_steps 100000
"""

import argparse

from rlpyt.agents.pg.categorical import CategoricalPgAgent
from rlpyt.algos.pg.ppo import PPO
from rlpyt.envs.gym import make
from rlpyt.runners.minibatch_rl import MinibatchRlEval
from rlpyt.samplers.serial.sampler import SerialSampler
from rlpyt.utils.logging.context import logger_context


def build_and_train(n_steps=100_000, seed=0, run_ID=0, cuda_idx=None):
    sampler = SerialSampler(
        EnvCls=make,
        env_kwargs=dict(id="CartPole-v1"),
        batch_T=32,  # time steps per env per iteration
        batch_B=8,  # parallel envs (all in this process)
        max_decorrelation_steps=0,
        eval_n_envs=4,
        eval_max_trajectories=8,  # each evaluation starts at most 8 episodes
    )
    algo = PPO(
        discount=0.98,
        gae_lambda=0.8,
        learning_rate=1e-3,  # annealed linearly to 0 with the ratio clip
        ratio_clip=0.2,
        epochs=20,
        minibatches=1,
        entropy_loss_coeff=0.0,
        value_loss_coeff=0.5,
        clip_grad_norm=0.5,
        normalize_advantage=True,
    )
    agent = CategoricalPgAgent()  # default model for any Discrete-action env
    runner = MinibatchRlEval(
        algo=algo,
        agent=agent,
        sampler=sampler,
        n_steps=n_steps,
        seed=seed,
        log_interval_steps=10_000,
        affinity=dict(cuda_idx=cuda_idx),
    )
    config = dict(n_steps=n_steps, seed=seed)
    with logger_context("example_1", run_ID, "ppo_cartpole", config, snapshot_mode="last"):
        return runner.train()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n_steps", type=float, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--run_ID", type=int, default=0)
    parser.add_argument("--cuda_idx", type=int, default=None)
    args = parser.parse_args()
    summary = build_and_train(int(args.n_steps), args.seed, args.run_ID, args.cuda_idx)
    print(f"Final evaluation return: {summary['final_eval_return']:.1f}")
