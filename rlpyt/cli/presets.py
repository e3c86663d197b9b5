"""Default training configurations per algorithm for ``rlpyt train``.

Each preset names its classes by import path (imported only when used) and gives
keyword defaults known to learn the preset's default env.  Every value can be
overridden on the command line (``--algo.learning_rate 3e-4``).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field

__all__ = ["PRESETS", "Preset", "import_path"]


def import_path(path: str):
    """``"package.module:Name"`` -> the object."""
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


@dataclass
class Preset:
    """One algorithm's default run.

    Args:
        algo: import path of the algorithm class.
        agents: import path of the agent class per action kind ("discrete", "continuous").
        env: default env id.
        algo_kwargs, agent_kwargs, sampler_kwargs, runner_kwargs: keyword defaults.
        description: one line for ``rlpyt train --help``.
    """

    algo: str
    agents: dict
    env: str
    algo_kwargs: dict = field(default_factory=dict)
    agent_kwargs: dict = field(default_factory=dict)
    sampler_kwargs: dict = field(default_factory=dict)
    runner_kwargs: dict = field(default_factory=dict)
    description: str = ""


_PG_AGENTS = {
    "discrete": "rlpyt.agents.pg.categorical:CategoricalPgAgent",
    "continuous": "rlpyt.agents.pg.gaussian:GaussianPgAgent",
}

PRESETS: dict[str, Preset] = {
    "ppo": Preset(
        algo="rlpyt.algos.pg.ppo:PPO",
        agents=_PG_AGENTS,
        env="CartPole-v1",
        # Tuned for CartPole-v1 (solves it in about 60k-100k steps); a sound start elsewhere.
        algo_kwargs=dict(discount=0.98, gae_lambda=0.8, learning_rate=1e-3, ratio_clip=0.2,
                         epochs=20, minibatches=1, entropy_loss_coeff=0.0,
                         value_loss_coeff=0.5, clip_grad_norm=0.5, normalize_advantage=True),
        sampler_kwargs=dict(batch_T=32, batch_B=8, max_decorrelation_steps=0,
                            eval_n_envs=4, eval_max_trajectories=8),
        runner_kwargs=dict(n_steps=100_000, log_interval_steps=10_000),
        description="Proximal Policy Optimization (clipped surrogate, GAE)",
    ),
    "a2c": Preset(
        algo="rlpyt.algos.pg.a2c:A2C",
        agents=_PG_AGENTS,
        env="CartPole-v1",
        algo_kwargs=dict(discount=0.99, learning_rate=7e-4, entropy_loss_coeff=0.0,
                         value_loss_coeff=0.5, clip_grad_norm=0.5),
        sampler_kwargs=dict(batch_T=5, batch_B=8, max_decorrelation_steps=0,
                            eval_n_envs=4, eval_max_trajectories=8),
        runner_kwargs=dict(n_steps=500_000, log_interval_steps=25_000),
        description="Advantage Actor-Critic (synchronous A3C)",
    ),
}
