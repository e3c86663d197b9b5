"""DDPG, TD3 and SAC learn Pendulum-v1 (marked ``learning``; a few CPU-minutes in total).

Each test trains its seeds one after another with the settings of
``examples/<algo>_pendulum.py``, evaluating 10 episodes (deterministic policy) every
1000 env steps.  A seed passes when an evaluation reaches a mean return of -250 and the
mean of its last two evaluations is at least -275 (``helpers.EndOfRun``); its run ends
two evaluations after it first reaches -250, and no further seed runs once the outcome
is decided.  SAC and TD3 need 2 of 3 seeds under ``make learning`` and 1 of 2 in ``make
test`` (``helpers.seed_plan``: CI's time budget); DDPG 1 of 2 in both.  Per-seed results are printed (``pytest
-s`` shows them).
"""

from __future__ import annotations

import importlib.util
import pathlib
import time

import pytest
import torch
from helpers import EndOfRun, k_of_n, seed_plan

from rlpyt.runners.minibatch_rl import MinibatchRlEval
from rlpyt.utils.logging.context import logger_context

THRESHOLD = -250.0
SOLVED = EndOfRun(THRESHOLD)
EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"


def load_example(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class StopAtThreshold(MinibatchRlEval):
    """Ends the run two evaluations after the first at or above ``THRESHOLD``."""

    def should_stop(self) -> bool:
        return SOLVED.should_stop(self.eval_history)


def run_seed(example, seed: int, log_dir) -> dict:
    runner = example.build_runner(seed, RunnerCls=StopAtThreshold)
    start_cpu, start_wall = time.process_time(), time.perf_counter()
    with logger_context(str(log_dir), seed, "learning", override_prefix=True):
        runner.train()
    return dict(history=runner.eval_history, cpu_s=time.process_time() - start_cpu,
                wall_s=time.perf_counter() - start_wall)


def check_learns(name: str, seeds, needed: int, tmp_path) -> None:
    """Seeds in order until the outcome is decided (``helpers.k_of_n``); each seed's line
    adds its CPU and wall time."""
    example = load_example(f"{name}_pendulum")
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(1)

    def train_seed(seed):
        result = run_seed(example, seed, tmp_path / f"seed_{seed}")
        print(f"{name} seed {seed}: {result['cpu_s']:.0f} CPU s, {result['wall_s']:.0f} s wall "
              f"(budget {example.CONFIG['runner']['n_steps']} steps)", flush=True)
        return result["history"]

    try:
        k_of_n(train_seed, seeds, needed, SOLVED, name)
    finally:
        torch.set_num_threads(previous_threads)


@pytest.mark.learning
def test_sac_learns_pendulum(tmp_path):
    needed, seeds = seed_plan(full=(2, 3), quick=(1, 2))
    check_learns("sac", seeds=seeds, needed=needed, tmp_path=tmp_path)


@pytest.mark.learning
def test_td3_learns_pendulum(tmp_path):
    needed, seeds = seed_plan(full=(2, 3), quick=(1, 2))
    check_learns("td3", seeds=seeds, needed=needed, tmp_path=tmp_path)


@pytest.mark.learning
def test_ddpg_learns_pendulum(tmp_path):
    check_learns("ddpg", seeds=[0, 1], needed=1, tmp_path=tmp_path)
