"""rlpyt against the fastest peers: env frames per second, same work on both sides.

Each row pair runs the same env (Pong with frame skip 4 and 4 stacked 104x80 grayscale
frames, episodic lives, 30 no-op starts, 84x84 frames against Sample Factory, whose
Atari example fixes that size; MinAtar Breakout), the same model, the same
batch shapes, on the same machine, in one run of this script.  Peers run their own
public entry points in their own virtual environments (``bench/peers/``: one venv per
peer, created with the peer's pins on first use; a peer that cannot be installed
prints pip's error and its rows are left out):

=========================  ==========================================  =====================
work                       peer                                        ours
=========================  ==========================================  =====================
pong-random                EnvPool, 2 threads, plain loop              CpuSampler 2 workers
                                                                       (AtariEnv; and
                                                                       EnvPoolAtariEnv)
pong-model                 EnvPool + the Atari CNN in a plain loop;    CpuSampler, GpuSampler
                           TorchRL Collector (MultiThreadedEnv) and    (CPU inference)
                           MultiSyncCollector, 2 workers
pong-async                 Sample Factory APPO (its Atari example;     AsyncRl + Impala
                           PPO-clip losses: its 2.1.1 fails with
                           V-trace)
pong-ppo                   CleanRL-style PPO loop (bench/peers/);      MinibatchRl + PPO
                           TorchRL Collector + GAE + ClipPPOLoss
minatar-async              Sample Factory APPO (MinAtar as its         AsyncRl + Impala
                           custom env)
=========================  ==========================================  =====================

Repeats are interleaved (peers first on even repeats, ours first on odd ones); the table
gives medians and ratios ours / the work's fastest peer (named), the CPU time that
other processes used during the run (``--max-other-load`` is only reported: on a shared
machine every side sees the same load because repeats alternate), and the cores the
whole machine was busy (start-up included): near the core count, a side is bound by
the CPU.  Frames are emulator frames: 4 per agent step on Atari, 1 on MinAtar.

    python bench/throughput/peer_throughput.py --repeats 3 --out peers.md
    python bench/throughput/peer_throughput.py --size tiny --repeats 1     # smoke test
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import torch

BENCH = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, BENCH)  # bench/peers/
sys.path.insert(0, os.path.join(BENCH, "speed"))  # row_rate, samplers

import peers  # noqa: E402
from row_rate import rate_between_rows  # noqa: E402
from samplers import LoadMeter, RandomAgent  # noqa: E402

from rlpyt.agents.pg.atari import AtariFfAgent  # noqa: E402
from rlpyt.algos.pg.impala import Impala  # noqa: E402
from rlpyt.algos.pg.ppo import PPO  # noqa: E402
from rlpyt.envs.atari.atari_env import AtariEnv  # noqa: E402
from rlpyt.runners.async_rl import AsyncRl  # noqa: E402
from rlpyt.runners.minibatch_rl import MinibatchRl  # noqa: E402
from rlpyt.samplers.async_.cpu_sampler import AsyncCpuSampler  # noqa: E402
from rlpyt.samplers.parallel.cpu.sampler import CpuSampler  # noqa: E402
from rlpyt.samplers.parallel.gpu.sampler import GpuSampler  # noqa: E402

ATARI_FRAMES = 4  # Emulator frames per agent step (frame skip).
SIZES = {  # Agent steps per measurement, by work.
    "tiny": dict(collect=640, ppo_iterations=2, async_steps=4_000, minatar_steps=8_000),
    "small": dict(collect=3_200, ppo_iterations=3, async_steps=6_000, minatar_steps=20_000),
    "full": dict(collect=12_800, ppo_iterations=6, async_steps=60_000,
                 minatar_steps=150_000),
}
COLLECT_B, COLLECT_T = 16, 20  # pong-random / pong-model: 16 envs, 20 steps a batch.
PPO_B, PPO_T = 8, 128  # CleanRL's Atari PPO shapes: 8 envs, 128 steps, 4x4 minibatches.
ASYNC_B, ASYNC_T = 16, 20  # Actor-learner rows: 16 envs (2 workers x 8), rollouts of 20.
# On a saturated machine a worker can take over the default minute to build its 8 ALE
# envs; the watchdogs are there to catch hangs, and a benchmark wants the figure.
PATIENCE = dict(step_timeout=600.0)
ASYNC_PATIENCE = dict(step_timeout=600.0, batch_timeout=600.0)


# ---- our side -------------------------------------------------------------------------------
def _envpool_atari():
    from rlpyt.envs.vec import EnvPoolAtariEnv

    return EnvPoolAtariEnv


def ours_collect(SamplerCls, agent_kind: str, steps: int, EnvCls=AtariEnv) -> float:
    """Agent steps/s of a sampler with 2 workers, random actions or the Atari CNN."""
    sampler = SamplerCls(EnvCls=EnvCls, env_kwargs=dict(game="pong"), batch_T=COLLECT_T,
                         batch_B=COLLECT_B, max_decorrelation_steps=0, **PATIENCE)
    agent = RandomAgent() if agent_kind == "random" else AtariFfAgent()
    sampler.initialize(agent, affinity=dict(n_workers=2), seed=0)
    try:
        for itr in range(2):  # Warm-up.
            sampler.obtain_samples(itr)
        n = max(1, steps // (COLLECT_B * COLLECT_T))
        start = time.perf_counter()
        for itr in range(n):
            sampler.obtain_samples(itr)
        return n * COLLECT_B * COLLECT_T / (time.perf_counter() - start)
    finally:
        sampler.shutdown()


def ours_ppo(iterations: int, EnvCls=AtariEnv) -> float:
    """MinibatchRl + PPO with CleanRL's Atari settings; agent steps/s between log rows."""
    sampler = CpuSampler(EnvCls=EnvCls, env_kwargs=dict(game="pong"), batch_T=PPO_T,
                         batch_B=PPO_B, max_decorrelation_steps=0, **PATIENCE)
    algo = PPO(learning_rate=2.5e-4, value_loss_coeff=0.5, entropy_loss_coeff=0.01,
               clip_grad_norm=0.5, gae_lambda=0.95, minibatches=4, epochs=4, ratio_clip=0.1)
    batch = PPO_T * PPO_B
    # The update has the machine to itself (the workers wait for it in synchronous PPO),
    # so it takes both cores' threads, as the peers' single-process loops do
    # (--torch-threads 2); with the default of 1 torch thread one core idled through it.
    runner = MinibatchRl(algo, AtariFfAgent(), sampler, n_steps=iterations * batch, seed=0,
                         log_interval_steps=batch,
                         affinity=dict(n_workers=2, master_torch_threads=2))
    return rate_between_rows(runner)


def ours_impala_pong(steps: int, frame_shape: tuple[int, int] = (84, 84),
                     normalize_observation: bool = True) -> float:
    """AsyncRl + Impala on Pong with the Nature CNN (Sample Factory's convnet_atari), on
    84x84 frames as Sample Factory's Atari example has them (hard-coded there): at the
    default 104x80 the CNN does 13% more multiply-adds per frame than the peer's.  With
    the ``impala`` preset's input normalization, which it needs to learn Pong (the peer
    runs its own, ``--normalize_input``)."""
    sampler = AsyncCpuSampler(EnvCls=AtariEnv, env_kwargs=dict(game="pong", frame_shape=frame_shape),
                              batch_T=ASYNC_T, batch_B=ASYNC_B, max_decorrelation_steps=0,
                              **ASYNC_PATIENCE)
    agent = AtariFfAgent(model_kwargs=dict(NATURE_CNN,
                                           normalize_observation=normalize_observation))
    # The learner's CNN update on 2 torch threads, as in ours_ppo: 1.22x the frames/s of
    # 1 thread here (2026-11-27), with the sampler workers on the same 2 cores.
    runner = AsyncRl(Impala(), agent, sampler, n_steps=steps, seed=0,
                     log_interval_steps=steps // 5,
                     affinity=dict(workers_cpus=[0, 1], set_affinity=False,
                                   master_torch_threads=2))
    return rate_between_rows(runner)


def ours_impala_minatar(steps: int) -> float:
    from rlpyt.agents.pg.minatar import MinAtarPgAgent
    from rlpyt.envs.minatar import MinAtarEnv

    sampler = AsyncCpuSampler(EnvCls=MinAtarEnv, env_kwargs=dict(game="Breakout"),
                              batch_T=ASYNC_T, batch_B=ASYNC_B, max_decorrelation_steps=0,
                              **ASYNC_PATIENCE)
    runner = AsyncRl(Impala(), MinAtarPgAgent(), sampler, n_steps=steps, seed=0,
                     log_interval_steps=steps // 5, affinity=dict(workers_cpus=[0, 1],
                                                                  set_affinity=False))
    return rate_between_rows(runner)


NATURE_CNN = dict(channels=[32, 64, 64], kernel_sizes=[8, 4, 3], strides=[4, 2, 1],
                  paddings=[0, 0, 0])


# ---- peer side ------------------------------------------------------------------------------
def peer_rate(name: str, args: list[str], timeout: float = 900) -> float | None:
    out = peers.run(name, args, timeout=timeout)
    return None if out is None else float(out["steps_per_s"])


def rows(size: dict, have_envpool: bool):
    """(work, side, label, frames per agent step, callable -> agent steps/s or None)."""
    c, frames = size["collect"], ATARI_FRAMES
    out = [
        ("pong-random", "peer", "EnvPool, 2 threads", frames, lambda: peer_rate(
            "envpool", ["envpool_loop.py", "--agent", "random", "--B", str(COLLECT_B),
                        "--threads", "2", "--steps", str(c)])),
        ("pong-random", "ours", "CpuSampler, 2 workers", frames,
         lambda: ours_collect(CpuSampler, "random", c)),
        ("pong-model", "peer", "EnvPool + CNN, plain loop", frames, lambda: peer_rate(
            "envpool", ["envpool_loop.py", "--agent", "model", "--B", str(COLLECT_B),
                        "--threads", "2", "--steps", str(c)])),
        ("pong-model", "ours", "CpuSampler, 2 workers", frames,
         lambda: ours_collect(CpuSampler, "model", c)),
        ("pong-model", "ours", "GpuSampler (CPU), 2 workers", frames,
         lambda: ours_collect(GpuSampler, "model", c)),
        ("pong-model", "peer", "TorchRL Collector, MultiThreadedEnv", frames,
         lambda: peer_rate("torchrl", [
             "torchrl_collect.py", "--collector", "sync", "--B", str(COLLECT_B),
             "--T", str(COLLECT_T), "--threads", "2", "--steps", str(c)])),
        ("pong-model", "peer", "TorchRL MultiSyncCollector, 2 workers", frames,
         lambda: peer_rate("torchrl", [
             "torchrl_collect.py", "--collector", "multi", "--B", str(COLLECT_B),
             "--T", str(COLLECT_T), "--workers", "2", "--steps", str(c)])),
        ("pong-async", "peer", "Sample Factory APPO (PPO-clip)", frames, lambda: peer_rate(
            "sample-factory", ["sf_appo.py", "--env", "atari_pong", "--steps",
                               str(size["async_steps"])])),
        ("pong-async", "ours", "AsyncRl + Impala, 84x84 (the peer's frames)", frames,
         lambda: ours_impala_pong(size["async_steps"])),
        ("pong-async", "ours", "AsyncRl + Impala, 104x80 (AtariEnv's default)", frames,
         lambda: ours_impala_pong(size["async_steps"], frame_shape=(104, 80))),
        ("pong-ppo", "peer", "CleanRL-style PPO loop", frames, lambda: peer_rate(
            "cleanrl-style", ["cleanrl_style_ppo.py", "--B", str(PPO_B), "--T", str(PPO_T),
                              "--iterations", str(size["ppo_iterations"])])),
        ("pong-ppo", "peer", "TorchRL PPO (Collector, ClipPPOLoss)", frames, lambda: peer_rate(
            "torchrl", ["torchrl_ppo.py", "--B", str(PPO_B), "--T", str(PPO_T),
                        "--iterations", str(size["ppo_iterations"])])),
        ("pong-ppo", "ours", "MinibatchRl + PPO, CpuSampler", frames,
         lambda: ours_ppo(size["ppo_iterations"])),
        ("minatar-async", "peer", "Sample Factory APPO (PPO-clip)", 1, lambda: peer_rate(
            "sample-factory", ["sf_appo.py", "--env", "minatar_breakout", "--steps",
                               str(size["minatar_steps"])])),
        ("minatar-async", "ours", "AsyncRl + Impala", 1,
         lambda: ours_impala_minatar(size["minatar_steps"])),
    ]
    if have_envpool:
        out.insert(2, ("pong-random", "ours", "CpuSampler + EnvPoolAtariEnv, 2 workers",
                       frames, lambda: ours_collect(CpuSampler, "random", c,
                                                    _envpool_atari())))
        at = 1 + max(i for i, r in enumerate(out) if r[0] == "pong-ppo")
        out.insert(at, ("pong-ppo", "ours", "MinibatchRl + PPO, CpuSampler + EnvPool",
                        frames, lambda: ours_ppo(size["ppo_iterations"], _envpool_atari())))
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", choices=sorted(SIZES), default="full")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--only", default="", help="comma-separated works (pong-random, ...)")
    p.add_argument("--sides", default="peer,ours", help="run these sides only")
    p.add_argument("--out", default=None, help="also write the markdown table here")
    args = p.parse_args()
    torch.set_num_threads(1)
    try:
        import envpool  # noqa: F401
        have_envpool = True
    except ImportError:
        have_envpool = False
    table = [r for r in rows(SIZES[args.size], have_envpool)
             if (not args.only or r[0] in args.only.split(","))
             and r[1] in args.sides.split(",")]
    works = list(dict.fromkeys(r[0] for r in table))
    rates: dict[int, list[float]] = {i: [] for i in range(len(table))}
    loads: dict[int, list[float]] = {i: [] for i in range(len(table))}
    busy: dict[int, list[float]] = {i: [] for i in range(len(table))}
    failed: set[int] = set()
    for rep in range(args.repeats):
        for work in works:
            idx = [i for i, r in enumerate(table) if r[0] == work]
            first = "ours" if rep % 2 else "peer"  # Interleave: ours first on odd repeats.
            idx = [i for i in idx if table[i][1] == first] + \
                  [i for i in idx if table[i][1] != first]
            for i in idx:
                if i in failed:
                    continue
                work_, side, label, frames, fn = table[i]
                with LoadMeter() as meter:
                    try:
                        rate = fn()
                    except Exception as e:  # One side failing must not stop the others.
                        print(f"[peers] {work_} {label}: {type(e).__name__}: {e}")
                        rate = None
                if rate is None:
                    failed.add(i)
                    continue
                rates[i].append(rate * frames)
                loads[i].append(meter.other_cores)
                busy[i].append(meter.busy_cores)
                print(f"repeat {rep} {work_:14s} {side:4s} {label:42s} "
                      f"{rate * frames:10,.0f} frames/s  other load {meter.other_cores:.2f}"
                      f"  machine busy {meter.busy_cores:.2f}", flush=True)
    md = _table(table, rates, loads, busy, failed, args)
    print(md)
    if args.out:
        with open(args.out, "w") as f:
            f.write(md + "\n")


def _table(table, rates, loads, busy, failed, args) -> str:
    lines = [f"size {args.size}, {args.repeats} interleaved repeats, medians; "
             f"{os.cpu_count()} CPUs; load average at the end "
             f"{', '.join(f'{x:.1f}' for x in os.getloadavg())}", "",
             "| work | side | contender | env frames/s | ours / fastest peer | "
             "other load (cores) | machine busy (cores) |",
             "|---|---|---|---:|---:|---:|---:|"]
    fastest = {}  # work -> (median, label) of its fastest peer
    for i, (work, side, label, *_rest) in enumerate(table):
        if side == "peer" and rates[i]:
            med = statistics.median(rates[i])
            if med > fastest.get(work, (0.0, ""))[0]:
                fastest[work] = (med, label)
    for i, (work, side, label, _frames, _fn) in enumerate(table):
        if not rates[i]:
            why = "not installed or failed (see log)" if i in failed else "not run"
            lines.append(f"| {work} | {side} | {label} | {why} | | | |")
            continue
        med = statistics.median(rates[i])
        ratio = ""
        if side == "ours" and work in fastest:
            ratio = f"{med / fastest[work][0]:.2f}x ({fastest[work][1]})"
        lines.append(f"| {work} | {side} | {label} | {med:,.0f} | {ratio} | "
                     f"{statistics.median(loads[i]):.1f} | "
                     f"{statistics.median(busy[i]):.1f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
