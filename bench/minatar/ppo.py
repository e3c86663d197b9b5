"""PPO on the MinAtar games, the actor-critic side of the reproduction.

The paper's actor-critic is online AC(lambda) (one env, no batches), which rlpyt does
not implement; PPO on the same network is the batched actor-critic a researcher runs
today, so its curves are set beside the paper's AC(lambda) and DQN ones as a reference
point, not a replication.  Settings: ``MinAtarPgModel`` (the paper's torso, softmax
policy and value heads), 16 envs x 128 steps per batch, 4 epochs of 4 minibatches,
clip 0.1, GAE lambda 0.95, discount 0.99, entropy 0.01, value coefficient 0.5,
Adam lr 2.5e-4, grad-norm clip 0.5 (CleanRL's Atari PPO settings); MinAtar as in the
paper (all 6 actions, sticky actions 0.1, difficulty ramping).

    nice -n 19 python bench/minatar/ppo.py --n-steps 5e6
    python bench/minatar/report.py
"""

from __future__ import annotations

import argparse

from common import main_guard, parse_args, sweep

main_guard()

from rlpyt.agents.pg.minatar import MinAtarPgAgent  # noqa: E402
from rlpyt.algos.pg.ppo import PPO  # noqa: E402
from rlpyt.envs.minatar import MinAtarEnv  # noqa: E402
from rlpyt.runners.minibatch_rl import MinibatchRl  # noqa: E402
from rlpyt.samplers.serial.sampler import SerialSampler  # noqa: E402

ALGO_KWARGS = dict(discount=0.99, gae_lambda=0.95, learning_rate=2.5e-4, ratio_clip=0.1,
                   epochs=4, minibatches=4, entropy_loss_coeff=0.01, value_loss_coeff=0.5,
                   clip_grad_norm=0.5, normalize_advantage=True)


def make_runner(game: str, seed: int, args: argparse.Namespace) -> MinibatchRl:
    sampler = SerialSampler(EnvCls=MinAtarEnv, env_kwargs=dict(game=game), batch_T=128,
                            batch_B=16, max_decorrelation_steps=0)
    return MinibatchRl(algo=PPO(**ALGO_KWARGS), agent=MinAtarPgAgent(), sampler=sampler,
                       n_steps=args.n_steps, seed=seed, log_interval_steps=args.log_interval,
                       log_traj_window=args.traj_window,
                       checkpoint_interval_steps=args.checkpoint_interval)


if __name__ == "__main__":
    sweep(parse_args("ppo", __doc__.splitlines()[0]), make_runner)
