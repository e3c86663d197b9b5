"""SAC on a MuJoCo task, serial sampling with evaluation (the classic launch-script shape).

Runs the reference SAC setup (Haarnoja et al. 2018): one env, one gradient update of
batch 256 per env step, (256, 256) networks, learning rate 3e-4, 10k random-ish
steps before learning.  Evaluation runs every 10k steps on 10 envs.

    python examples/sac_mujoco.py --env_id HalfCheetah-v5 --n_steps 1000000
    python examples/sac_mujoco.py --env_id Hopper-v5 --cuda_idx 0
"""

from __future__ import annotations

import argparse

from rlpyt.agents.qpg.sac_agent import SacAgent
from rlpyt.algos.qpg.sac import SAC
from rlpyt.envs.gym import make as gym_make
from rlpyt.runners.minibatch_rl import MinibatchRlEval
from rlpyt.samplers.serial.sampler import SerialSampler
from rlpyt.utils.logging.context import logger_context


def build_and_train(
    env_id: str = "HalfCheetah-v5",
    run_ID: int = 0,
    cuda_idx: int | None = None,
    n_steps: int = 1_000_000,
    log_interval_steps: int = 10_000,
    log_dir: str = "sac_mujoco",
):
    sampler = SerialSampler(
        EnvCls=gym_make,
        env_kwargs=dict(id=env_id),
        eval_env_kwargs=dict(id=env_id),
        batch_T=1,  # One env step per iteration...
        batch_B=1,
        max_decorrelation_steps=0,
        eval_n_envs=10,
        eval_max_steps=int(51e3),
        eval_max_trajectories=50,
    )
    algo = SAC()  # ...and replay_ratio=256 with batch_size=256: one update per step.
    agent = SacAgent()
    runner = MinibatchRlEval(
        algo=algo,
        agent=agent,
        sampler=sampler,
        n_steps=n_steps,
        log_interval_steps=log_interval_steps,
        affinity=dict(cuda_idx=cuda_idx),
        seed=run_ID,
    )
    config = dict(env_id=env_id)
    name = "sac_" + env_id
    with logger_context(log_dir, run_ID, name, config):
        return runner.train()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--env_id", help="Gymnasium MuJoCo env id", default="HalfCheetah-v5")
    parser.add_argument("--run_ID", help="run identifier (logging and seed)", type=int, default=0)
    parser.add_argument("--cuda_idx", help="GPU to use", type=int, default=None)
    parser.add_argument("--n_steps", help="env steps to train", type=int, default=1_000_000)
    args = parser.parse_args()
    build_and_train(
        env_id=args.env_id, run_ID=args.run_ID, cuda_idx=args.cuda_idx, n_steps=args.n_steps,
    )
