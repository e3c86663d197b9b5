"""CPU-parallel sampler: every worker holds the agent and selects its own envs' actions."""

from __future__ import annotations

from rlpyt.samplers.parallel.base import ParallelSamplerBase
from rlpyt.samplers.parallel.control import Command
from rlpyt.samplers.parallel.cpu.collectors import (
    CpuEvalCollector,
    CpuResetCollector,
    CpuVecResetCollector,
    CpuWaitResetCollector,
)
from rlpyt.samplers.parallel.vec_stepping import is_vec_env_cls

__all__ = ["CpuSampler"]


class CpuSampler(ParallelSamplerBase):
    """Worker processes each step their envs with their own copy of the agent.

    The agent's model parameters live in shared memory: workers read them directly,
    and ``agent.sync_shared_memory()`` (called before each batch and evaluation)
    copies them in from a training model on the GPU.  Each worker calls
    ``agent.sample_mode(itr)`` before its batch and evaluates with
    ``agent.eval_mode(itr)``, so per-iteration schedules apply in the workers too.

    Keywords as ``ParallelSamplerBase``; defaults ``CollectorCls=CpuResetCollector``,
    ``eval_CollectorCls=CpuEvalCollector``.  With a vectorised ``EnvCls``
    (``rlpyt.envs.vec``), ``CpuResetCollector`` is replaced by
    ``CpuVecResetCollector`` (one env call per worker and step).
    """

    agent_in_workers = True

    def __init__(self, *args, CollectorCls=CpuResetCollector,
                 eval_CollectorCls=CpuEvalCollector, **kwargs):
        super().__init__(*args, CollectorCls=CollectorCls, eval_CollectorCls=eval_CollectorCls,
                         **kwargs)

    def _check_collectors(self) -> None:
        from rlpyt.samplers.parallel.gpu.collectors import GpuResetCollector

        if issubclass(self.CollectorCls, GpuResetCollector):
            raise TypeError(f"CpuSampler: CollectorCls={self.CollectorCls.__name__} needs a "
                            "master that selects actions; use GpuSampler, or CpuResetCollector "
                            "/ CpuWaitResetCollector")
        if is_vec_env_cls(self.EnvCls):
            if issubclass(self.CollectorCls, CpuWaitResetCollector):
                raise TypeError(
                    f"CpuSampler: a vectorised EnvCls ({self.EnvCls.__name__}) resets finished "
                    "sub-envs inside its step call, so it cannot wait for the batch end; use "
                    "CollectorCls=CpuResetCollector")
            if self.CollectorCls is CpuResetCollector:
                self.CollectorCls = CpuVecResetCollector

    def _obtain_samples(self, itr) -> list:
        self.agent.sync_shared_memory()
        self.control.announce(Command.SAMPLE, itr)
        return self.monitor.gather("sample", range(len(self.processes)))

    def _eval_begin(self, itr) -> None:
        self.agent.sync_shared_memory()
