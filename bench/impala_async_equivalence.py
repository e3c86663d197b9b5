"""Is asynchronous Impala at zero policy lag the synchronous algorithm?  Loss by loss.

Trains the ``impala`` preset on CartPole-v1 (16 x 8 batches) twice: with
``MinibatchRl`` + ``SerialSampler``, and with ``AsyncRl`` + ``AsyncSerialSampler`` and
``fifo_size=2`` (the sampler may not start batch ``n`` before the learner has taken
``n`` steps, so every batch is sampled with the learner's current parameters).  Both
runs seed torch's generator with ``seed + 1`` just before the first batch (the sampler
process's own stream), so they draw the same actions as long as they act with the
same parameters, and the script prints the first update whose loss differs, or that
none does.  ``--max-episode-steps`` short of 500 puts time-limit truncations (and
their bootstrap values) into every batch:

    python bench/impala_async_equivalence.py --batches 40 --max-episode-steps 20
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

import rlpyt.samplers.async_.base as async_base  # noqa: E402
from rlpyt.agents.pg.categorical import CategoricalPgAgent  # noqa: E402
from rlpyt.algos.pg.impala import Impala  # noqa: E402
from rlpyt.cli.presets import PRESETS  # noqa: E402
from rlpyt.envs.gym import make  # noqa: E402
from rlpyt.runners.async_rl import AsyncRl  # noqa: E402
from rlpyt.runners.minibatch_rl import MinibatchRl  # noqa: E402
from rlpyt.samplers.async_.serial_sampler import AsyncSerialSampler  # noqa: E402
from rlpyt.samplers.serial.sampler import SerialSampler  # noqa: E402
from rlpyt.utils.logging.context import logger_context  # noqa: E402
from rlpyt.utils.seed import set_seed  # noqa: E402


def recorded_losses(asynchronous: bool, seed: int, batches: int, max_episode_steps: int):
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
                set_seed(seed + 1)
            return super().obtain_samples(itr)

    collect = async_base._SamplerLoop.collect

    def seeded_collect(loop, itr):  # runs in the forked sampler process
        if itr == 0:
            set_seed(seed + 1)
        return collect(loop, itr)

    sampler_kwargs = dict(EnvCls=make, batch_T=16, batch_B=8, max_decorrelation_steps=0,
                          env_kwargs=dict(id="CartPole-v1",
                                          max_episode_steps=max_episode_steps))
    algo = Recorded(**{**PRESETS["impala"].algo_kwargs, "fifo_size": 2})
    common = dict(algo=algo, agent=CategoricalPgAgent(), n_steps=128 * batches, seed=seed,
                  log_interval_steps=128 * batches)
    if asynchronous:
        async_base._SamplerLoop.collect = seeded_collect
        runner = AsyncRl(sampler=AsyncSerialSampler(**sampler_kwargs), **common)
    else:
        runner = MinibatchRl(sampler=SeededSerialSampler(**sampler_kwargs), **common)
    try:
        with tempfile.TemporaryDirectory() as log_dir, \
                contextlib.redirect_stdout(io.StringIO()), \
                logger_context(log_dir, seed, "equivalence", override_prefix=True):
            runner.train()
    finally:
        async_base._SamplerLoop.collect = collect
    return losses


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--batches", type=int, default=40)
    p.add_argument("--max-episode-steps", type=int, default=500)
    args = p.parse_args()
    torch.set_num_threads(1)
    sync, asyn = (recorded_losses(mode, args.seed, args.batches, args.max_episode_steps)
                  for mode in (False, True))
    differ = next((i for i, (a, b) in enumerate(zip(sync, asyn)) if a != b), None)
    print(f"{len(sync)} synchronous and {len(asyn)} asynchronous updates; "
          + ("every loss identical" if differ is None and len(sync) == len(asyn) else
             f"first difference at update {differ}: {sync[differ]!r} vs {asyn[differ]!r}"))


if __name__ == "__main__":
    main()
