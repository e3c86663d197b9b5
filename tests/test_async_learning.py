"""Algorithms learn under ``AsyncRl`` (marked ``learning``).

* DQN on CartPole-v1: a mean evaluation return of 475 within 150k env steps in at least
  2 of 3 seeds (the `dqn` preset's settings; seeds stop once they pass, and no further
  seed runs once the outcome is decided; ``make learning`` only).
* SAC on Pendulum-v1: -250 within 20k env steps in at least 2 of 3 seeds (the settings
  of ``examples/sac_pendulum.py``; ``make learning`` only).
* Impala on CartPole-v1: 475 within 300k env steps in at least 2 of 3 seeds (1 of 2 in
  ``make test``), the ``impala`` preset's algorithm.
* APPO on CartPole-v1: 475 within 200k env steps in at least 2 of 3 seeds (1 of 2 in
  ``make test``), the ``appo`` preset's algorithm and sampler.
* R2D2 (R2D1 with per-actor epsilons under ``AsyncRl``) on velocity-masked CartPole:
  400 within 300k env steps in 2 of 4 seeds (1 of 3 in ``make test``;
  ``examples/r2d2_masked_cartpole.py``).

A seed passes when it reaches its threshold and the mean of its last two evaluations
is at least 90% of it (for Pendulum's negative threshold, within 10% below it:
``helpers.EndOfRun``); its run ends two evaluations after it first reaches the
threshold.  Per-seed results are printed (``pytest -s``).
"""

from __future__ import annotations

import importlib.util
import pathlib
import time

import pytest
import torch
from helpers import EndOfRun, make_learning_only, seed_plan

from rlpyt.agents.dqn.dqn_agent import DqnAgent
from rlpyt.agents.qpg.sac_agent import SacAgent
from rlpyt.algos.dqn.dqn import DQN
from rlpyt.algos.qpg.sac import SAC
from rlpyt.cli.presets import PRESETS
from rlpyt.envs.gym import make
from rlpyt.runners.async_rl import AsyncRlEval
from rlpyt.samplers.async_.serial_sampler import AsyncSerialSampler
from rlpyt.utils.logging.context import logger_context

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"


def load_example(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def stop_at(end_of_run: EndOfRun):
    class StopAtThreshold(AsyncRlEval):
        def should_stop(self) -> bool:
            return end_of_run.should_stop(self.eval_history)

    return StopAtThreshold


def run_seeds(build, seeds, needed: int, threshold: float, tmp_path, name: str) -> None:
    """Train seeds until the outcome is decided; assert ``needed`` of them pass
    ``helpers.EndOfRun``."""
    torch.set_num_threads(1)
    end_of_run = EndOfRun(threshold)
    passes = failures = 0
    lines = []
    for seed in seeds:
        if passes >= needed or failures > len(seeds) - needed:
            break
        runner = build(seed, stop_at(end_of_run))
        start = time.perf_counter()
        with logger_context(str(tmp_path / str(seed)), seed, name, override_prefix=True):
            summary = runner.train()
        history = summary["eval_history"]
        passed = end_of_run.judge(history)["passed"]
        passes += passed
        failures += not passed
        lines.append(f"{end_of_run.describe(name, seed, history)}, "
                     f"{time.perf_counter() - start:.0f} s wall")
        print(lines[-1], flush=True)
    assert passes >= needed, "\n".join(lines)


@pytest.mark.learning
@make_learning_only("DQN's CartPole test under AsyncRl (test_dqn_learning.py trains the dqn "
                    "preset under MinibatchRl, and this module's R2D2 test trains from "
                    "AsyncRl's replay, in make test)")
def test_async_dqn_learns_cartpole(tmp_path):
    """Reaches 475 and holds it (mean of the next two evaluations >= 427.5) in 2 of 3
    seeds under ``make learning`` (1 of 2 in ``make test``: ``helpers.seed_plan``), with the `dqn` preset (double Q-learning, 3-step returns).  With the preset's
    earlier one-step plain targets seed 0 fell from 500 to 45 (CI run of 2026-11-25);
    with these, two runs on 2026-11-25 passed: seeds 0, 1 both held 500 (seed 2 not
    needed), then seeds 0 and 2 held 500 and seed 1 fell to 447, 220 (docs/notes/dqn_cartpole.md;
    asynchronous runs are not bit-reproducible)."""
    def build(seed, RunnerCls):
        sampler = AsyncSerialSampler(EnvCls=make, env_kwargs=dict(id="CartPole-v1"),
                                     batch_T=4, batch_B=8, max_decorrelation_steps=0,
                                     eval_n_envs=5, eval_max_trajectories=5)
        return RunnerCls(algo=DQN(**PRESETS["dqn"].algo_kwargs),
                         agent=DqnAgent(**PRESETS["dqn"].agent_kwargs), sampler=sampler,
                         n_steps=150_000, seed=seed, log_interval_steps=5_000)

    needed, seeds = seed_plan(full=(2, 3), quick=(1, 2))
    run_seeds(build, seeds=list(seeds), needed=needed, threshold=475, tmp_path=tmp_path,
              name="async dqn")


@pytest.mark.learning
@make_learning_only("SAC's Pendulum test under AsyncRl (test_qpg_learning.py trains SAC, and "
                    "test_async_dqn_learns_cartpole AsyncRl's replay path, in make test)")
def test_async_sac_learns_pendulum(tmp_path):
    """-250 reached and held in 2 of 3 seeds (``make learning`` only)."""
    config = load_example("sac_pendulum").CONFIG

    def build(seed, RunnerCls):
        sampler = AsyncSerialSampler(EnvCls=make, env_kwargs=config["env"],
                                     **config["sampler"])
        runner_kwargs = dict(config["runner"], n_steps=20_000)
        return RunnerCls(algo=SAC(**config["algo"]), agent=SacAgent(**config["agent"]),
                         sampler=sampler, seed=seed, **runner_kwargs)

    needed, seeds = seed_plan(full=(2, 3), quick=(1, 2))
    run_seeds(build, seeds=list(seeds), needed=needed, threshold=-250, tmp_path=tmp_path,
              name="async sac")


@pytest.mark.learning
@pytest.mark.timeout(2400)  # Up to 4 seeds of up to 300k steps on a busy machine.
def test_r2d2_learns_masked_cartpole(tmp_path):
    """Reaches 400 and holds it (mean of the next two evaluations >= 360) in 2 of 4 seeds
    under ``make learning``, 1 of 3 in ``make test`` (``examples/r2d2_masked_cartpole.py``:
    the ``r2d1`` preset's algorithm with per-actor epsilons).

    The outcome must not depend on the machine's load, which changes which parameters
    act on which batch.  With epsilons annealed over 5k steps and Adam at 5e-4 the rule
    failed most seeds, loaded or not; with the preset's 30k steps and 1e-3 about one
    seed in five fails it on a loaded machine, so each plan allows for that
    (docs/notes/r2d2_learning_rate.md)."""
    example = load_example("r2d2_masked_cartpole")

    def build(seed, RunnerCls):
        return example.build_runner(seed, n_steps=300_000, workers=0, RunnerCls=RunnerCls)

    needed, seeds = seed_plan(full=(2, 4), quick=(1, 3))
    run_seeds(build, seeds=list(seeds), needed=needed, threshold=400, tmp_path=tmp_path,
              name="r2d2")


@pytest.mark.learning
def test_impala_learns_cartpole_under_async_rl(tmp_path):
    """Impala's V-trace learner on batches from the sampler process (real policy lag,
    0-3 updates), with the ``impala`` preset's algorithm: reaches 475 and holds it
    (``EndOfRun``) in 2 of 3 seeds under ``make learning``, 1 of 2 in ``make test``
    (``helpers.seed_plan``).

    Before the preset's ``reward_scale=0.1`` a solved CartPole fell back in about half
    the seeds (CI of 2026-11-27: seed 0 from 500 to 194, seed 1 from 468 to 180 for the
    rest of its run).  With it, measured 2026-11-27 (300k steps, seeds 0-4): first 475 at
    60k-100k steps, lowest evaluation after it 477, budget end 500 in 5 of 5
    (docs/notes/impala_cartpole.md)."""
    from rlpyt.agents.pg.categorical import CategoricalPgAgent
    from rlpyt.algos.pg.impala import Impala

    def build(seed, RunnerCls):
        sampler = AsyncSerialSampler(EnvCls=make, env_kwargs=dict(id="CartPole-v1"),
                                     batch_T=16, batch_B=8, max_decorrelation_steps=0,
                                     eval_n_envs=5, eval_max_trajectories=5)
        return RunnerCls(algo=Impala(**PRESETS["impala"].algo_kwargs),
                         agent=CategoricalPgAgent(), sampler=sampler, n_steps=300_000,
                         seed=seed, log_interval_steps=20_000)

    needed, seeds = seed_plan(full=(2, 3), quick=(1, 2))
    run_seeds(build, seeds=list(seeds), needed=needed, threshold=475, tmp_path=tmp_path,
              name="async impala")


@pytest.mark.learning
def test_appo_learns_cartpole_under_async_rl(tmp_path):
    """APPO's epochs of clipped steps on batches from the sampler process (a lag of
    about two batches), with the ``appo`` preset: reaches 475 and holds it
    (``EndOfRun``) in 2 of 3 seeds under ``make learning``, 1 of 2 in ``make test``
    (docs/notes/appo.md has the runs)."""
    from rlpyt.agents.pg.categorical import CategoricalPgAgent
    from rlpyt.algos.pg.appo import APPO

    preset = PRESETS["appo"]

    def build(seed, RunnerCls):
        sampler = AsyncSerialSampler(EnvCls=make, env_kwargs=dict(id="CartPole-v1"),
                                     **dict(preset.sampler_kwargs, eval_n_envs=5,
                                            eval_max_trajectories=5))
        return RunnerCls(algo=APPO(**preset.algo_kwargs), agent=CategoricalPgAgent(),
                         sampler=sampler, n_steps=200_000, seed=seed,
                         log_interval_steps=10_000)

    needed, seeds = seed_plan(full=(2, 3), quick=(1, 2))
    run_seeds(build, seeds=list(seeds), needed=needed, threshold=475, tmp_path=tmp_path,
              name="async appo")
