"""Asynchronous IMPALA at zero policy lag is the synchronous algorithm, loss by loss.

The ``impala`` preset trains on CartPole-v1 (16 x 8 batches) twice: with ``MinibatchRl``
+ ``SerialSampler``, and with ``AsyncRl`` + ``AsyncSerialSampler`` and ``fifo_size=2``
(the sampler may not start batch ``n`` before the learner has taken ``n`` steps, so every
batch is sampled with the learner's current parameters).  Both runs seed torch's
generator with ``seed + 1`` just before the first batch (in the asynchronous run, in the
sampler process, whose stream that is), so they draw the same actions as long as they
act with the same parameters: every update's loss must then be the same number.  A
lagging parameter copy, a batch taken out of order or a different bootstrap in the
asynchronous path shows as the first update whose loss differs.  Episodes of at most 20
steps put time-limit truncations (and their bootstrap values) into every batch.
"""

from __future__ import annotations

import contextlib
import io

import pytest

import rlpyt.samplers.async_.base as async_base
from rlpyt.agents.pg.categorical import CategoricalPgAgent
from rlpyt.algos.pg.impala import Impala
from rlpyt.cli.presets import PRESETS
from rlpyt.envs.gym import make
from rlpyt.runners.async_rl import AsyncRl
from rlpyt.runners.minibatch_rl import MinibatchRl
from rlpyt.samplers.async_.serial_sampler import AsyncSerialSampler
from rlpyt.samplers.serial.sampler import SerialSampler
from rlpyt.utils.logging.context import logger_context
from rlpyt.utils.seed import set_seed

SEED = 0
BATCHES = 40
BATCH_T, BATCH_B = 16, 8
MAX_EPISODE_STEPS = 20


def recorded_losses(asynchronous: bool, log_dir) -> list[float]:
    """Every update's loss of one run (the learner runs in this process either way)."""
    losses = []

    class Recorded(Impala):
        def optimize_agent(self, itr, samples=None, sampler_itr=None):
            info = super().optimize_agent(itr, samples, sampler_itr)
            losses.append(info.loss[0])
            return info

    class SeededSerialSampler(SerialSampler):
        def obtain_samples(self, itr):
            if itr == 0:
                set_seed(SEED + 1)
            return super().obtain_samples(itr)

    collect = async_base.SamplerLoop.collect

    def seeded_collect(loop, itr):  # Runs in the forked sampler process.
        if itr == 0:
            set_seed(SEED + 1)
        return collect(loop, itr)

    sampler_kwargs = dict(EnvCls=make, batch_T=BATCH_T, batch_B=BATCH_B,
                          max_decorrelation_steps=0,
                          env_kwargs=dict(id="CartPole-v1", max_episode_steps=MAX_EPISODE_STEPS))
    n_steps = BATCH_T * BATCH_B * BATCHES
    common = dict(algo=Recorded(**{**PRESETS["impala"].algo_kwargs, "fifo_size": 2}),
                  agent=CategoricalPgAgent(), n_steps=n_steps, seed=SEED,
                  log_interval_steps=n_steps)
    if asynchronous:
        runner = AsyncRl(sampler=AsyncSerialSampler(**sampler_kwargs), **common)
    else:
        runner = MinibatchRl(sampler=SeededSerialSampler(**sampler_kwargs), **common)
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(io.StringIO()), \
            logger_context(str(log_dir), SEED, "equivalence", override_prefix=True):
        if asynchronous:
            patch.setattr(async_base.SamplerLoop, "collect", seeded_collect)
        runner.train()
    return losses


def test_async_impala_at_zero_lag_has_the_synchronous_losses(tmp_path, leak_check):
    sync = recorded_losses(False, tmp_path / "sync")
    asyn = recorded_losses(True, tmp_path / "async")
    assert len(sync) == BATCHES, len(sync)
    assert len(asyn) == len(sync), (len(asyn), len(sync))
    assert len(set(sync)) > 1, sync  # The losses move: equal lists are not two constants.
    differ = next((i for i, (a, b) in enumerate(zip(sync, asyn)) if a != b), None)
    assert differ is None, (f"first difference at update {differ}: {sync[differ]!r} "
                            f"(synchronous) vs {asyn[differ]!r} (asynchronous)")
