"""Collectors of the asynchronous samplers (the names classic rlpyt launch scripts import).

The async samplers do the double buffering themselves (``rlpyt.samplers.async_.base``):
each batch is collected into the wrapped sampler's buffer and copied into the free
slot of the double buffer in one step.  The collectors therefore step and reset envs
exactly as their synchronous parents do; these classes exist so that scripts written
for classic rlpyt (``CollectorCls=DbCpuResetCollector``) run unchanged, and so a
collector chosen for an async sampler says so in its name.
"""

from __future__ import annotations

from rlpyt.samplers.parallel.cpu.collectors import CpuResetCollector, CpuWaitResetCollector
from rlpyt.samplers.parallel.gpu.collectors import GpuResetCollector, GpuWaitResetCollector

__all__ = [
    "DbCpuResetCollector",
    "DbCpuWaitResetCollector",
    "DbGpuResetCollector",
    "DbGpuWaitResetCollector",
]


class DbCpuResetCollector(CpuResetCollector):
    """``CpuResetCollector`` for ``AsyncSerialSampler`` and ``AsyncCpuSampler``."""


class DbCpuWaitResetCollector(CpuWaitResetCollector):
    """``CpuWaitResetCollector`` for ``AsyncSerialSampler`` and ``AsyncCpuSampler``."""


class DbGpuResetCollector(GpuResetCollector):
    """``GpuResetCollector`` for ``AsyncGpuSampler`` and ``AsyncAlternatingSampler``."""


class DbGpuWaitResetCollector(GpuWaitResetCollector):
    """``GpuWaitResetCollector`` for ``AsyncGpuSampler`` and ``AsyncAlternatingSampler``."""
