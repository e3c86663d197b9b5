"""Affinities: which CPUs and GPUs each run of an experiment grid may use.

A machine's resources are described once by an **affinity code**, a short string
such as ``"8cpu_2cpr_4hto"`` (8 cores, 2 cores per run, hyperthread siblings at
+4). The code holds only counts, so it is machine-independent; it divides the
machine into **run slots**, and ``"1slt_8cpu_2cpr_4hto"`` names slot 1. A train
script receives its slot code on the command line and turns it into an affinity
dict with ``affinity_from_code``, which maps logical core indices onto the CPU
ids this process may use on the machine where it runs.

Tags (value first, fields written only when they differ from the default)::

    slt run_slot        cpu n_cpu_core         gpu n_gpu             cxg contexts_per_gpu
    gpr gpu_per_run     cpr cpu_per_run        cpw cpu_per_worker    res cpu_reserved
    hto hyperthread_offset                     skt n_socket          ass async_sample
    sgr sample_gpu_per_run                     oss optim_sample_share_gpu
    alt alternating     saf set_affinity

An affinity is an ``AttrDict`` with ``all_cpus, cuda_idx, master_cpus, workers_cpus,
master_torch_threads, worker_torch_threads, alternating, set_affinity`` (``all_cpus``:
every CPU of the part, for a launcher's ``taskset``).
``workers_cpus`` holds one tuple of CPU ids per sampler worker. Sync multi-GPU
runs (``gpu_per_run > 1``) get a list of such dicts, one per replica. Async runs
get ``AttrDict(all_cpus=..., optimizer=[...], sampler=..., set_affinity=...)``: one optimizer
dict ``(cuda_idx, cpus, torch_threads, set_affinity)`` per optimizer GPU, and a
sampler dict (CPU sampler) or a list of them, one per sampling GPU.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from rlpyt.utils.collections import AttrDict
from rlpyt.utils.launching.affinity_layout import Part, slot_parts
from rlpyt.utils.launching.affinity_spec import (
    AffinitySpec,
    check_slot,
    parse_code,
    spec_from_kwargs,
)
from rlpyt.utils.launching.cpus import available_cpus, detect_hyperthread_offset, layout_cpus

__all__ = [
    "affinity_cpus",
    "affinity_from_code",
    "affinity_gpus",
    "decode_affinity",
    "encode_affinity",
    "get_n_run_slots",
    "get_run_slot",
    "make_affinity",
    "prepend_run_slot",
    "quick_affinity_code",
    "run_resources",
    "single_run_code",
]


def encode_affinity(
    n_cpu_core: int = 1,
    n_gpu: int = 0,
    contexts_per_gpu: int = 1,
    gpu_per_run: int = 1,
    cpu_per_run: int = 1,
    cpu_per_worker: int = 1,
    cpu_reserved: int = 0,
    hyperthread_offset: int | None = None,
    n_socket: int | None = None,
    run_slot: int | None = None,
    async_sample: bool = False,
    sample_gpu_per_run: int = 0,
    optim_sample_share_gpu: bool = False,
    alternating: bool = False,
    set_affinity: bool = True,
) -> str:
    """Describe a machine's split into run slots as a short code string.

    Args:
        n_cpu_core: physical cores to use (logical indices ``0..n_cpu_core-1`` of the
            CPUs available to the process, numbered socket by socket).
        n_gpu: GPUs to use; 0 makes a CPU-only layout split by ``cpu_per_run``.
        contexts_per_gpu: runs sharing each GPU (each gets its share of the cores).
        gpu_per_run: GPUs per run; > 1 gives sync multi-GPU runs (one affinity per
            replica) or, with ``async_sample``, that many optimizer GPUs. Async runs
            hold ``n_gpu // GPUs per run`` of the GPUs and ``n_cpu_core // runs`` cores
            each; a remainder stays unused (with a warning).
        cpu_per_run: cores per run when ``n_gpu=0``. With GPUs the cores per run are
            ``n_cpu_core / (n_gpu * contexts_per_gpu)`` per GPU of the run.  With
            ``n_gpu=0`` and ``gpu_per_run=N > 1`` a run is N CPU replicas (``SyncRl``
            ranks on gloo) of ``cpu_per_run`` cores each, one affinity per replica: the
            CPU twin of a multi-GPU layout.
        cpu_per_worker: cores given to each sampler worker.
        cpu_reserved: cores of each run (replica) kept for the master process and not
            given to workers. In async runs: cores of each optimizer (0 means 1), taken
            together at the start of the run's cores, the sampler(s) getting the rest.
        hyperthread_offset: None (default) uses no hyperthreads; an offset ``h`` (the
            machine's physical core count) means core ``i``'s sibling is CPU index
            ``i + h``, and each core's sibling is used alongside it. Must be >=
            ``n_cpu_core``; 0 is read as None.
        n_socket: sockets the cores (and GPUs) are spread over, None means one. Socket
            ``s`` starts at core ``s * max(n_cpu_core, hyperthread_offset) / n_socket``
            and the layout uses its first ``n_cpu_core / n_socket`` cores (as classic
            rlpyt); layouts that would straddle sockets are refused.
        run_slot: if given, prefix the code with this slot (``"<k>slt_..."``).
        async_sample: separate sampler and optimizer parts (async runners).
        sample_gpu_per_run: async only: GPUs for batched action selection (0: CPU sampler).
        optim_sample_share_gpu: async only: sample on the optimizer GPUs, one sampler
            per optimizer GPU (``sample_gpu_per_run`` is then ignored).
        alternating: workers for an alternating sampler (two groups on the same
            cores, or on the two hyperthreads of each core).
        set_affinity: whether processes pin themselves to the CPUs (False: only torch
            thread counts follow the affinity).

    Returns:
        A code such as ``"8cpu_2cpr"``; ``encode_affinity(**decode_affinity(c)) == c``.
    """
    kwargs = dict(locals())
    kwargs.pop("run_slot")
    spec = spec_from_kwargs(**kwargs)
    if run_slot is not None:
        check_slot(run_slot, spec)
    return spec.to_code(run_slot)


def decode_affinity(affinity_code: str) -> dict[str, Any]:
    """The ``encode_affinity`` keywords of a code (with ``run_slot``, None if absent)."""
    run_slot, spec = parse_code(affinity_code)
    return dict(dataclasses.asdict(spec), run_slot=run_slot)


def get_n_run_slots(affinity_code: str) -> int:
    """How many runs the layout of ``affinity_code`` holds at once."""
    return parse_code(affinity_code)[1].n_run_slots


def get_run_slot(run_slot_affinity_code: str) -> int | None:
    """The run slot named by a code, or None if it names none."""
    return parse_code(run_slot_affinity_code)[0]


def prepend_run_slot(run_slot: int, affinity_code: str) -> str:
    """The code of slot ``run_slot`` of the layout ``affinity_code``."""
    slot, spec = parse_code(affinity_code)
    if slot is not None:
        raise ValueError(f"affinity code {affinity_code!r} already names run slot {slot}")
    check_slot(run_slot, spec)
    return spec.to_code(run_slot)


def make_affinity(run_slot: int = 0, **kwargs: Any) -> AttrDict | list[AttrDict]:
    """The affinity of slot ``run_slot`` on this machine; keywords as ``encode_affinity``."""
    return affinity_from_code(encode_affinity(run_slot=run_slot, **kwargs))


def affinity_from_code(
    run_slot_affinity_code: str,
    available_cpus: Sequence[int] | None = None,
    available_gpus: int | None = None,
) -> AttrDict | list[AttrDict]:
    """Resolve a (slot) code into CPU ids and CUDA indices on this machine.

    Args:
        run_slot_affinity_code: a code from ``prepend_run_slot`` (no slot means slot 0).
        available_cpus: CPU ids to lay the cores onto, in order (default: the CPUs
            available to this process, or, inside a run started by ``run_experiments``,
            the CPUs of the launcher, passed in ``RLPYT_LAUNCHER_CPUS``).
        available_gpus: number of visible CUDA devices (default: asks torch, only
            when the code uses GPUs).

    Raises:
        ValueError: if the layout needs more CPUs or GPUs than are available; the
            message lists what is available.
    """
    run_slot, spec = parse_code(run_slot_affinity_code)
    cpu_ids = _check_cpus_fit(spec, available_cpus)
    _check_gpus_fit(spec, available_gpus)
    return _Resolver(spec, cpu_ids).slot_affinity(run_slot or 0)


def _check_cpus_fit(spec: AffinitySpec, cpus: Sequence[int] | None) -> tuple[int, ...]:
    cpus = tuple(layout_cpus() if cpus is None else cpus)
    if len(set(cpus)) != len(cpus):
        raise ValueError(f"available_cpus={list(cpus)} repeats a CPU id")
    if spec.n_cpu_index > len(cpus):
        hto = spec.hyperthread_offset
        need = f"n_cpu_core={spec.n_cpu_core}"
        if hto:
            need += f" with hyperthread_offset={hto} (CPU indices 0..{spec.n_cpu_index - 1})"
        detected = detect_hyperthread_offset(cpus) if cpus else None
        fits = f"n_cpu_core <= {len(cpus)} with no hyperthread_offset"
        if detected:
            fits += f", or n_cpu_core <= {detected} with hyperthread_offset={detected}"
        raise ValueError(
            f"{need} but only {len(cpus)} CPUs are available to this process: {list(cpus)}; "
            f"what fits: {fits}"
        )
    return cpus


def _check_gpus_fit(spec: AffinitySpec, n_available: int | None) -> None:
    if spec.n_gpu == 0:
        return
    if n_available is None:
        import torch  # Lazy: only layouts with GPUs need torch here.

        n_available = torch.cuda.device_count()
    if spec.n_gpu > n_available:
        raise ValueError(
            f"n_gpu={spec.n_gpu} but only {n_available} CUDA devices are visible to this "
            f"process; what fits: n_gpu <= {n_available}"
            + (" (or n_gpu=0 for a CPU-only layout)" if n_available == 0 else "")
        )


class _Resolver:
    """Turns one validated spec into per-slot affinities, given real CPU ids."""

    def __init__(self, spec: AffinitySpec, cpu_ids: Sequence[int]):
        self.spec = spec
        self.cpu_ids = tuple(cpu_ids)

    # Cores are core indices (see affinity_layout); these map them (and their
    # hyperthread siblings) onto CPU ids.
    def cpus_of(self, cores: Sequence[int]) -> tuple[int, ...]:
        hto = self.spec.hyperthread_offset
        indices = list(cores) + ([c + hto for c in cores] if hto else [])
        return tuple(self.cpu_ids[i] for i in indices)

    def workers_cpus(self, cores: Sequence[int]) -> tuple[tuple[int, ...], ...]:
        cpw, hto = self.spec.cpu_per_worker, self.spec.hyperthread_offset
        cores = cores[:len(cores) // cpw * cpw]  # No worker gets fewer than cpw cores.
        groups = [tuple(cores[i:i + cpw]) for i in range(0, len(cores), cpw)]
        if hto and self.spec.alternating:  # Second worker group on the siblings.
            groups += [tuple(c + hto for c in group) for group in groups]
            return tuple(tuple(self.cpu_ids[i] for i in g) for g in groups)
        if self.spec.alternating:  # Two worker groups take turns on the same cores.
            groups += groups
        return tuple(self.cpus_of(group) for group in groups)

    def sampler_part(self, part: Part) -> AttrDict:
        cpus = self.cpus_of(part.cores)
        return AttrDict(
            all_cpus=cpus,
            cuda_idx=part.gpu,
            master_cpus=cpus,
            workers_cpus=self.workers_cpus(part.worker_cores),
            master_torch_threads=len(part.cores),
            worker_torch_threads=self.spec.cpu_per_worker,
            alternating=self.spec.alternating,
            set_affinity=self.spec.set_affinity,
        )

    def optimizer_part(self, part: Part) -> AttrDict:
        return AttrDict(
            cuda_idx=part.gpu,
            cpus=self.cpus_of(part.cores),
            torch_threads=len(part.cores),
            set_affinity=self.spec.set_affinity,
        )

    def slot_affinity(self, run_slot: int) -> AttrDict | list[AttrDict]:
        parts = slot_parts(self.spec, run_slot)
        if self.spec.async_sample:
            return self.async_affinity(parts)
        replicas = [self.sampler_part(part) for part in parts]
        return replicas if self.spec.gpu_per_run > 1 else replicas[0]

    def async_affinity(self, parts: list[Part]) -> AttrDict:
        optimizer = [self.optimizer_part(p) for p in parts if p.role == "optimizer"]
        samplers = [self.sampler_part(p) for p in parts if p.role == "sampler"]
        all_cpus = tuple(c for p in optimizer for c in p["cpus"]) + tuple(
            c for p in samplers for c in p["master_cpus"])
        return AttrDict(
            all_cpus=all_cpus,
            optimizer=optimizer,
            # A list of samplers, one per sampling GPU; one sampler dict with none.
            sampler=samplers if self.spec.sample_gpus else samplers[0],
            set_affinity=self.spec.set_affinity,
        )


def _parts(affinity: Any) -> list[dict]:
    """Every leaf part (sampler, replica or optimizer dict) of an affinity."""
    if isinstance(affinity, (list, tuple)):
        return [p for a in affinity for p in _parts(a)]
    if "optimizer" in affinity:
        return _parts(affinity["optimizer"]) + _parts(affinity["sampler"])
    return [affinity]


def affinity_cpus(affinity: Any) -> tuple[int, ...]:
    """Sorted CPU ids used anywhere in an affinity (what its process tree may run on).

    Also accepts the short form ``dict(workers_cpus=[0, 1, ...])`` with int entries.
    """
    cpus: set[int] = set()
    for part in _parts(affinity):
        cpus.update(part.get("master_cpus", ()))
        cpus.update(part.get("cpus", ()))
        for worker in part.get("workers_cpus", ()):
            cpus.update([worker] if isinstance(worker, int) else worker)
    return tuple(sorted(cpus))


def affinity_gpus(affinity: Any) -> tuple[int, ...]:
    """Sorted CUDA indices used anywhere in an affinity."""
    gpus = {p.get("cuda_idx") for p in _parts(affinity)}
    return tuple(sorted(g for g in gpus if g is not None))


def run_resources(affinity_code: str) -> tuple[int, float]:
    """``(logical CPUs, GPUs)`` one run of the layout holds, e.g. to request from Ray.

    GPUs are fractional when runs share a GPU (``contexts_per_gpu > 1``).
    """
    spec = parse_code(affinity_code)[1]
    n_cpus = spec.cores_per_run * (2 if spec.hyperthread_offset else 1)
    return n_cpus, spec.gpus_per_run / spec.contexts_per_gpu


def single_run_code(affinity_code: str, set_affinity: bool | None = None) -> str:
    """Slot 0 of a layout holding exactly one run shaped like a run of ``affinity_code``.

    Used where a scheduler (Ray) rather than the layout decides which machine and
    which CPUs and GPUs a run gets: the run sees only its own resources, numbered
    from 0, and its thread counts, workers and GPU split stay as in the full layout.

    Args:
        affinity_code: the full layout (a run slot, if named, is ignored).
        set_affinity: override pinning (None keeps the layout's choice).
    """
    spec = parse_code(affinity_code)[1]
    cores = spec.cores_per_run
    one_run = dataclasses.replace(
        spec,
        n_cpu_core=cores,
        n_gpu=spec.gpus_per_run,
        contexts_per_gpu=1,
        cpu_per_run=spec.cpu_per_run if spec.n_gpu == 0 else 1,
        hyperthread_offset=cores if spec.hyperthread_offset else None,
        n_socket=None,
        set_affinity=spec.set_affinity if set_affinity is None else bool(set_affinity),
    )
    one_run.check()
    return one_run.to_code(run_slot=0)


def quick_affinity_code(
    n_parallel: int | None = None, use_gpu: bool = True, contexts_per_gpu: int = 1
) -> str:
    """A layout for this machine: runs on the GPUs, or ``n_parallel`` CPU-only runs.

    Uses every CPU available to the process, with hyperthread siblings when the
    CPU numbering shows them (second half of the CPUs = siblings of the first).

    Args:
        n_parallel: with GPUs: at most this many GPUs (None: all GPUs). Without GPUs:
            the cores are split into this many runs (None: one run on all cores).
        use_gpu: use the visible CUDA devices (if any).
        contexts_per_gpu: runs sharing each GPU, each with its share of the cores
            (GPU layouts only; default 1).
    """
    if n_parallel is not None and (not isinstance(n_parallel, int) or n_parallel < 1):
        raise ValueError(f"n_parallel={n_parallel!r} is invalid: use None or an integer >= 1")
    if not isinstance(contexts_per_gpu, int) or contexts_per_gpu < 1:
        raise ValueError(f"contexts_per_gpu={contexts_per_gpu!r} is invalid: use an integer >= 1")
    cpus = available_cpus()
    hto = detect_hyperthread_offset(cpus)
    n_core = hto or len(cpus)
    n_gpu = 0
    if use_gpu:
        import torch  # Lazy: only asked when GPUs may be used.

        n_gpu = torch.cuda.device_count()
    if n_gpu > 0:
        n_gpu = min(n_gpu, n_parallel or n_gpu)
        n_run = n_gpu * contexts_per_gpu
        if n_run > n_core:
            raise ValueError(
                f"{n_gpu} GPUs x contexts_per_gpu={contexts_per_gpu} runs do not fit the "
                f"{n_core} cores available to this process; what fits: n_parallel * "
                f"contexts_per_gpu <= {n_core}")
        return encode_affinity(n_cpu_core=n_core // n_run * n_run, n_gpu=n_gpu,
                               contexts_per_gpu=contexts_per_gpu, hyperthread_offset=hto)
    n_run = n_parallel or 1
    if n_run > n_core:
        raise ValueError(
            f"n_parallel={n_run} runs do not fit the {n_core} cores available to this "
            f"process ({list(cpus)}); what fits: n_parallel <= {n_core}"
        )
    cpu_per_run = n_core // n_run
    return encode_affinity(
        n_cpu_core=cpu_per_run * n_run, cpu_per_run=cpu_per_run, hyperthread_offset=hto
    )
