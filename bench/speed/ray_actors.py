"""RaySampler: its overhead next to CpuSampler, and how it scales with actors.

On a 2-core machine CPU-bound envs cannot scale, so two things are measured, in one
process run:

1. **Overhead.** Env steps per second of ``RaySampler`` (2 actors, a private local Ray)
   and ``CpuSampler`` (2 workers), same envs, same batch, same model agent
   (``CategoricalPgAgent`` on CartPole-v1, ``AtariFfAgent`` on Pong): each sampler's
   ``obtain_samples`` in a loop, parameters published before every batch as in
   training.  The two are measured in alternation, ``--repeats`` times each; the table
   shows medians and the ratio Ray / CPU (target >= 0.8).
2. **Scaling, simulated.** An env whose ``step`` sleeps 10 ms (a stand-in for a remote
   simulator or a slow physics engine) and costs almost no CPU; one env per actor,
   1, 2, 4, 8, 16 actors.  Efficiency = steps/s with n actors / (n x steps/s with 1);
   target >= 0.8 up to 16 actors.

Each measurement also records the cores used by *other* processes meanwhile (the
machine is shared), as in ``bench/speed/samplers.py``.

    nice -n 10 python bench/speed/ray_actors.py --out bench_ray.md
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np
import psutil
import torch

from rlpyt.agents.pg.atari import AtariFfAgent
from rlpyt.agents.pg.categorical import CategoricalPgAgent
from rlpyt.envs.atari.atari_env import AtariEnv
from rlpyt.envs.base import Env, EnvStep
from rlpyt.envs.gym import make
from rlpyt.samplers.parallel.cpu.sampler import CpuSampler
from rlpyt.samplers.ray_.sampler import RaySampler
from rlpyt.spaces.float_box import FloatBox
from rlpyt.spaces.int_box import IntBox

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from samplers import LoadMeter  # noqa: E402  (bench/speed/samplers.py)

STEP_SLEEP_S = 0.010


class SleepEnv(Env):
    """CartPole-sized spaces; every step sleeps 10 ms; episodes of 200 steps."""

    def __init__(self, sleep_s=STEP_SLEEP_S):
        self.sleep_s = sleep_s
        self._action_space = IntBox(0, 2)
        self._observation_space = FloatBox(-1, 1, shape=(4,))
        self.t = 0

    def seed(self, seed):
        self._action_space.seed(seed)

    def reset(self):
        self.t = 0
        return np.zeros(4, dtype=np.float32)

    def step(self, action):
        time.sleep(self.sleep_s)
        self.t += 1
        return EnvStep(np.full(4, self.t / 200, dtype=np.float32), 1.0, self.t >= 200, None)


def build(SamplerCls, env: str, B: int, T: int, n: int):
    """An initialized sampler and a ``run(n_batches) -> env steps`` callable."""
    if env == "pong":
        EnvCls, env_kwargs, agent = AtariEnv, dict(game="pong"), AtariFfAgent()
    elif env == "cartpole":
        EnvCls, env_kwargs, agent = make, dict(id="CartPole-v1"), CategoricalPgAgent()
    else:
        EnvCls, env_kwargs, agent = SleepEnv, {}, CategoricalPgAgent()
    kwargs = dict(n_actors=n) if SamplerCls is RaySampler else {}
    sampler = SamplerCls(EnvCls=EnvCls, env_kwargs=env_kwargs, batch_T=T, batch_B=B,
                         max_decorrelation_steps=0, **kwargs)
    sampler.initialize(agent, affinity=dict(n_workers=n, set_affinity=False), seed=0)
    itr = [0]

    def run(n_batches: int) -> int:
        for _ in range(n_batches):
            agent.sample_mode(itr[0])
            sampler.obtain_samples(itr[0])
            itr[0] += 1
        return n_batches * B * T

    run(2)  # Warm-up (first parameter load, lazy imports).
    return sampler, run


def timed(run, n_batches):
    with LoadMeter() as meter:
        steps = run(n_batches)
    return steps / meter.wall, meter.other_cores


def overhead(env, B, T, n_batches, repeats):
    ray_s, ray_run = build(RaySampler, env, B, T, 2)
    cpu_s, cpu_run = build(CpuSampler, env, B, T, 2)
    ray_rates, cpu_rates, loads = [], [], []
    try:
        for _ in range(repeats):
            rate, load = timed(ray_run, n_batches)
            ray_rates.append(rate)
            loads.append(load)
            rate, load = timed(cpu_run, n_batches)
            cpu_rates.append(rate)
            loads.append(load)
    finally:
        ray_s.shutdown()
        cpu_s.shutdown()
    ray_m, cpu_m = statistics.median(ray_rates), statistics.median(cpu_rates)
    return ray_m, cpu_m, ray_m / cpu_m, statistics.median(loads)


def torchrl_peer(B, T, n_batches, repeats):
    """TorchRL's ``RayCollector``: 2 remote collectors of ``B / 2`` CartPole envs each
    (a ``SerialEnv``), a categorical MLP policy of CategoricalPgAgent's size, weights
    sent before every batch.  Returns the median steps/s and other load."""
    from tensordict.nn import TensorDictModule
    from torchrl.collectors.distributed import RayCollector
    from torchrl.envs import SerialEnv
    from torchrl.envs.libs.gym import GymEnv
    from torchrl.modules import MLP, ProbabilisticActor

    def make_env():
        return SerialEnv(B // 2, lambda: GymEnv("CartPole-v1", categorical_action_encoding=True))

    net = MLP(in_features=4, out_features=2, num_cells=[64, 64], activation_class=torch.nn.Tanh)
    policy = ProbabilisticActor(TensorDictModule(net, in_keys=["observation"],
                                                 out_keys=["logits"]),
                                in_keys=["logits"], out_keys=["action"],
                                distribution_class=torch.distributions.Categorical)
    total = B * T * (2 + n_batches * repeats + 1)  # Enough for every timed batch.
    collector = RayCollector([make_env, make_env], policy, frames_per_batch=B * T,
                             total_frames=total, sync=True, num_collectors=2,
                             remote_configs=dict(num_cpus=1, num_gpus=0,
                                                 memory=512 * 1024 ** 2))
    collector.update_policy_weights_(policy)
    batches = iter(collector)
    for _ in range(2):
        next(batches)

    def run(n):
        for _ in range(n):
            collector.update_policy_weights_(policy)
            next(batches)
        return n * B * T

    try:
        results = [timed(run, n_batches) for _ in range(repeats)]
    finally:
        collector.shutdown()
    return statistics.median(r for r, _ in results), statistics.median(lo for _, lo in results)


def scaling(counts, T, n_batches, repeats):
    rows = []
    base = None
    for n in counts:
        sampler, run = build(RaySampler, "sleep", n, T, n)
        try:
            results = [timed(run, n_batches) for _ in range(repeats)]
        finally:
            sampler.shutdown()
        rate = statistics.median(r for r, _ in results)
        load = statistics.median(lo for _, lo in results)
        base = rate if base is None else base
        rows.append((n, rate, rate / (n * base), load))
        print(f"  {n:2d} actors: {rate:8.1f} steps/s, efficiency {rate / (n * base):.2f}, "
              f"other load {load:.1f} cores", flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--actors", default="1,2,4,8,16")
    parser.add_argument("--torchrl", action="store_true",
                        help="add TorchRL's RayCollector on CartPole (run with a Python that "
                             "has torchrl; see docs/speed.md)")
    parser.add_argument("--skip-overhead", action="store_true")
    parser.add_argument("--skip-scaling", action="store_true")
    parser.add_argument("--out", default=None, help="also write the tables (markdown) here")
    args = parser.parse_args()
    torch.set_num_threads(1)
    import ray

    # One private local Ray for the whole run, with a logical CPU per actor up to 16.
    ray.init(num_cpus=max(16, os.cpu_count() or 1), include_dashboard=False,
             log_to_driver=False)
    lines = [f"Machine: {os.cpu_count()} cores, load average at start "
             f"{psutil.getloadavg()[0]:.1f}; medians of {args.repeats} alternated runs.", "",
             "| env | batch (T x B) | RaySampler 2 actors (steps/s) | CpuSampler 2 workers "
             "(steps/s) | ratio | other load (cores) |", "|---|---|---|---|---|---|"]
    try:
        envs = () if args.skip_overhead else (("cartpole", 8, 64, 20), ("pong", 4, 32, 6))
        for env, B, T, n_batches in envs:
            print(f"overhead: {env}", flush=True)
            ray_m, cpu_m, ratio, load = overhead(env, B, T, n_batches, args.repeats)
            lines.append(f"| {env} | {T} x {B} | {ray_m:.0f} | {cpu_m:.0f} | {ratio:.2f} | "
                         f"{load:.1f} |")
            print(lines[-1], flush=True)
        if args.torchrl:
            print("peer: torchrl RayCollector", flush=True)
            rate, load = torchrl_peer(8, 64, 20, args.repeats)
            lines.append(f"| cartpole | 64 x 8 | TorchRL RayCollector, 2 collectors: {rate:.0f} "
                         f"| | | {load:.1f} |")
            print(lines[-1], flush=True)
        lines += ["", f"Scaling: env step sleeps {STEP_SLEEP_S * 1e3:.0f} ms, one env per "
                  "actor, T=50.", "",
                  "| actors | steps/s | efficiency vs linear | other load (cores) |",
                  "|---|---|---|---|"]
        print("scaling", flush=True)
        counts = [] if args.skip_scaling else [int(c) for c in args.actors.split(",")]
        for n, rate, eff, load in scaling(counts, 50, 4, max(3, args.repeats // 2)):
            lines.append(f"| {n} | {rate:.0f} | {eff:.2f} | {load:.1f} |")
    finally:
        ray.shutdown()
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
