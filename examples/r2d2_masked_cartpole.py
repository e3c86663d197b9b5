"""R2D2 (Kapturowski et al. 2019) on velocity-masked CartPole: R2D1 under ``AsyncRl``.

R2D2 is the recurrent replay distributed DQN: many actors, each with its own fixed
exploration rate, feed one prioritized sequence replay from which a single learner
trains a recurrent Q-network.  In rlpyt that is the ``R2D1`` algorithm (stored
recurrent state, burn-in of ``warmup_T`` steps, n-step double-Q targets with value
rescaling, prioritized sequence replay) run by ``AsyncRl``: the sampler process steps
the actors' envs while the optimizer trains, and the replay ratio is held both ways.

Per-actor epsilons follow the paper (and Ape-X, Horgan et al. 2018):
``eps_i = 0.4 ** (1 + 7 * i / (N - 1))`` for env ``i`` of ``N``, which is a log-spaced
range from ``0.4 ** 8`` to ``0.4`` (``eps_final_min`` to ``eps_final``).  Every actor
explores uniformly (epsilon 1) until learning starts, then falls linearly to its own
value over the ``r2d1`` preset's ``eps_steps``.  The algorithm's settings are the
``r2d1`` preset's (5-step targets copied every 25 updates, Adam at 1e-3, epsilons
annealed over 30k steps: docs/notes/r2d2_learning_rate.md).

    python examples/r2d2_masked_cartpole.py --n_steps 300000 --workers 2
    python examples/r2d2_masked_cartpole.py --ray_actors 4 --ray_address auto   # on Ray
"""

from __future__ import annotations

import argparse

import gymnasium as gym
import numpy as np

from rlpyt.agents.dqn.r2d1_agent import R2d1Agent
from rlpyt.algos.dqn.r2d1 import R2D1
from rlpyt.cli.presets import PRESETS
from rlpyt.envs.gym import GymEnvWrapper
from rlpyt.runners.async_rl import AsyncRlEval
from rlpyt.samplers.async_.cpu_sampler import AsyncCpuSampler
from rlpyt.samplers.async_.serial_sampler import AsyncSerialSampler
from rlpyt.utils.launching.affinity import make_affinity
from rlpyt.utils.logging.context import logger_context

EPS_BASE, EPS_ALPHA = 0.4, 7.0  # The paper's per-actor epsilons.


class VelocityMask(gym.ObservationWrapper):
    """Zero CartPole's velocity entries (observation indices 1 and 3)."""

    def observation(self, observation):
        masked = np.array(observation, dtype=np.float32)
        masked[[1, 3]] = 0.0
        return masked


def make_masked_cartpole(**kwargs):
    return GymEnvWrapper(VelocityMask(gym.make("CartPole-v1", **kwargs)))


def build_runner(seed=0, n_steps=300_000, workers=0, RunnerCls=AsyncRlEval, n_envs=16,
                 ray_actors=0, ray_address=None):
    """``workers=0`` steps the actors' envs in the sampler process itself; ``ray_actors``
    > 0 steps them on that many Ray actors instead (``AsyncRaySampler`` joining
    ``ray_address``, see docs/distributed.md)."""
    sampler_kwargs = dict(EnvCls=make_masked_cartpole, env_kwargs={}, batch_T=20,
                          batch_B=n_envs, max_decorrelation_steps=0, eval_n_envs=4,
                          eval_max_trajectories=8)
    affinity = None
    if ray_actors:
        from rlpyt.samplers.ray_.async_sampler import AsyncRaySampler

        sampler = AsyncRaySampler(**sampler_kwargs, n_actors=ray_actors,
                                  ray_address=ray_address)
    elif workers:
        sampler = AsyncCpuSampler(**sampler_kwargs)
        affinity = make_affinity(n_cpu_core=workers + 1, cpu_per_run=workers + 1,
                                 async_sample=True, set_affinity=False)
    else:
        sampler = AsyncSerialSampler(**sampler_kwargs)
    # The r2d1 preset's settings hold a solved task under AsyncRl, loaded or not
    # (docs/notes/r2d2_learning_rate.md).
    algo = R2D1(**PRESETS["r2d1"].algo_kwargs)
    agent = R2d1Agent(eps_init=1.0, eps_final=EPS_BASE,
                      eps_final_min=EPS_BASE ** (1 + EPS_ALPHA))
    return RunnerCls(algo=algo, agent=agent, sampler=sampler, n_steps=n_steps, seed=seed,
                     affinity=affinity, log_interval_steps=10_000)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n_steps", type=float, default=300_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=0,
                        help="sampler worker processes (0: envs in the sampler process)")
    parser.add_argument("--ray_actors", type=int, default=0,
                        help="Ray actors stepping the envs (AsyncRaySampler; 0: not on Ray)")
    parser.add_argument("--ray_address", default=None,
                        help="the Ray cluster of --ray_actors ('auto', 'HOST:PORT'; "
                             "default: Ray's own choice, see docs/distributed.md)")
    args = parser.parse_args()
    runner = build_runner(args.seed, int(args.n_steps), args.workers,
                          ray_actors=args.ray_actors, ray_address=args.ray_address)
    with logger_context("r2d2_masked_cartpole", args.seed, "r2d2", vars(args)):
        summary = runner.train()
    print("evaluations (env steps, mean return):", summary["eval_history"])
