"""DQN on CartPole-v1 with settings that learn it reliably (mean eval 500 in 10k-35k steps).

Peer libraries' DQN defaults fail CartPole about one seed in three at 50k steps.
What makes these settings robust (from a sweep over 5 seeds per setting):

* **many updates per env step**: ``replay_ratio=32`` with ``batch_size=64`` is one
  gradient step per 2 env steps; every seed reached 475 within 10k-35k steps.  One step
  per 4 env steps (``replay_ratio=16``, or ``batch_size=128``) also passed every seed,
  but took 35k-75k steps; one per 8 env steps (with learning rates 5e-4 or 1e-3 and
  several target settings) passed only 3 of 15 seeds within 100k;
* a hard target copy every 100 updates (200 env steps), Adam at 1e-3, Huber loss,
  gradient clipping at 10, a 128-128 ReLU MLP;
* epsilon from 1 to 0.02 over the first 10k steps, learning from step 1,000;
* ``bootstrap_timelimit=True`` (the default): the 500-step time limit is a
  truncation, not a failure, so the value of a balanced pole stays 1 / (1 - 0.99).

The ``rlpyt train --algo dqn`` preset is these settings with ``--double
--n_step_return 3 --learning_rate 5e-4``: with plain one-step targets a solved CartPole
falls back from 500 now and then; double Q-learning and 3-step returns make that rarer,
and the smaller step keeps it solved (5 of 5 seeds at 500 at the end of 100k steps;
docs/notes/dqn_cartpole.md).  ``tests/test_dqn_learning.py`` checks the preset (at
least 4 of 5 seeds reach a mean evaluation of 475 within 100k steps and hold it over
the next two evaluations), also with dueling + prioritized replay added, and Categorical
DQN with the support [0, 100].

    python examples/dqn_cartpole.py --n_steps 50000
    python examples/dqn_cartpole.py --double --n_step_return 3 --learning_rate 5e-4  # the preset
    python examples/dqn_cartpole.py --double --dueling --prioritized --n_step_return 3
"""

from __future__ import annotations

import argparse

from rlpyt.agents.dqn.dqn_agent import DqnAgent
from rlpyt.algos.dqn.dqn import DQN
from rlpyt.envs.gym import make
from rlpyt.runners.minibatch_rl import MinibatchRlEval
from rlpyt.samplers.serial.sampler import SerialSampler
from rlpyt.utils.logging.context import logger_context


def build_and_train(n_steps=100_000, double=False, dueling=False, prioritized=False,
                    n_step_return=1, seed=0, run_ID=0, learning_rate=1e-3):
    sampler = SerialSampler(
        EnvCls=make,
        env_kwargs=dict(id="CartPole-v1"),
        batch_T=4,
        batch_B=8,
        max_decorrelation_steps=0,
        eval_n_envs=5,
        eval_max_trajectories=5,
    )
    algo = DQN(
        discount=0.99,
        batch_size=64,
        min_steps_learn=1_000,
        replay_size=100_000,
        replay_ratio=32,  # 64 * updates / env steps = 32: one update per 2 env steps.
        target_update_interval=100,
        learning_rate=learning_rate,
        eps_steps=10_000,
        delta_clip=1.0,
        clip_grad_norm=10.0,
        double_dqn=double,
        prioritized_replay=prioritized,
        pri_beta_steps=n_steps,
        n_step_return=n_step_return,
    )
    agent = DqnAgent(eps_final=0.02, model_kwargs=dict(hidden_sizes=[128, 128], dueling=dueling))
    runner = MinibatchRlEval(algo=algo, agent=agent, sampler=sampler, n_steps=n_steps,
                             seed=seed, log_interval_steps=min(5_000, n_steps))
    config = dict(n_steps=n_steps, double=double, dueling=dueling, prioritized=prioritized,
                  n_step_return=n_step_return, learning_rate=learning_rate)
    with logger_context("dqn_cartpole", run_ID, "dqn_cartpole", config):
        return runner.train()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n_steps", type=float, default=100_000)
    parser.add_argument("--double", action="store_true", help="double DQN")
    parser.add_argument("--dueling", action="store_true", help="dueling Q head")
    parser.add_argument("--prioritized", action="store_true", help="prioritized replay")
    parser.add_argument("--n_step_return", type=int, default=1)
    parser.add_argument("--learning_rate", type=float, default=1e-3, help="Adam's step size")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--run_ID", type=int, default=0)
    args = parser.parse_args()
    summary = build_and_train(int(args.n_steps), args.double, args.dueling, args.prioritized,
                              args.n_step_return, args.seed, args.run_ID, args.learning_rate)
    print(f"final mean eval return: {summary['final_eval_return']:.1f}")
