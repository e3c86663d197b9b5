"""SAC on HalfCheetah-v5: the evaluation curve over 100k env steps (not part of the tests).

The reference SAC setup (batch 256, one update per env step, (256, 256) networks,
learning rate 3e-4) with 5k steps before learning; deterministic evaluation every
``--eval-interval`` steps.  Prints the curve (env steps, mean eval return) and the
training speed at the end.  On one CPU core the update costs about 10 ms, so the
full 100k steps take roughly 20-35 minutes (more on a loaded machine); with
``--cuda-idx 0`` less.

Reference (one seed is noisy; expect a spread of +-1000): with this setup SAC
reaches a return of roughly 3000-5000 on HalfCheetah after 100k steps.  The SAC
papers' curves (Haarnoja et al. 2018, "Soft Actor-Critic Algorithms and
Applications", HalfCheetah-v2 learning curve) and the SAC baselines in
sample-efficiency papers that plot the first 100k-300k steps (MBPO, Janner et al.
2019; REDQ, Chen et al. 2021) lie in that range at 100k steps; read off plots, not
tables, so treat it as approximate.

    python bench/results/mujoco_sac.py
    python bench/results/mujoco_sac.py --steps 5000 --eval-interval 2500   # a quick smoke run
"""

from __future__ import annotations

import argparse
import tempfile
import time

import torch

from rlpyt.agents.qpg.sac_agent import SacAgent
from rlpyt.algos.qpg.sac import SAC
from rlpyt.envs.gym import make
from rlpyt.runners.minibatch_rl import MinibatchRlEval
from rlpyt.samplers.serial.sampler import SerialSampler
from rlpyt.utils.logging.context import logger_context


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env-id", default="HalfCheetah-v5")
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--eval-interval", type=int, default=10_000)
    parser.add_argument("--eval-episodes", type=int, default=5)
    parser.add_argument("--learning-starts", type=int, default=5_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--cuda-idx", type=int, default=None)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    sampler = SerialSampler(
        EnvCls=make, env_kwargs=dict(id=args.env_id), batch_T=1, batch_B=1,
        max_decorrelation_steps=0, eval_n_envs=args.eval_episodes,
        eval_max_trajectories=args.eval_episodes,
    )
    algo = SAC(min_steps_learn=min(args.learning_starts, args.steps // 2))
    runner = MinibatchRlEval(
        algo=algo, agent=SacAgent(), sampler=sampler, n_steps=args.steps, seed=args.seed,
        log_interval_steps=args.eval_interval, affinity=dict(cuda_idx=args.cuda_idx),
    )
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as log_dir:
        with logger_context(log_dir, 0, "bench_mujoco_sac", override_prefix=True):
            summary = runner.train()
    elapsed = time.perf_counter() - start
    print(f"\nSAC on {args.env_id}, seed {args.seed}: evaluation curve")
    print(f"{'env steps':>10}  {'mean eval return':>16}")
    for steps, mean_return in summary["eval_history"]:
        print(f"{steps:>10d}  {mean_return:>16.1f}")
    print(f"{args.steps} steps in {elapsed:.0f} s ({args.steps / elapsed:.1f} steps/s, "
          f"evaluation included)")


if __name__ == "__main__":
    main()
