"""Env steps per second of DQN on Pong: ``AsyncRl`` against ``MinibatchRl``, and the limit.

All runs train the same agent (``AtariDqnAgent``, the Nature CNN on 4 stacked 104x80
frames) with the same ``DQN`` settings (frame replay, batch 32) at the same replay
ratio, on ``AtariEnv("pong")`` with ``batch_B`` envs stepped ``batch_T`` at a time:

* **sampler alone**: the serial sampler collecting batches with the acting agent, no
  training: the most env steps per second one sampling process gives;
* **optimizer alone**: gradient steps per second on a filled replay, no sampling;
  divided by ``updates_per_env_step = replay_ratio / batch_size`` it is the most env
  steps per second the optimizer can keep up with;
* **MinibatchRl**: ``SerialSampler`` and the optimizer taking turns in one process;
* **AsyncRl**: ``AsyncSerialSampler`` in its own process, the optimizer in this one.

The physical limit of an asynchronous run on two cores is
``min(sampler alone, optimizer alone / updates_per_env_step)``.  ``--replay-ratio auto``
(the default) picks the power of two that brings the two sides closest to balance, the
case where overlapping them matters most; a fixed ratio can be given.  Rates exclude
the warm-up before learning starts (``min_steps_learn``).  Repeats alternate the order
of the runs; medians are reported.

    python bench/speed/async_dqn.py --repeats 3
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import torch
from row_rate import quiet_logging, rate_between_rows

from rlpyt.agents.dqn.atari.atari_dqn_agent import AtariDqnAgent
from rlpyt.algos.dqn.dqn import DQN
from rlpyt.envs.atari.atari_env import AtariEnv
from rlpyt.runners.async_rl import AsyncRl
from rlpyt.runners.minibatch_rl import MinibatchRl
from rlpyt.samplers.async_.serial_sampler import AsyncSerialSampler
from rlpyt.samplers.serial.sampler import SerialSampler

BATCH_T, BATCH_B = 16, 8
BATCH_SIZE = 32
MIN_STEPS_LEARN = 2_000


def dqn(replay_ratio: float) -> DQN:
    return DQN(batch_size=BATCH_SIZE, replay_ratio=replay_ratio, min_steps_learn=MIN_STEPS_LEARN,
               replay_size=50_000, target_update_interval=1000, eps_steps=20_000)


def sampler_kwargs() -> dict:
    return dict(EnvCls=AtariEnv, env_kwargs=dict(game="pong"), batch_T=BATCH_T,
                batch_B=BATCH_B, max_decorrelation_steps=0)


def sampler_alone(n_steps: int) -> float:
    sampler = SerialSampler(**sampler_kwargs())
    agent = AtariDqnAgent()
    sampler.initialize(agent, seed=0)
    agent.sample_mode(0)
    n_itr = n_steps // (BATCH_T * BATCH_B)
    sampler.obtain_samples(0)  # Warm-up.
    start = time.perf_counter()
    for itr in range(n_itr):
        sampler.obtain_samples(itr)
    elapsed = time.perf_counter() - start
    sampler.shutdown()
    return n_itr * BATCH_T * BATCH_B / elapsed


def optimizer_alone(n_updates: int) -> float:
    """Gradient steps per second on a replay filled by a short serial run."""
    sampler = SerialSampler(**sampler_kwargs())
    agent = AtariDqnAgent()
    algo = dqn(replay_ratio=BATCH_SIZE / (BATCH_T * BATCH_B))  # One update per batch.
    runner = MinibatchRl(algo, agent, sampler, n_steps=MIN_STEPS_LEARN + BATCH_T * BATCH_B,
                         seed=0, log_interval_steps=10**9)
    with quiet_logging():
        runner.train()
    agent.train_mode(0)
    algo.gradient_step()  # Warm-up.
    start = time.perf_counter()
    for _ in range(n_updates):
        algo.gradient_step()
    return n_updates / (time.perf_counter() - start)


def training_rate(RunnerCls, SamplerCls, replay_ratio: float, n_steps: int) -> float:
    """Env steps per second after learning starts (from the runner's own log rows)."""
    algo, agent = dqn(replay_ratio), AtariDqnAgent()
    runner = RunnerCls(algo, agent, SamplerCls(**sampler_kwargs()), n_steps=n_steps, seed=0,
                       log_interval_steps=MIN_STEPS_LEARN)
    return rate_between_rows(runner)  # From the first row (learning starts) on.


def pick_replay_ratio(sampler_sps: float, updates_per_s: float) -> float:
    balanced = updates_per_s * BATCH_SIZE / sampler_sps
    smallest = BATCH_SIZE / (BATCH_T * BATCH_B)  # MinibatchRl: at least one update a batch.
    return max(2.0 ** round(math.log2(balanced)), smallest)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=12_000, help="env steps per training run")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--replay-ratio", default="auto")
    args = parser.parse_args()
    torch.set_num_threads(1)
    alone = dict(sampler=[], optimizer=[])
    for _ in range(args.repeats):
        alone["sampler"].append(sampler_alone(4_000))
        alone["optimizer"].append(optimizer_alone(150))
    sampler_sps = statistics.median(alone["sampler"])
    updates_per_s = statistics.median(alone["optimizer"])
    if args.replay_ratio == "auto":
        replay_ratio = pick_replay_ratio(sampler_sps, updates_per_s)
    else:
        replay_ratio = float(args.replay_ratio)
    limit = min(sampler_sps, updates_per_s * BATCH_SIZE / replay_ratio)
    print(f"alone: sampler {alone['sampler']}, optimizer {alone['optimizer']}", flush=True)
    rates = dict(sync=[], async_=[])
    for repeat in range(args.repeats):
        order = [("sync", MinibatchRl, SerialSampler), ("async_", AsyncRl, AsyncSerialSampler)]
        for key, RunnerCls, SamplerCls in order[:: 1 if repeat % 2 == 0 else -1]:
            rates[key].append(training_rate(RunnerCls, SamplerCls, replay_ratio, args.steps))
        print(f"repeat {repeat}: MinibatchRl {rates['sync'][-1]:.0f}, "
              f"AsyncRl {rates['async_'][-1]:.0f} env steps/s", flush=True)
    sync, async_ = statistics.median(rates["sync"]), statistics.median(rates["async_"])
    print(f"\nDQN on Pong, batch {BATCH_T}x{BATCH_B} env steps, replay_ratio {replay_ratio:g} "
          f"({replay_ratio / BATCH_SIZE:.3g} updates per env step), torch threads 1")
    print(f"sampler alone              {sampler_sps:8.0f} env steps/s (median of "
          f"{args.repeats})")
    print(f"optimizer alone            {updates_per_s:8.1f} updates/s = "
          f"{updates_per_s * BATCH_SIZE / replay_ratio:.0f} env steps/s at this ratio")
    print(f"physical limit             {limit:8.0f} env steps/s")
    print(f"MinibatchRl + SerialSampler {sync:7.0f} env steps/s (median)")
    print(f"AsyncRl + AsyncSerialSampler {async_:6.0f} env steps/s (median)")
    print(f"AsyncRl / MinibatchRl      = {async_ / sync:.2f}x  (target >= 1.6)")
    print(f"AsyncRl / physical limit   = {async_ / limit:.0%}  (target >= 85%)")


if __name__ == "__main__":
    main()
