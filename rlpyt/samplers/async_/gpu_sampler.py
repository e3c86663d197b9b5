"""``AsyncGpuSampler``: workers step envs, the sampler process selects all actions at once."""

from __future__ import annotations

from rlpyt.samplers.async_.base import AsyncSamplerBase
from rlpyt.samplers.async_.collectors import DbGpuResetCollector
from rlpyt.samplers.parallel.gpu.collectors import GpuEvalCollector
from rlpyt.samplers.parallel.gpu.sampler import GpuSampler

__all__ = ["AsyncGpuSampler"]


class AsyncGpuSampler(AsyncSamplerBase):
    """``GpuSampler`` (central inference) in the sampler process of an asynchronous run.

    The sampler process holds the acting model, on ``affinity["sampler"]["cuda_idx"]``
    when set (from ``encode_affinity(..., async_sample=True, sample_gpu_per_run=1)``),
    else on its CPU, and loads newly published parameters into it between batches.
    Keywords as ``GpuSampler`` (defaults ``CollectorCls=DbGpuResetCollector``,
    ``eval_CollectorCls=GpuEvalCollector``) plus ``batch_timeout``.
    """

    SamplerCls = GpuSampler

    def __init__(self, *args, CollectorCls=DbGpuResetCollector,
                 eval_CollectorCls=GpuEvalCollector, **kwargs):
        super().__init__(*args, CollectorCls=CollectorCls, eval_CollectorCls=eval_CollectorCls,
                         **kwargs)
