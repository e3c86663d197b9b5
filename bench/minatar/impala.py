"""IMPALA (V-trace, Espeholt et al. 2018) on the MinAtar games, asynchronously.

The learner (``Impala`` under ``AsyncRl``) trains in the main process while one
``AsyncCpuSampler`` worker acts with the latest published parameters; batches pass
through the shared FIFO and V-trace corrects for the policy lag.  The paper of MinAtar
has no IMPALA run, so these curves stand beside its DQN and AC(lambda) as a reference
point for the asynchronous actor-critic.  Settings: ``MinAtarPgModel`` (the paper's
torso), 16 envs x 20-step unrolls, one gradient step per batch, rho_bar = c_bar = 1,
discount 0.99, entropy 0.01, value coefficient 0.5, Adam lr 1e-3, grad-norm clip 1
(``Impala``'s defaults); MinAtar as in the paper (all 6 actions, sticky actions 0.1,
difficulty ramping).  Needs 2 cores (learner and sampler).

    python bench/minatar/impala.py --n-steps 1e6 --seeds 0
    python bench/minatar/report.py
"""

from __future__ import annotations

import argparse

from common import main_guard, parse_args, sweep

main_guard()

from rlpyt.agents.pg.minatar import MinAtarPgAgent  # noqa: E402
from rlpyt.algos.pg.impala import Impala  # noqa: E402
from rlpyt.envs.minatar import MinAtarEnv  # noqa: E402
from rlpyt.runners.async_rl import AsyncRl  # noqa: E402
from rlpyt.samplers.async_.cpu_sampler import AsyncCpuSampler  # noqa: E402

ALGO_KWARGS = dict(discount=0.99, learning_rate=1e-3, entropy_loss_coeff=0.01,
                   value_loss_coeff=0.5, clip_grad_norm=1.0, rho_bar=1.0, c_bar=1.0)


def make_runner(game: str, seed: int, args: argparse.Namespace) -> AsyncRl:
    sampler = AsyncCpuSampler(EnvCls=MinAtarEnv, env_kwargs=dict(game=game), batch_T=20,
                              batch_B=16, max_decorrelation_steps=0)
    return AsyncRl(algo=Impala(**ALGO_KWARGS), agent=MinAtarPgAgent(), sampler=sampler,
                   n_steps=args.n_steps, seed=seed, log_interval_steps=args.log_interval,
                   log_traj_window=args.traj_window,
                   checkpoint_interval_steps=args.checkpoint_interval,
                   affinity=dict(workers_cpus=[0], set_affinity=False))


if __name__ == "__main__":
    sweep(parse_args("impala", __doc__.splitlines()[0]), make_runner)
