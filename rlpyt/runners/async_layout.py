"""Where the parts of an asynchronous run run: the affinity split between the optimizer
(this process) and the sampler process, and the run's start line that says so."""

from __future__ import annotations

import warnings

__all__ = ["describe_layout", "pinned_to", "split_affinity"]


def split_affinity(affinity) -> tuple[dict, dict]:
    """``(optimizer part, sampler part)`` of an async affinity.

    Accepts what ``make_affinity(..., async_sample=True)`` returns (one optimizer and
    one sampler part), or the short form ``dict(cuda_idx=..., workers_cpus=[...])``,
    where ``cuda_idx`` is the optimizer's GPU and the rest describes the sampler.
    """
    if affinity is None:
        return {}, {}
    if "optimizer" in affinity:
        optimizer, sampler = affinity["optimizer"], affinity["sampler"]
        if isinstance(optimizer, (list, tuple)):
            if len(optimizer) != 1:
                raise ValueError(
                    f"affinity has {len(optimizer)} optimizer parts (gpu_per_run="
                    f"{len(optimizer)}): AsyncRl trains on one device; use gpu_per_run=1")
            optimizer = optimizer[0]
        if isinstance(sampler, (list, tuple)):
            if len(sampler) != 1:
                raise ValueError(
                    f"affinity has {len(sampler)} sampler parts (sample_gpu_per_run="
                    f"{len(sampler)}): AsyncRl runs one sampler process; use "
                    f"sample_gpu_per_run <= 1")
            sampler = sampler[0]
        return dict(optimizer), dict(sampler)
    affinity = dict(affinity)
    optimizer = dict(cuda_idx=affinity.pop("cuda_idx", None),
                     torch_threads=affinity.get("master_torch_threads"),
                     set_affinity=affinity.get("set_affinity", True))
    affinity.pop("master_cpus", None)
    return optimizer, affinity


def pinned_to(cpus, affinity: dict) -> str:
    if not cpus or not affinity.get("set_affinity", True):
        return "unpinned"
    return "pinned to CPUs " + ", ".join(str(c) for c in cpus)


def describe_layout(sampler, sampler_affinity: dict, optimizer_affinity: dict,
                    threads: int) -> str:
    """Where an async run's parts run, for its start line."""
    inner = sampler.sampler
    envs = f"{sampler.batch_spec.B} envs"
    if sampler.eval_n_envs:
        envs += f" + {sampler.eval_n_envs} eval envs"
    worker_cpus = getattr(inner, "_worker_cpus", None)  # Parallel samplers: the workers.
    n_actors = getattr(inner, "n_actors", None)  # Ray samplers: the actors.
    if n_actors is not None:
        where = f"stepped by {n_actors} Ray actors"
    elif worker_cpus is None:
        where = "stepped in the sampler process"
    else:
        with warnings.catch_warnings():  # More workers than envs: the sampler warns.
            warnings.simplefilter("ignore")
            cpus = worker_cpus(sampler_affinity)
        pinned = pinned_to([c[0] if len(c) == 1 else c for c in cpus if c], sampler_affinity)
        where = f"in {len(cpus)} worker processes ({pinned})"
    sampler_part = f"sampler process: {type(sampler).__name__}, {envs} {where}"
    if sampler_affinity.get("cuda_idx") is not None:
        sampler_part += f", acting on cuda:{sampler_affinity['cuda_idx']}"
    if sampler_affinity.get("master_cpus"):
        sampler_part += f", the process pinned to {sampler_affinity['master_cpus']}"
    cuda, cpus = optimizer_affinity.get("cuda_idx"), optimizer_affinity.get("cpus")
    device = "the CPU" if cuda is None else f"cuda:{cuda}"
    return (f"{sampler_part}; optimizer in this process on {device}, {threads} torch "
            f"thread{'s' if threads != 1 else ''}, {pinned_to(cpus, optimizer_affinity)}")
