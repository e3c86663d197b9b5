"""Categorical DQN (C51, Bellemare et al. 2017) on Atari, serial sampling with evaluation.

``AtariCatDqnAgent`` outputs a distribution over 51 atoms in ``[V_min, V_max] =
[-10, 10]`` per action (clipped rewards keep returns inside); ``CategoricalDQN``
projects the n-step target distribution onto the atoms and minimises the
cross-entropy.  Settings of the paper: Adam with learning rate 2.5e-4 and epsilon
0.01 / 32.  Runs as written with a small ``--n_steps``; a Pong run wants ~10M steps.

    python examples/catdqn_atari.py --game pong --n_steps 20000
"""

from __future__ import annotations

import argparse

from rlpyt.agents.dqn.atari.atari_catdqn_agent import AtariCatDqnAgent
from rlpyt.algos.dqn.cat_dqn import CategoricalDQN
from rlpyt.envs.atari.atari_env import AtariEnv, AtariTrajInfo
from rlpyt.runners.minibatch_rl import MinibatchRlEval
from rlpyt.samplers.serial.sampler import SerialSampler
from rlpyt.utils.logging.context import logger_context


def build_and_train(game="pong", n_steps=20_000, replay_size=int(1e6), n_step_return=1,
                    seed=0, run_ID=0, cuda_idx=None):
    sampler = SerialSampler(
        EnvCls=AtariEnv,
        TrajInfoCls=AtariTrajInfo,
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
    algo = CategoricalDQN(
        V_min=-10,
        V_max=10,
        n_step_return=n_step_return,
        min_steps_learn=int(min(50_000, n_steps // 4)),
        replay_size=int(min(replay_size, max(n_steps, 10_000))),
        eps_steps=int(min(1e6, n_steps // 2)),
        optim_kwargs=dict(eps=0.01 / 32),
    )
    agent = AtariCatDqnAgent(n_atoms=51)
    runner = MinibatchRlEval(
        algo=algo,
        agent=agent,
        sampler=sampler,
        n_steps=n_steps,
        seed=seed,
        log_interval_steps=int(min(250_000, max(n_steps // 4, 1_000))),
        affinity=dict(cuda_idx=cuda_idx),
    )
    config = dict(game=game, n_steps=n_steps, n_step_return=n_step_return)
    with logger_context("catdqn_atari", run_ID, f"c51_{game}", config, snapshot_mode="last"):
        return runner.train()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", default="pong")
    parser.add_argument("--n_steps", type=float, default=20_000)
    parser.add_argument("--replay_size", type=float, default=1e6)
    parser.add_argument("--n_step_return", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--run_ID", type=int, default=0)
    parser.add_argument("--cuda_idx", type=int, default=None)
    args = parser.parse_args()
    build_and_train(args.game, int(args.n_steps), int(args.replay_size), args.n_step_return,
                    args.seed, args.run_ID, args.cuda_idx)
