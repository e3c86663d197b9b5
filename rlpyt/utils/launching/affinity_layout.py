"""Which core indices and GPUs each part of a run slot gets, machine-independently.

The numbers follow classic rlpyt's layouts for the same arguments (a contract that
launch scripts rely on).  The machine is described by ``n_cpu_core`` cores used,
``hyperthread_offset`` (the machine's physical core count when given: core ``c``'s
hyperthread sibling is index ``c + hyperthread_offset``) and ``n_socket``.  Each
socket starts at core index ``s * max(n_cpu_core, hyperthread_offset) / n_socket``
and the layout uses its first ``n_cpu_core / n_socket`` cores, so on a machine of 2 x
10 cores (``hyperthread_offset=20``) a 16-core layout uses cores 0-7 and 10-17.

Sync runs lay their cores out as consecutive blocks over the used cores (one block
per run, per GPU context or per replica).  Async runs with GPUs are laid out as
classic rlpyt does: a run holds ``n_gpu // GPUs per run`` of the GPUs and
``n_cpu_core // runs`` cores; its optimizer processes take ``cpu_reserved`` cores
each (at least 1) at the start of the run's cores, and the sampler(s) the rest.
"""

from __future__ import annotations

import dataclasses

from rlpyt.utils.launching.affinity_sizes import AffinitySizes

__all__ = ["Part", "core_index", "slot_parts"]


@dataclasses.dataclass(frozen=True)
class Part:
    """One process group of a run slot.

    ``role`` is ``"sampler"`` (a sampler, or a replica of a sync run) or
    ``"optimizer"``; ``cores`` are the core indices it may use (their siblings are
    added by the resolver) and ``worker_cores`` those split among sampler workers.
    """

    role: str
    gpu: int | None
    cores: tuple[int, ...]
    worker_cores: tuple[int, ...] = ()


def core_index(spec: AffinitySizes, k: int) -> int:
    """Core index of the ``k``-th used core (used cores counted socket by socket)."""
    return (k // spec.cores_per_socket) * spec.socket_stride + k % spec.cores_per_socket


def slot_parts(spec: AffinitySizes, run_slot: int) -> list[Part]:
    """The parts of run slot ``run_slot``: replicas, or optimizers then samplers."""
    if not spec.async_sample:
        return _sync_parts(spec, run_slot)
    if spec.n_gpu == 0:
        return _async_cpu_parts(spec, run_slot)
    return _async_gpu_parts(spec, run_slot)


def _block(spec: AffinitySizes, first: int, length: int) -> tuple[int, ...]:
    return tuple(core_index(spec, k) for k in range(first, first + length))


def _usable(cores: tuple[int, ...], cpu_per_worker: int) -> tuple[int, ...]:
    return cores[:len(cores) // cpu_per_worker * cpu_per_worker]


def _sync_parts(spec: AffinitySizes, run_slot: int) -> list[Part]:
    """One part per replica: a block of cores (next to its GPU, if any)."""
    res = spec.cpu_reserved
    if spec.n_gpu == 0:
        cpr = spec.cpu_per_run
        blocks = [(None, run_slot * spec.cores_per_run + i * cpr)
                  for i in range(spec.gpu_per_run)]
        length = cpr
    else:
        # Slots go over GPU groups first, so fewer runs than slots use every GPU.
        n_group = spec.n_gpu // spec.gpu_per_run
        group, context = run_slot % n_group, run_slot // n_group
        length = spec.cores_per_context
        gpus = range(group * spec.gpu_per_run, (group + 1) * spec.gpu_per_run)
        blocks = [(gpu, (gpu * spec.contexts_per_gpu + context) * length) for gpu in gpus]
    parts = []
    for gpu, first in blocks:
        cores = _block(spec, first, length)
        parts.append(Part("sampler", gpu, cores, cores[res:]))
    return parts


def _async_cpu_parts(spec: AffinitySizes, run_slot: int) -> list[Part]:
    """No GPU: the optimizer takes the run's first cores, the sampler the rest."""
    cores = _block(spec, run_slot * spec.cores_per_run, spec.cores_per_run)
    n_opt = spec.optimizer_cores
    sampler = _usable(cores[n_opt:], spec.cpu_per_worker)
    return [Part("optimizer", None, cores[:n_opt]), Part("sampler", None, sampler, sampler)]


def _async_gpu_parts(spec: AffinitySizes, run_slot: int) -> list[Part]:
    """Classic rlpyt's async layout (see the module docstring)."""
    gpr, res, cpw = spec.gpu_per_run, spec.optimizer_cores, spec.cpu_per_worker
    total, n_sampler = spec.gpus_per_run, spec.sample_gpus
    n_socket = spec.n_sockets
    gpu_per_socket, stride = spec.n_gpu // n_socket, spec.socket_stride
    cpr = spec.cores_per_run
    sampler_cores = (cpr - res * gpr) // cpw * cpw
    per_sampler = sampler_cores // max(n_sampler, 1)
    if total <= gpu_per_socket:  # The run sits in one socket.
        run_per_socket = spec.n_run_slots // n_socket
        socket, in_socket = divmod(run_slot, run_per_socket)
        base = socket * stride + in_socket * cpr
        low_gpu = socket * gpu_per_socket + in_socket * total
        opt_gpus = list(range(low_gpu, low_gpu + gpr))
        opt_first = [base + i * res for i in range(gpr)]
        if spec.optim_sample_share_gpu:
            smp_gpus = opt_gpus
        else:
            smp_gpus = list(range(low_gpu + gpr, low_gpu + gpr + n_sampler))
        smp_first = [base + gpr * res + i * per_sampler for i in range(len(smp_gpus))]
        cpu_sampler = [tuple(range(base + gpr * res, base + gpr * res + sampler_cores))]
    else:  # The run spans sockets: each holds its share of the optimizer GPUs.
        socket_per_run = n_socket // spec.n_run_slots
        opt_here, smp_here = gpr // socket_per_run, n_sampler // socket_per_run
        opt_gpus, smp_gpus, opt_first, smp_first, cpu_sampler = [], [], [], [], []
        for s in range(run_slot * socket_per_run, (run_slot + 1) * socket_per_run):
            low_gpu = s * gpu_per_socket
            opt_gpus += range(low_gpu, low_gpu + opt_here)
            opt_first += [s * stride + i * res for i in range(opt_here)]
            smp_gpus += range(low_gpu + opt_here, low_gpu + opt_here + smp_here)
            smp_first += [s * stride + opt_here * res + i * per_sampler for i in range(smp_here)]
            # Classic rlpyt offsets this sampler block by gpu_per_run // GPUs per socket
            # optimizer cores; layouts where that collides are refused by the checks.
            low = s * stride + (gpr // gpu_per_socket) * res
            cpu_sampler.append(tuple(range(low, low + sampler_cores // socket_per_run)))
    parts = [Part("optimizer", gpu, tuple(range(first, first + res)))
             for gpu, first in zip(opt_gpus, opt_first)]
    if n_sampler == 0:
        cores = tuple(c for block in cpu_sampler for c in block)
        return parts + [Part("sampler", None, cores, cores)]
    for gpu, first in zip(smp_gpus, smp_first):
        cores = tuple(range(first, first + per_sampler))
        parts.append(Part("sampler", gpu, cores, cores))
    return parts
