"""Learning tests: the policy-gradient algorithms solve CartPole within their step budgets
and still hold it at the end of their runs.

Each seed trains with evaluation every ``log_interval_steps`` until two evaluations
after the first one at or above the threshold (or to ``n_steps``), and passes when it
reached the threshold and the mean of its last two evaluations is at least 90% of it
(``helpers.EndOfRun``).  Hyperparameters are the ``rlpyt train`` presets.
"""

import pytest
from helpers import (
    EndOfRun,
    k_of_n,
    make_learning_only,
    make_masked_cartpole,
    seed_plan,
    train_until,
)

from rlpyt.agents.pg.categorical import CategoricalPgAgent, RecurrentCategoricalPgAgent
from rlpyt.algos.pg.a2c import A2C
from rlpyt.algos.pg.impala import Impala
from rlpyt.algos.pg.ppo import PPO
from rlpyt.cli.presets import PRESETS
from rlpyt.envs.gym import make
from rlpyt.samplers.parallel.cpu.collectors import CpuWaitResetCollector
from rlpyt.samplers.serial.sampler import SerialSampler

pytestmark = pytest.mark.learning

EVAL = dict(eval_n_envs=5, eval_max_trajectories=5)

# Recurrent PPO on CartPole without velocities: the CartPole preset with wait-reset
# sequences of 32 steps in 8 envs (examples/example_5_recurrent_ppo_masked_cartpole.py).
RECURRENT_PPO = dict(discount=0.98, gae_lambda=0.8, learning_rate=1e-3, epochs=20,
                     minibatches=1, ratio_clip=0.2, entropy_loss_coeff=0.0,
                     value_loss_coeff=0.5, clip_grad_norm=0.5, normalize_advantage=True)


SOLVED = EndOfRun(475)


def _cartpole_history(name, AlgoCls, n_steps, log_interval, tmp_path, end_of_run=SOLVED,
                      **sampler_kwargs):
    """``train_seed(seed) -> eval history`` of the ``name`` preset on CartPole-v1."""
    preset = PRESETS[name]

    def train_seed(seed):
        sampler = SerialSampler(EnvCls=make, env_kwargs=dict(id="CartPole-v1"),
                                **{**preset.sampler_kwargs, **sampler_kwargs, **EVAL})
        return train_until(AlgoCls(**preset.algo_kwargs), CategoricalPgAgent(), sampler,
                           n_steps, seed, end_of_run, tmp_path / f"{name}{seed}",
                           log_interval)["eval_history"]

    return train_seed


def test_ppo_cartpole_seeds(tmp_path):
    """2 of 3 seeds in ``make test``, 4 of 5 in ``make learning`` (``helpers.seed_plan``)."""
    needed, seeds = seed_plan(full=(4, 5), quick=(2, 3))
    k_of_n(_cartpole_history("ppo", PPO, 100_000, 10_000, tmp_path), seeds, needed, SOLVED,
           "PPO")


def test_a2c_cartpole_seeds(tmp_path):
    """1 of 2 seeds in ``make test``, 2 of 3 in ``make learning`` (``helpers.seed_plan``)."""
    needed, seeds = seed_plan(full=(2, 3), quick=(1, 2))
    k_of_n(_cartpole_history("a2c", A2C, 500_000, 20_000, tmp_path), seeds, needed, SOLVED,
           "A2C")


def test_impala_cartpole_seeds(tmp_path):
    """Reaches 475 and holds it (``SOLVED``: mean of the next two evaluations >= 427.5) in
    2 of 3 seeds under ``make learning``, 1 of 2 in ``make test`` (``helpers.seed_plan``),
    with the ``impala`` preset.  Its ``reward_scale=0.1`` is what holds it: with rewards
    as given a solved CartPole fell back in about half the seeds; with it seeds 0-4 ended
    300k-step runs at 500 in 5 of 5, the lowest evaluation after first reaching 475 being
    477 (2026-11-27; docs/notes/impala_cartpole.md)."""
    needed, seeds = seed_plan(full=(2, 3), quick=(1, 2))
    k_of_n(_cartpole_history("impala", Impala, 300_000, 20_000, tmp_path), seeds, needed,
           SOLVED, "Impala")


@make_learning_only("PPO (trained in make test by test_ppo_cartpole_seeds) with a recurrent "
                    "agent; recurrent agents learn masked CartPole in make test via R2D2, R2D1 under AsyncRl")
def test_recurrent_ppo_velocity_masked_cartpole(tmp_path):
    sampler = SerialSampler(EnvCls=make_masked_cartpole, env_kwargs={}, batch_T=32, batch_B=8,
                            CollectorCls=CpuWaitResetCollector, max_decorrelation_steps=0, **EVAL)
    masked = EndOfRun(400)
    summary = train_until(PPO(**RECURRENT_PPO), RecurrentCategoricalPgAgent(), sampler, 300_000,
                          0, masked, tmp_path / "rppo", 20_000)
    print(masked.describe("recurrent PPO", 0, summary["eval_history"]))
    assert summary["passed"], masked.describe("recurrent PPO", 0, summary["eval_history"])
