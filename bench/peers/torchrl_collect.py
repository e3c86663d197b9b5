"""Peer: TorchRL's data collectors stepping Pong with the Atari CNN acting.

Run in the TorchRL venv (``bench/peers/``).  ``--collector sync``: one ``Collector``
(TorchRL 0.14's name for ``SyncDataCollector``) over one ``MultiThreadedEnv`` of
``--B`` envs and ``--threads`` EnvPool threads, the policy in this process, like the
EnvPool + CNN loop.  ``--collector multi``: a ``MultiSyncCollector`` of ``--workers``
worker processes, each with its own ``MultiThreadedEnv`` of ``B / workers`` envs (one
EnvPool thread) and its own copy of the policy, like rlpyt's ``CpuSampler``.  Each
batch holds ``--B x --T`` agent steps (both as in
``bench/throughput/peer_throughput.py``'s collection rows); env, model and action
sampling are in ``torchrl_parts.py``.

Prints ``PEER_RESULT {"steps_per_s": ...}``: agent steps (each 4 emulator frames) per
second over the batches after two warm-up batches.

    python torchrl_collect.py --collector sync --B 16 --T 20 --steps 3200
"""

from __future__ import annotations

import argparse
import functools
import json
import time

import torch
from torchrl.collectors import Collector, MultiSyncCollector
from torchrl_parts import actor_critic, make_pong

WARMUP = 2  # Batches before the clock starts.


def make_collector(kind: str, B: int, T: int, threads: int, workers: int, batches: int):
    policy = actor_critic(make_pong(1, 1)).get_policy_operator()
    frames = B * T
    total = (WARMUP + batches) * frames
    if kind == "sync":
        return Collector(make_pong(B, threads), policy, frames_per_batch=frames,
                         total_frames=total)
    if B % workers:
        raise ValueError(f"--B {B} must be a multiple of --workers {workers}")
    make = functools.partial(make_pong, B // workers, 1)
    return MultiSyncCollector([make] * workers, policy, frames_per_batch=frames,
                              total_frames=total, num_threads=1)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--collector", choices=("sync", "multi"), default="sync")
    p.add_argument("--B", type=int, default=16)
    p.add_argument("--T", type=int, default=20)
    p.add_argument("--threads", type=int, default=2, help="EnvPool threads (sync)")
    p.add_argument("--workers", type=int, default=2, help="worker processes (multi)")
    p.add_argument("--steps", type=int, default=3200, help="timed agent steps, all envs")
    a = p.parse_args()
    torch.set_num_threads(1)
    batches = max(1, a.steps // (a.B * a.T))
    collector = make_collector(a.collector, a.B, a.T, a.threads, a.workers, batches)
    steps, start = 0, None
    try:
        for i, data in enumerate(collector):
            if i == WARMUP - 1:
                start = time.perf_counter()
            elif i >= WARMUP:
                steps += data.numel()
        wall = time.perf_counter() - start
    finally:
        collector.shutdown()
    print("PEER_RESULT " + json.dumps(dict(steps_per_s=steps / wall, wall_s=wall)))


if __name__ == "__main__":
    main()
