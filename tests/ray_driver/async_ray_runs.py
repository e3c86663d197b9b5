"""Asynchronous runs on ``AsyncRaySampler`` for ``test_ray_sampler.py``, each started in a
process of its own: ``python async_ray_runs.py KIND ADDRESS LOG_DIR``.

The test process is a Ray driver (the module's cluster), and ``AsyncRl`` forks its
sampler process, which must not inherit a Ray connection (``AsyncRaySampler`` refuses
to start in a connected process); so every async run happens in a fresh process that
joins the cluster at ``ADDRESS`` from its sampler process.

KIND ``faulty``: ``AsyncRl`` with an env of actor 1 raising at its 6th step; exits with
the ``AsyncRunError``'s traceback.  KIND ``impala-SEED``: ``Impala`` on CartPole-v1 under
``AsyncRlEval``, stopped by ``helpers.EndOfRun``; prints ``EVAL_HISTORY <json>``.
KIND ``r2d2-SEED``: R2D2 on velocity-masked CartPole (``examples/r2d2_masked_cartpole.py``),
likewise.
"""

from __future__ import annotations

import json
import sys

import torch

from rlpyt.agents.pg.categorical import CategoricalPgAgent
from rlpyt.algos.pg.impala import Impala
from rlpyt.cli.presets import PRESETS
from rlpyt.envs.gym import make
from rlpyt.runners.async_rl import AsyncRl, AsyncRlEval
from rlpyt.samplers.ray_.async_sampler import AsyncRaySampler
from rlpyt.utils.logging.context import logger_context

IMPALA_THRESHOLD = 475  # tests/test_async_learning.py's, within the same 300k steps.
R2D2_THRESHOLD = 400  # Likewise.


def faulty(address: str, log_dir: str) -> None:
    from test_sampler_faults import SEED, FaultyEnv

    from rlpyt.utils.seed import env_seeds

    seeds = env_seeds(SEED, 4 + 1)  # The sampler's layout: 4 envs, the example env.
    sampler = AsyncRaySampler(EnvCls=FaultyEnv, env_kwargs=dict(fail_seed=seeds[3], fail_step=6),
                              batch_T=4, batch_B=4, max_decorrelation_steps=0, n_actors=2,
                              ray_address=address, restart_timeout=60)
    runner = AsyncRl(algo=Impala(), agent=CategoricalPgAgent(), sampler=sampler, n_steps=160,
                     seed=SEED, log_interval_steps=16)
    with logger_context(log_dir, 0, "faulty", override_prefix=True):
        runner.train()


def impala(address: str, log_dir: str, seed: int) -> None:
    from helpers import EndOfRun

    end_of_run = EndOfRun(IMPALA_THRESHOLD)

    class StopAtThreshold(AsyncRlEval):
        def should_stop(self) -> bool:
            return end_of_run.should_stop(self.eval_history)

    sampler = AsyncRaySampler(EnvCls=make, env_kwargs=dict(id="CartPole-v1"), batch_T=16,
                              batch_B=8, max_decorrelation_steps=0, eval_n_envs=4,
                              eval_max_trajectories=4, n_actors=2, ray_address=address)
    runner = StopAtThreshold(algo=Impala(**PRESETS["impala"].algo_kwargs),
                             agent=CategoricalPgAgent(),
                             sampler=sampler, n_steps=300_000, seed=seed,
                             log_interval_steps=20_000)
    with logger_context(log_dir, seed, "impala", override_prefix=True):
        summary = runner.train()
    print("EVAL_HISTORY " + json.dumps(summary["eval_history"]), flush=True)


def r2d2(address: str, log_dir: str, seed: int) -> None:
    """``examples/r2d2_masked_cartpole.py`` on 2 Ray actors, stopped by
    ``helpers.EndOfRun`` two evaluations after ``tests/test_async_learning.py``'s R2D2
    threshold (400).  The
    example is loaded by path and not registered as a module, so Ray pickles its env
    class by value for the actors."""
    import importlib.util
    import pathlib

    from helpers import EndOfRun

    path = pathlib.Path(__file__).resolve().parents[2] / "examples" / "r2d2_masked_cartpole.py"
    spec = importlib.util.spec_from_file_location("r2d2_masked_cartpole_example", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    end_of_run = EndOfRun(R2D2_THRESHOLD)

    class StopAtThreshold(AsyncRlEval):
        def should_stop(self) -> bool:
            return end_of_run.should_stop(self.eval_history)

    runner = example.build_runner(seed, n_steps=300_000, RunnerCls=StopAtThreshold,
                                  ray_actors=2, ray_address=address)
    with logger_context(log_dir, seed, "r2d2", override_prefix=True):
        summary = runner.train()
    print("EVAL_HISTORY " + json.dumps(summary["eval_history"]), flush=True)


def main(kind: str, address: str, log_dir: str) -> None:
    torch.set_num_threads(1)
    name, _, seed = kind.partition("-")
    if kind == "faulty":
        faulty(address, log_dir)
    elif name == "impala":
        impala(address, log_dir, int(seed))
    elif name == "r2d2":
        r2d2(address, log_dir, int(seed))
    else:
        raise SystemExit(f"unknown run {kind!r}: faulty, impala-SEED or r2d2-SEED")


if __name__ == "__main__":
    main(*sys.argv[1:])
