"""Where the processes of a ``rlpyt train`` run go: the GPU, the CPUs of the sampler's
workers and the main process's torch threads, for one run or for each rank of an
``--nproc`` (or torchrun) run, whose ranks split this machine's CPUs evenly."""

from __future__ import annotations

import os

from rlpyt.utils.process import available_cpus, launched_by_torchrun

__all__ = ["rank_affinities", "run_affinity"]


def run_affinity(config: dict) -> dict:
    """The runner's affinity for ``config``: the serial sampler needs only the GPU and
    threads; the parallel ones pin ``workers`` workers (default: one per CPU) to the
    first CPUs, unless there are more workers than CPUs."""
    cuda_idx = config.get("cuda_idx")
    threads = config.get("torch_threads", 1)
    if config.get("sampler_type", "serial") == "serial":
        return dict(cuda_idx=cuda_idx, master_torch_threads=threads)
    cpus = available_cpus()
    n = config.get("workers") or len(cpus)
    if n > len(cpus):  # More workers than CPUs: run them unpinned.
        return dict(cuda_idx=cuda_idx, n_workers=n, master_torch_threads=threads)
    return dict(cuda_idx=cuda_idx, workers_cpus=cpus[:n], master_cpus=cpus,
                master_torch_threads=threads)


def rank_affinities(config: dict) -> list[dict]:
    """One affinity per rank of this machine: ``--nproc`` ranks, or under torchrun its
    ``LOCAL_WORLD_SIZE``.  With ``--cuda-idx K`` local rank ``i`` trains on GPU ``K + i``
    (NCCL); otherwise on CPU (gloo), the machine's CPUs split evenly among the ranks."""
    n = int(os.environ.get("LOCAL_WORLD_SIZE", 0)) if launched_by_torchrun() else 0
    n = n or config.get("nproc", 1)
    cpus = available_cpus()
    share = max(len(cpus) // n, 1)
    affinities = []
    for i in range(n):
        rank_config = dict(config)
        if config.get("cuda_idx") is not None:
            rank_config["cuda_idx"] = config["cuda_idx"] + i
        if config.get("workers") is None and len(cpus) >= n:
            rank_config["workers"] = share
        affinity = run_affinity(rank_config)
        if "workers_cpus" in affinity and len(cpus) >= n:  # each rank on its own CPUs
            own = cpus[i * share:(i + 1) * share]
            affinity.update(workers_cpus=own[:len(affinity["workers_cpus"])], master_cpus=own)
        affinities.append(affinity)
    return affinities
