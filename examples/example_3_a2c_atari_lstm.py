"""Example 3: recurrent A2C on Atari with wait-reset collection.

``AtariLstmAgent`` feeds conv features, the previous action and the previous reward
to an LSTM.  ``CpuWaitResetCollector`` leaves an env idle after its episode ends
until the batch is over, so every batch column is one clean sequence that starts
from the recurrent state stored at its first step; A2C masks the idle steps.

    python examples/example_3_a2c_atari_lstm.py --game pong --n_steps 20000
"""

import argparse

from rlpyt.agents.pg.atari import AtariLstmAgent
from rlpyt.algos.pg.a2c import A2C
from rlpyt.envs.atari.atari_env import AtariEnv, AtariTrajInfo
from rlpyt.runners.minibatch_rl import MinibatchRl
from rlpyt.samplers.parallel.cpu.collectors import CpuWaitResetCollector
from rlpyt.samplers.serial.sampler import SerialSampler
from rlpyt.utils.logging.context import logger_context


def build_and_train(game="pong", n_steps=20_000, seed=0, run_ID=0, cuda_idx=None):
    sampler = SerialSampler(
        EnvCls=AtariEnv,
        TrajInfoCls=AtariTrajInfo,
        env_kwargs=dict(game=game),
        CollectorCls=CpuWaitResetCollector,
        batch_T=20,  # sequence length the LSTM trains on
        batch_B=8,
        max_decorrelation_steps=400,
    )
    algo = A2C(learning_rate=7e-4, entropy_loss_coeff=0.01, clip_grad_norm=0.5)
    agent = AtariLstmAgent()
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
    with logger_context("example_3", run_ID, f"a2c_lstm_{game}", config, snapshot_mode="last"):
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
