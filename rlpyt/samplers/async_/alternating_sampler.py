"""``AsyncAlternatingSampler``: central inference overlapped with env stepping, asynchronously."""

from __future__ import annotations

from rlpyt.samplers.async_.base import AsyncSamplerBase
from rlpyt.samplers.async_.collectors import DbGpuResetCollector
from rlpyt.samplers.parallel.gpu.alternating_sampler import AlternatingSampler
from rlpyt.samplers.parallel.gpu.collectors import GpuEvalCollector

__all__ = ["AsyncAlternatingSampler"]


class AsyncAlternatingSampler(AsyncSamplerBase):
    """``AlternatingSampler`` in the sampler process of an asynchronous run.

    Two worker groups step their halves of the envs in turn while the sampler process
    selects the other half's actions.  Keywords as ``AlternatingSampler`` (defaults
    ``CollectorCls=DbGpuResetCollector``, ``eval_CollectorCls=GpuEvalCollector``) plus
    ``batch_timeout``; recurrent agents must be ``Alternating...`` agents.
    """

    SamplerCls = AlternatingSampler

    def __init__(self, *args, CollectorCls=DbGpuResetCollector,
                 eval_CollectorCls=GpuEvalCollector, **kwargs):
        super().__init__(*args, CollectorCls=CollectorCls, eval_CollectorCls=eval_CollectorCls,
                         **kwargs)
