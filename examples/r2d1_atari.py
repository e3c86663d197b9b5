"""R2D1 on Atari (Pong by default): recurrent Q-learning from replayed sequences.

``AtariR2d1Agent`` (Nature conv net, LSTM with the previous action and reward, Q head)
and ``R2D1`` with its defaults: sequences of 40 burn-in + 80 trained steps, 5-step
double-DQN targets with value rescaling, prioritized sequence replay (eta = 0.9), Adam
at 1e-4, target copy every 2500 updates, and one trained step per env step
(``replay_ratio=1``: with 16 envs x 40 steps per batch that is one update of 64 x 80
steps every 8 batches).  The replay stores each 104x80 frame once; it is capped at
``n_steps`` (or ``--replay_size``) so short runs stay small: 100k steps take about
0.85 GB.  The sampler resets envs mid-batch (the default reset collector), which R2D1
replays exactly: recurrent state, previous action and reward are zeroed where an
episode starts inside a sequence.

    python examples/r2d1_atari.py --game pong --n_steps 20000          # smoke test
    python examples/r2d1_atari.py --game pong --n_steps 10e6 --cuda_idx 0
"""

from __future__ import annotations

import argparse

from rlpyt.agents.dqn.atari.atari_r2d1_agent import AtariR2d1Agent
from rlpyt.algos.dqn.r2d1 import R2D1
from rlpyt.envs.atari.atari_env import AtariEnv, AtariTrajInfo
from rlpyt.runners.minibatch_rl import MinibatchRlEval
from rlpyt.samplers.serial.sampler import SerialSampler
from rlpyt.utils.logging.context import logger_context


def build_and_train(game="pong", n_steps=20_000, replay_size=int(1e6), dueling=False, seed=0,
                    run_ID=0, cuda_idx=None):
    sampler = SerialSampler(
        EnvCls=AtariEnv,
        TrajInfoCls=AtariTrajInfo,  # Adds GameScore (the unclipped score) to the logs.
        env_kwargs=dict(game=game),
        batch_T=40,  # A multiple of store_rnn_state_interval (40).
        batch_B=16,
        max_decorrelation_steps=1000,
        eval_n_envs=4,
        eval_max_steps=int(min(125_000, max(5_000, n_steps // 4))),
        eval_max_trajectories=8,
    )
    algo = R2D1(
        min_steps_learn=int(min(1e5, n_steps // 4)),
        replay_size=int(min(replay_size, max(n_steps, 20_000))),
        eps_steps=int(min(1e6, n_steps // 2)),
    )
    agent = AtariR2d1Agent(model_kwargs=dict(dueling=dueling), eps_final=0.01)
    runner = MinibatchRlEval(
        algo=algo,
        agent=agent,
        sampler=sampler,
        n_steps=n_steps,
        seed=seed,
        log_interval_steps=int(min(250_000, max(n_steps // 4, 2_000))),
        affinity=dict(cuda_idx=cuda_idx),
    )
    config = dict(game=game, n_steps=n_steps, replay_size=replay_size, dueling=dueling)
    with logger_context("r2d1_atari", run_ID, f"r2d1_{game}", config, snapshot_mode="last"):
        return runner.train()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", default="pong")
    parser.add_argument("--n_steps", type=float, default=20_000)
    parser.add_argument("--replay_size", type=float, default=1e6)
    parser.add_argument("--dueling", action="store_true", help="dueling Q head")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--run_ID", type=int, default=0)
    parser.add_argument("--cuda_idx", type=int, default=None)
    args = parser.parse_args()
    build_and_train(args.game, int(args.n_steps), int(args.replay_size), args.dueling,
                    args.seed, args.run_ID, args.cuda_idx)
