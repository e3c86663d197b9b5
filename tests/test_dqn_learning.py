"""DQN, Rainbow-style DQN and Categorical DQN learn CartPole-v1 (mean eval >= 475).

Each variant trains up to 5 seeds for at most 100k env steps, evaluating 5 episodes
every 5k steps, and must reach a mean evaluation return of 475 in at least 4 of them.
To keep CI cheap a seed stops as soon as it passes, and no further seeds run once the
outcome is decided (4 passes, or 2 failures).  Per-seed results are printed (``-s``)
and listed in the failure message.
"""

from __future__ import annotations

import contextlib
import io
import time

import pytest
import torch

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
SEEDS = range(5)
MIN_PASSES = 4

SAMPLER = dict(batch_T=4, batch_B=8, max_decorrelation_steps=0, eval_n_envs=5,
               eval_max_trajectories=5)
# The robust CartPole settings of examples/dqn_cartpole.py and the `dqn` preset.
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


class _Solved(Exception):
    """Raised after an evaluation reaches the threshold, to stop the run early."""


class _StopWhenSolved(MinibatchRlEval):
    def _log_itr(self, itr):
        super()._log_itr(itr)
        if self.eval_history[-1][1] >= THRESHOLD:
            raise _Solved


def train_seed(AlgoCls, AgentCls, algo_kwargs, agent_kwargs, seed, log_dir) -> list:
    sampler = SerialSampler(EnvCls=make, env_kwargs=dict(id="CartPole-v1"), **SAMPLER)
    runner = _StopWhenSolved(algo=AlgoCls(**algo_kwargs), agent=AgentCls(**agent_kwargs),
                             sampler=sampler, n_steps=N_STEPS, seed=seed,
                             log_interval_steps=EVAL_INTERVAL)
    with contextlib.redirect_stdout(io.StringIO()), logger_context(
            str(log_dir), seed, "dqn_cartpole", override_prefix=True):
        try:
            runner.train()
        except _Solved:
            pass  # train() shut the sampler down on the way out.
    return runner.eval_history


@pytest.mark.learning
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_dqn_variant_learns_cartpole(variant, tmp_path):
    torch.set_num_threads(1)
    AlgoCls, AgentCls, algo_kwargs, agent_kwargs = VARIANTS[variant]
    passes, failures, lines = 0, 0, []
    for seed in SEEDS:
        if passes >= MIN_PASSES or failures > len(SEEDS) - MIN_PASSES:
            lines.append(f"{variant} seed {seed}: not run (outcome already decided)")
            print(lines[-1], flush=True)
            continue
        start = time.process_time()
        history = train_seed(AlgoCls, AgentCls, algo_kwargs, agent_kwargs, seed,
                             tmp_path / str(seed))
        solved_at = next((steps for steps, ret in history if ret >= THRESHOLD), None)
        passes += solved_at is not None
        failures += solved_at is None
        best = max(ret for _, ret in history)
        outcome = f"reached {THRESHOLD} at {solved_at} steps" if solved_at else "FAILED"
        lines.append(f"{variant} seed {seed}: {outcome} (best eval {best:.0f}, "
                     f"{time.process_time() - start:.0f} s CPU)")
        print(lines[-1], flush=True)
    assert passes >= MIN_PASSES, "\n".join(lines)


def test_presets_hold_the_tested_settings():
    """The `dqn`/`cat_dqn` presets train what this file tests (on the same sampler)."""
    for name in ("dqn", "cat_dqn"):
        sampler = PRESETS[name].sampler_kwargs
        assert {k: sampler[k] for k in SAMPLER} == SAMPLER
