"""Example 2: A2C on Atari (Pong) with the feed-forward conv agent, serial sampling.

``AtariEnv`` steps the ALE directly: frame skip 4 with max-pooling, 104x80
grayscale, a stack of 4 frames, episodic lives, clipped rewards (the raw score is
logged as ``GameScore``).  A real Pong run wants ~10M steps and the parallel
samplers; this script shows the shape of the launch and runs as written.

    python examples/example_2_a2c_atari.py --game pong --n_steps 20000
"""

import argparse

from rlpyt.agents.pg.atari import AtariFfAgent
from rlpyt.algos.pg.a2c import A2C
from rlpyt.envs.atari.atari_env import AtariEnv, AtariTrajInfo
from rlpyt.runners.minibatch_rl import MinibatchRl
from rlpyt.samplers.serial.sampler import SerialSampler
from rlpyt.utils.logging.context import logger_context


def build_and_train(game="pong", n_steps=20_000, seed=0, run_ID=0, cuda_idx=None):
    sampler = SerialSampler(
        EnvCls=AtariEnv,
        TrajInfoCls=AtariTrajInfo,  # adds GameScore (unclipped) to the logged stats
        env_kwargs=dict(game=game),
        batch_T=5,
        batch_B=16,
        max_decorrelation_steps=400,  # envs start at different points of the game
    )
    algo = A2C(learning_rate=7e-4, entropy_loss_coeff=0.01, clip_grad_norm=0.5)
    agent = AtariFfAgent()
    runner = MinibatchRl(
        algo=algo,
        agent=agent,
        sampler=sampler,
        n_steps=n_steps,
        seed=seed,
        log_interval_steps=10_000,
        affinity=dict(cuda_idx=cuda_idx),
    )
    config = dict(game=game, n_steps=n_steps)
    with logger_context("example_2", run_ID, f"a2c_{game}", config, snapshot_mode="last"):
        return runner.train()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--game", default="pong")
    parser.add_argument("--n_steps", type=float, default=20_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--run_ID", type=int, default=0)
    parser.add_argument("--cuda_idx", type=int, default=None)
    args = parser.parse_args()
    build_and_train(args.game, int(args.n_steps), args.seed, args.run_ID, args.cuda_idx)
