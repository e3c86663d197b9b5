"""DQN, Rainbow-style DQN and Categorical DQN learn CartPole-v1 (mean eval >= 475) and
hold it at the end of their runs.

Each variant trains its seeds for at most 100k env steps each, evaluating 5 episodes
every 5k steps; a seed passes when it reaches a mean evaluation return of 475 and the
mean of its last two evaluations is at least 427.5 (``helpers.EndOfRun``).  At least 4
of 5 seeds must pass in ``make learning``; ``make test`` asks for 1 of 2 (seed 1 runs
only if seed 0 fails: ``helpers.seed_plan``, CI's time budget).  To keep CI cheap a seed's run ends two evaluations after it
first reaches 475, and no further seeds run once the outcome is decided.  Per-seed results are printed (``-s``) and listed in the failure message.
"""

from __future__ import annotations

import contextlib
import io
import time

import pytest
import torch
from helpers import EndOfRun, k_of_n, make_learning_only, seed_plan

from rlpyt.agents.dqn.catdqn_agent import CatDqnAgent
from rlpyt.agents.dqn.dqn_agent import DqnAgent
from rlpyt.algos.dqn.cat_dqn import CategoricalDQN
from rlpyt.algos.dqn.dqn import DQN
from rlpyt.cli.presets import PRESETS
from rlpyt.envs.gym import make
from rlpyt.runners.minibatch_rl import MinibatchRlEval
from rlpyt.samplers.serial.sampler import SerialSampler
from rlpyt.utils.logging.context import logger_context

THRESHOLD = 475
N_STEPS = 100_000
EVAL_INTERVAL = 5_000
MIN_PASSES, SEEDS = seed_plan(full=(4, 5), quick=(1, 2))

SAMPLER = dict(batch_T=4, batch_B=8, max_decorrelation_steps=0, eval_n_envs=5,
               eval_max_trajectories=5)
# The `dqn` preset: the CartPole settings of examples/dqn_cartpole.py with double
# Q-learning and 3-step returns, which keep a solved CartPole solved.  Measured
# 2026-11-25 with bench/results/final_returns.py (seeds 0-4, 100k steps, the two evaluations
# after the first >= 475): one-step plain DQN (184, 500), (500, 500), (500, 500),
# (500, 140), (500, 500): 3 of 5 pass this file's rule; with double and 3-step (500, 500),
# (500, 500), (229, 500), (500, 500), (500, 500): 4 of 5
# (docs/notes/dqn_cartpole.md), which is also what the full plan asks: no margin.  With Adam at
# 5e-4 (the preset since 2026-11-27): 5 of 5, and 5 of 5 at 500 at the end of 100k steps.
DQN_KWARGS = PRESETS["dqn"].algo_kwargs
AGENT_KWARGS = PRESETS["dqn"].agent_kwargs

VARIANTS = {
    "dqn": (DQN, DqnAgent, DQN_KWARGS, AGENT_KWARGS),
    "double_dueling_prioritized_3step": (
        DQN,
        DqnAgent,
        dict(DQN_KWARGS, double_dqn=True, prioritized_replay=True, n_step_return=3,
             pri_beta_steps=N_STEPS),
        dict(AGENT_KWARGS, model_kwargs=dict(AGENT_KWARGS["model_kwargs"], dueling=True)),
    ),
    "categorical": (CategoricalDQN, CatDqnAgent, PRESETS["cat_dqn"].algo_kwargs,
                    PRESETS["cat_dqn"].agent_kwargs),
}


# Every variant's end of run is judged.  Categorical DQN held the 427.5 bar in only 2 of
# 5 seeds in the CI run of 2026-11-25 with one-step plain targets; its preset took double
# Q-learning and 3-step returns as DQN's did, and then held in 5 of 5 (above; the two
# evaluations after the first >= 475 were 500 in every seed).
SOLVED = {name: EndOfRun(THRESHOLD) for name in VARIANTS}


def train_seed(AlgoCls, AgentCls, algo_kwargs, agent_kwargs, seed, log_dir,
               solved: EndOfRun) -> list:
    class StopWhenSolved(MinibatchRlEval):
        def should_stop(self) -> bool:
            return solved.should_stop(self.eval_history)

    sampler = SerialSampler(EnvCls=make, env_kwargs=dict(id="CartPole-v1"), **SAMPLER)
    runner = StopWhenSolved(algo=AlgoCls(**algo_kwargs), agent=AgentCls(**agent_kwargs),
                            sampler=sampler, n_steps=N_STEPS, seed=seed,
                            log_interval_steps=EVAL_INTERVAL)
    start = time.process_time()
    with contextlib.redirect_stdout(io.StringIO()), logger_context(
            str(log_dir), seed, "dqn_cartpole", override_prefix=True):
        runner.train()
    print(f"seed {seed}: {time.process_time() - start:.0f} s CPU", flush=True)
    return runner.eval_history


@pytest.mark.learning
@pytest.mark.parametrize("variant", [
    pytest.param(name, marks=make_learning_only(
        "DQN's CartPole test with double Q-learning, dueling heads and prioritized replay, "
        "each unit-tested")) if name == "double_dueling_prioritized_3step" else name
    for name in sorted(VARIANTS)])
def test_dqn_variant_learns_cartpole(variant, tmp_path):
    torch.set_num_threads(1)
    AlgoCls, AgentCls, algo_kwargs, agent_kwargs = VARIANTS[variant]
    k_of_n(lambda seed: train_seed(AlgoCls, AgentCls, algo_kwargs, agent_kwargs, seed,
                                   tmp_path / str(seed), SOLVED[variant]),
           list(SEEDS), MIN_PASSES, SOLVED[variant], variant)


def test_presets_hold_the_tested_settings():
    """The `dqn`/`cat_dqn` presets train what this file tests (on the same sampler)."""
    for name in ("dqn", "cat_dqn"):
        sampler = PRESETS[name].sampler_kwargs
        assert {k: sampler[k] for k in SAMPLER} == SAMPLER
