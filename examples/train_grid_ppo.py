"""One PPO run of a grid, as started by the experiment launcher.

Called as::

    python train_grid_ppo.py <slot_affinity_code> <log_dir> <run_ID> [--n-steps N]

The launcher saved this setting's variant in ``<log_dir>/variant_config.json``; it is
merged into ``DEFAULT_CONFIG`` (a key the default lacks is an error), the run is
seeded with its run ID, and everything is logged to ``<log_dir>/run_<run_ID>/``.
See ``examples/grid_ppo.py`` for the grid that launches it.
"""

from __future__ import annotations

import argparse

from rlpyt.agents.pg.categorical import CategoricalPgAgent
from rlpyt.algos.pg.ppo import PPO
from rlpyt.envs.gym import make as gym_make
from rlpyt.runners.minibatch_rl import MinibatchRl
from rlpyt.samplers.serial.sampler import SerialSampler
from rlpyt.utils.launching.affinity import affinity_from_code
from rlpyt.utils.launching.variant import load_variant, update_config
from rlpyt.utils.logging.context import logger_context

DEFAULT_CONFIG = dict(
    env=dict(id="CartPole-v1"),
    sampler=dict(batch_T=128, batch_B=4),
    algo=dict(learning_rate=1e-3, minibatches=4, epochs=4),
    runner=dict(n_steps=50_000, log_interval_steps=5_000),
)


def build_and_train(slot_affinity_code: str, log_dir: str, run_ID: int, n_steps: int | None):
    affinity = affinity_from_code(slot_affinity_code)
    config = update_config(DEFAULT_CONFIG, load_variant(log_dir))
    if n_steps is not None:  # Command-line override, e.g. for a quick smoke run.
        config["runner"]["n_steps"] = n_steps
        config["runner"]["log_interval_steps"] = min(config["runner"]["log_interval_steps"],
                                                     n_steps)
    sampler = SerialSampler(EnvCls=gym_make, env_kwargs=config["env"], **config["sampler"])
    runner = MinibatchRl(
        algo=PPO(**config["algo"]),
        agent=CategoricalPgAgent(),
        sampler=sampler,
        seed=run_ID,
        affinity=affinity,
        **config["runner"],
    )
    name = f"ppo_{config['env']['id']}"
    with logger_context(log_dir, run_ID, name, config):
        runner.train()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("slot_affinity_code")
    parser.add_argument("log_dir")
    parser.add_argument("run_ID", type=int)
    parser.add_argument("--n-steps", type=int, default=None, help="override runner n_steps")
    args = parser.parse_args()
    build_and_train(args.slot_affinity_code, args.log_dir, args.run_ID, args.n_steps)


if __name__ == "__main__":
    main()
