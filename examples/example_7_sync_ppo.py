"""Example 7: synchronous multi-process PPO (``SyncRlEval``), one replica per GPU or per core.

The classic multi-GPU launch script: ``make_affinity(..., n_gpu=N, gpu_per_run=N)`` gives
one affinity per replica and ``SyncRlEval`` starts one rank for each.  Every rank steps
its own envs and holds its own agent and PPO; gradients are averaged across ranks by
DistributedDataParallel (NCCL between GPUs).  With ``--n_gpu 0`` the same script runs
``--n_replicas`` CPU ranks (gloo), e.g. on a laptop:

    python examples/example_7_sync_ppo.py                       # 2 CPU ranks
    python examples/example_7_sync_ppo.py --n_gpu 2 --n_cpu_core 8   # 2 GPU ranks

Across machines, run the script under torchrun (see docs/distributed.md); the runner
then joins the job instead of spawning ranks.  Logs go to
data/local/<date>/<time>/example_7/run_0/ (rank 0 writes them).
"""

import argparse

from rlpyt.agents.pg.categorical import CategoricalPgAgent
from rlpyt.algos.pg.ppo import PPO
from rlpyt.envs.gym import make
from rlpyt.runners.sync_rl import SyncRlEval
from rlpyt.samplers.serial.sampler import SerialSampler
from rlpyt.utils.launching.affinity import make_affinity
from rlpyt.utils.logging.context import logger_context


def build_and_train(n_steps=100_000, seed=0, run_ID=0, n_gpu=0, n_cpu_core=2, n_replicas=2):
    # One entry per replica: GPU ranks with n_gpu > 0, else n_replicas CPU ranks.
    affinity = make_affinity(
        run_slot=0,
        n_cpu_core=n_cpu_core,
        n_gpu=n_gpu,
        gpu_per_run=n_gpu or n_replicas,
        cpu_per_run=1 if n_gpu else n_cpu_core // n_replicas,
        set_affinity=False,  # a shared machine: do not pin
    )
    sampler = SerialSampler(
        EnvCls=make,
        env_kwargs=dict(id="CartPole-v1"),
        batch_T=32,
        batch_B=8,  # envs per rank: each iteration takes 32 x 8 steps on every rank
        max_decorrelation_steps=0,
        eval_n_envs=4,
        eval_max_trajectories=8,
    )
    algo = PPO(discount=0.98, gae_lambda=0.8, learning_rate=1e-3, ratio_clip=0.2, epochs=20,
               minibatches=1, entropy_loss_coeff=0.0, value_loss_coeff=0.5,
               clip_grad_norm=0.5, normalize_advantage=True)
    runner = SyncRlEval(
        algo=algo,
        agent=CategoricalPgAgent(),
        sampler=sampler,
        n_steps=n_steps,  # env steps of all ranks together
        seed=seed,
        affinity=affinity,
        log_interval_steps=10_000,
    )
    config = dict(n_steps=n_steps, seed=seed, n_gpu=n_gpu, n_replicas=len(affinity))
    with logger_context("example_7", run_ID, "sync_ppo", log_params=config):
        return runner.train()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n_steps", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--run_ID", type=int, default=0)
    parser.add_argument("--n_gpu", type=int, default=0, help="GPU ranks (0: CPU ranks)")
    parser.add_argument("--n_cpu_core", type=int, default=2)
    parser.add_argument("--n_replicas", type=int, default=2, help="CPU ranks when n_gpu=0")
    args = parser.parse_args()
    build_and_train(**vars(args))
