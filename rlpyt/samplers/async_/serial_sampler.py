"""``AsyncSerialSampler``: all envs stepped in the sampler process itself."""

from __future__ import annotations

from rlpyt.samplers.async_.base import AsyncSamplerBase
from rlpyt.samplers.async_.collectors import DbCpuResetCollector
from rlpyt.samplers.serial.collectors import SerialEvalCollector
from rlpyt.samplers.serial.sampler import SerialSampler

__all__ = ["AsyncSerialSampler"]


class AsyncSerialSampler(AsyncSamplerBase):
    """``SerialSampler`` in the sampler process of an asynchronous run.

    Keywords as ``SerialSampler`` (defaults ``CollectorCls=DbCpuResetCollector``,
    ``eval_CollectorCls=SerialEvalCollector``) plus ``batch_timeout`` (see
    ``AsyncSamplerBase``).  One process steps every env, so this suits cheap envs or a
    sampler that needs one core next to the optimizer.
    """

    SamplerCls = SerialSampler

    def __init__(self, *args, CollectorCls=DbCpuResetCollector,
                 eval_CollectorCls=SerialEvalCollector, **kwargs):
        super().__init__(*args, CollectorCls=CollectorCls, eval_CollectorCls=eval_CollectorCls,
                         **kwargs)
