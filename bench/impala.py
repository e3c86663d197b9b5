"""Env steps per second of Impala under ``AsyncRl`` against A2C under ``MinibatchRl``, on Pong.

Both train the same agent (``AtariFfAgent``, the conv policy/value network on 4 stacked
104x80 frames) on the same ``[T, B]`` batches of ``AtariEnv("pong")``, one gradient
step per batch, with every core of the machine (2 here):

* **A2C, MinibatchRl + CpuSampler**: ``--cores`` sampler workers step the envs, then
  the main process takes the gradient step while they wait;
* **Impala, AsyncRl + AsyncCpuSampler**: ``--cores - 1`` workers step envs all the time
  (their sampler process only hands batches on) while the main process trains on the
  batches before (V-trace corrects for the policy lag).

Rates count env steps per second of wall-clock time from the first log row on (start-up
excluded).  Repeats alternate the order; medians are reported.

Peer: sample-factory's APPO would be the natural third row, but sample-factory 2.1.1
needs ``gymnasium<1.0`` and ``numpy<2`` (``pip install --dry-run sample-factory``
with our pins would downgrade gymnasium 1.4.0 to 0.29.1 and numpy 2.4.6 to 1.26.4), so
it cannot be installed next to this library; the script prints this and does not run it.

    python bench/impala.py --repeats 3
"""

from __future__ import annotations

import argparse
import statistics

import torch
from row_rate import rate_between_rows

from rlpyt.agents.pg.atari import AtariFfAgent
from rlpyt.algos.pg.a2c import A2C
from rlpyt.algos.pg.impala import Impala
from rlpyt.envs.atari.atari_env import AtariEnv
from rlpyt.runners.async_rl import AsyncRl
from rlpyt.runners.minibatch_rl import MinibatchRl
from rlpyt.samplers.async_.cpu_sampler import AsyncCpuSampler
from rlpyt.samplers.parallel.cpu.sampler import CpuSampler

BATCH_T, BATCH_B = 20, 16
SAMPLE_FACTORY = ("sample-factory 2.1.1 requires gymnasium<1.0 and numpy<2; installing it "
                  "would downgrade this environment (gymnasium 1.4.0 -> 0.29.1, numpy 2.4.6 "
                  "-> 1.26.4), so its APPO row is not run")


def sampler_kwargs() -> dict:
    return dict(EnvCls=AtariEnv, env_kwargs=dict(game="pong"), batch_T=BATCH_T,
                batch_B=BATCH_B, max_decorrelation_steps=0)


def a2c_rate(n_steps: int, cores: int) -> float:
    sampler = CpuSampler(**sampler_kwargs())
    runner = MinibatchRl(A2C(), AtariFfAgent(), sampler, n_steps=n_steps, seed=0,
                         log_interval_steps=n_steps // 4,
                         affinity=dict(workers_cpus=list(range(cores)), set_affinity=False))
    return rate_between_rows(runner)


def impala_rate(n_steps: int, cores: int) -> float:
    sampler = AsyncCpuSampler(**sampler_kwargs())
    workers = list(range(max(cores - 1, 1)))
    runner = AsyncRl(Impala(), AtariFfAgent(), sampler, n_steps=n_steps, seed=0,
                     log_interval_steps=n_steps // 4,
                     affinity=dict(workers_cpus=workers, set_affinity=False))
    return rate_between_rows(runner)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=32_000, help="env steps per run")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cores", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(1)
    rates = dict(a2c=[], impala=[])
    for repeat in range(args.repeats):
        runs = [("a2c", a2c_rate), ("impala", impala_rate)]
        for key, fn in runs[:: 1 if repeat % 2 == 0 else -1]:
            rates[key].append(fn(args.steps, args.cores))
        print(f"repeat {repeat}: A2C {rates['a2c'][-1]:.0f}, Impala {rates['impala'][-1]:.0f} "
              f"env steps/s", flush=True)
    a2c, impala = statistics.median(rates["a2c"]), statistics.median(rates["impala"])
    print(f"\nPong, batch {BATCH_T}x{BATCH_B}, AtariFfAgent, {args.cores} cores")
    print(f"A2C    MinibatchRl + CpuSampler  {a2c:7.0f} env steps/s (median)")
    print(f"Impala AsyncRl + AsyncCpuSampler {impala:7.0f} env steps/s (median)")
    print(f"Impala / A2C = {impala / a2c:.2f}x  (target >= 1.5)")
    print(f"sample-factory APPO: not run: {SAMPLE_FACTORY}")


if __name__ == "__main__":
    main()
