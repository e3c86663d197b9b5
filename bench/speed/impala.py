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
excluded).  Repeats alternate the order; medians are reported.  The script also times
the sampler and the Impala update alone, and prints each runner's limit on this
machine: A2C's ``1 / (1 / sampling + 1 / updating)`` with every core sampling, Impala's
``min(sampling with one core fewer, updating)``.

Peer: sample-factory's APPO would be the natural third row, but sample-factory 2.1.1
needs ``gymnasium<1.0`` and ``numpy<2`` (``pip install --dry-run sample-factory``
with our pins would downgrade gymnasium 1.4.0 to 0.29.1 and numpy 2.4.6 to 1.26.4), so
it cannot be installed next to this library; the script prints this and does not run it.

    python bench/speed/impala.py --repeats 3
"""

from __future__ import annotations

import argparse
import statistics
import time

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


def alone_rates(cores: int, n_batches: int = 20) -> tuple[float, float, float]:
    """Env steps per second of the CPU sampler alone with ``cores`` and with ``cores - 1``
    workers, and of Impala's gradient steps alone (env steps they consume per second)."""
    rates = []
    for n_workers in (cores, max(cores - 1, 1)):
        sampler = CpuSampler(**sampler_kwargs())
        agent = AtariFfAgent()
        sampler.initialize(agent, affinity=dict(workers_cpus=list(range(n_workers)),
                                                set_affinity=False), seed=0,
                           bootstrap_value=True)
        sampler.obtain_samples(0)
        start = time.perf_counter()
        for itr in range(n_batches):
            samples, _ = sampler.obtain_samples(itr)
        rates.append(n_batches * BATCH_T * BATCH_B / (time.perf_counter() - start))
    algo = Impala()
    algo.initialize(agent, n_itr=n_batches, batch_spec=sampler.batch_spec,
                    mid_batch_reset=sampler.mid_batch_reset)
    agent.train_mode(0)
    algo.optimize_agent(0, samples)
    start = time.perf_counter()
    for itr in range(n_batches // 2):
        algo.optimize_agent(itr, samples)
    optimizer = (n_batches // 2) * BATCH_T * BATCH_B / (time.perf_counter() - start)
    sampler.shutdown()
    return rates[0], rates[1], optimizer


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
    all_workers, one_fewer, optimizer = alone_rates(args.cores)
    a2c_limit = 1 / (1 / all_workers + 1 / optimizer)  # Sampling, then the update.
    impala_limit = min(one_fewer, optimizer)  # Both at once, one core each side.
    print(f"\nPong, batch {BATCH_T}x{BATCH_B}, AtariFfAgent, {args.cores} cores")
    print(f"A2C    MinibatchRl + CpuSampler  {a2c:7.0f} env steps/s (median)")
    print(f"Impala AsyncRl + AsyncCpuSampler {impala:7.0f} env steps/s (median)")
    print(f"alone: sampler with {args.cores} workers {all_workers:.0f}, with "
          f"{max(args.cores - 1, 1)} {one_fewer:.0f}; Impala updates alone {optimizer:.0f} "
          f"env steps/s")
    print(f"limits: A2C (sample, then update) {a2c_limit:.0f}; Impala (overlapped) "
          f"{impala_limit:.0f} env steps/s; best possible ratio {impala_limit / a2c_limit:.2f}x")
    print(f"Impala / A2C = {impala / a2c:.2f}x  (target >= 1.5)")
    print(f"A2C / its limit = {a2c / a2c_limit:.0%}, Impala / its limit = "
          f"{impala / impala_limit:.0%}")
    print(f"sample-factory APPO: not run: {SAMPLE_FACTORY}")


if __name__ == "__main__":
    main()
