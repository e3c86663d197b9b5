"""DQN on Atari (Pong by default): serial sampling with periodic evaluation.

The classic setup of Mnih et al. 2015 in rlpyt terms: ``AtariDqnAgent`` (Nature conv
net), ``DQN`` with Huber loss, Adam, replay ratio 8 (one update of 32 per 4 env
steps), target copy every 312 updates, epsilon 1 -> 0.01 over the first 1M steps.
The replay stores each 104x80 frame once (uint8 frame stacks pick the frame buffer
automatically): 1M transitions take about 8.3 GB, so the buffer is capped at
``n_steps`` for short runs.  Pong needs about 10M steps to be won; this script runs
as written with a small ``--n_steps`` for a smoke test.

    python examples/dqn_atari.py --game pong --n_steps 20000
    python examples/dqn_atari.py --game breakout --double --dueling --prioritized
"""

from __future__ import annotations

import argparse

from rlpyt.agents.dqn.atari.atari_dqn_agent import AtariDqnAgent
from rlpyt.algos.dqn.dqn import DQN
from rlpyt.envs.atari.atari_env import AtariEnv, AtariTrajInfo
from rlpyt.runners.minibatch_rl import MinibatchRlEval
from rlpyt.samplers.serial.sampler import SerialSampler
from rlpyt.utils.logging.context import logger_context


def build_and_train(game="pong", n_steps=20_000, replay_size=int(1e6), double=False,
                    dueling=False, prioritized=False, seed=0, run_ID=0, cuda_idx=None):
    sampler = SerialSampler(
        EnvCls=AtariEnv,
        TrajInfoCls=AtariTrajInfo,  # Adds GameScore (the unclipped score) to the logs.
        env_kwargs=dict(game=game),
        # Evaluation games end at the usual 27k-step horizon, or sooner in short runs.
        eval_env_kwargs=dict(game=game, horizon=int(min(27_000, max(n_steps // 4, 100)))),
        batch_T=4,
        batch_B=1,
        max_decorrelation_steps=0,
        eval_n_envs=2,
        eval_max_steps=int(min(125_000, max(2_000, n_steps // 4))),
        eval_max_trajectories=5,
    )
    min_steps_learn = int(min(50_000, n_steps // 4))
    algo = DQN(
        min_steps_learn=min_steps_learn,
        replay_size=int(min(replay_size, max(n_steps, 10_000))),
        eps_steps=int(min(1e6, n_steps // 2)),
        double_dqn=double,
        prioritized_replay=prioritized,
        optim_kwargs=dict(eps=0.01 / 32),  # Adam epsilon of Dopamine / classic rlpyt.
    )
    agent = AtariDqnAgent(model_kwargs=dict(dueling=dueling))
    runner = MinibatchRlEval(
        algo=algo,
        agent=agent,
        sampler=sampler,
        n_steps=n_steps,
        seed=seed,
        log_interval_steps=int(min(250_000, max(n_steps // 4, 1_000))),
        affinity=dict(cuda_idx=cuda_idx),
    )
    config = dict(game=game, n_steps=n_steps, double=double, dueling=dueling,
                  prioritized=prioritized)
    with logger_context("dqn_atari", run_ID, f"dqn_{game}", config, snapshot_mode="last"):
        return runner.train()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", default="pong")
    parser.add_argument("--n_steps", type=float, default=20_000)
    parser.add_argument("--replay_size", type=float, default=1e6)
    parser.add_argument("--double", action="store_true", help="double DQN")
    parser.add_argument("--dueling", action="store_true", help="dueling Q head")
    parser.add_argument("--prioritized", action="store_true", help="prioritized replay")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--run_ID", type=int, default=0)
    parser.add_argument("--cuda_idx", type=int, default=None)
    args = parser.parse_args()
    build_and_train(args.game, int(args.n_steps), int(args.replay_size), args.double,
                    args.dueling, args.prioritized, args.seed, args.run_ID, args.cuda_idx)
