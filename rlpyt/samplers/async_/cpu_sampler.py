"""``AsyncCpuSampler``: CPU worker processes, each with its own copy of the agent."""

from __future__ import annotations

from rlpyt.samplers.async_.base import AsyncSamplerBase
from rlpyt.samplers.async_.collectors import DbCpuResetCollector
from rlpyt.samplers.parallel.cpu.collectors import CpuEvalCollector
from rlpyt.samplers.parallel.cpu.sampler import CpuSampler

__all__ = ["AsyncCpuSampler"]


class AsyncCpuSampler(AsyncSamplerBase):
    """``CpuSampler`` in the sampler process of an asynchronous run.

    The sampler process starts the workers (``affinity["sampler"]["workers_cpus"]``)
    and, between batches, loads newly published parameters into the shared-memory
    model the workers act with, so a worker never sees a half-written model.
    Keywords as ``CpuSampler`` (defaults ``CollectorCls=DbCpuResetCollector``,
    ``eval_CollectorCls=CpuEvalCollector``) plus ``batch_timeout``.
    """

    SamplerCls = CpuSampler

    def __init__(self, *args, CollectorCls=DbCpuResetCollector,
                 eval_CollectorCls=CpuEvalCollector, **kwargs):
        super().__init__(*args, CollectorCls=CollectorCls, eval_CollectorCls=eval_CollectorCls,
                         **kwargs)
