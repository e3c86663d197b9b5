"""CPU-parallel sampler: every worker holds the agent and selects its own envs' actions."""

from __future__ import annotations

from rlpyt.samplers.parallel.base import ParallelSamplerBase
from rlpyt.samplers.parallel.cpu.collectors import (
    CpuEvalCollector,
    CpuResetCollector,
    collector_for_env,
)
from rlpyt.samplers.parallel.worker_channel import Command

__all__ = ["CpuSampler"]


class CpuSampler(ParallelSamplerBase):
    """Worker processes each step their envs with their own copy of the agent.

    The agent's model parameters live in shared memory: workers read them directly,
    and ``agent.sync_shared_memory()`` (called before each batch and evaluation)
    copies them in from a training model on the GPU.  Parameters change only between
    commands, while every worker waits (see ``_publish_parameters``), so a batch is
    always collected with one set of weights.  Each worker calls
    ``agent.sample_mode(itr)`` before its batch and evaluates with
    ``agent.eval_mode(itr)``, so per-iteration schedules apply in the workers too.

    Determinism: with a stochastic policy, each worker samples actions from its own
    torch RNG stream (seeded from the run seed and the worker index), while the serial
    and GPU samplers sample every env's action from the main process's stream.  The
    same seed and worker count give bit-identical batches under any load, but not the
    serial sampler's batches; this is inherent to choosing actions in several
    processes.  Everything else matches the serial sampler exactly: env seeds,
    decorrelation, resets, the evaluation schedule, and the batches of a deterministic
    policy (agent outputs up to float rounding of the smaller per-worker batches).

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
        self.CollectorCls = collector_for_env(self.EnvCls, self.CollectorCls, "CpuSampler")

    def _publish_parameters(self) -> None:
        """Copy the training model into the workers' shared model (a no-op when they are
        the same CPU model).  Called only between commands: every worker has sent its
        result of the previous one and waits, so none reads the parameters while they
        are written (the optimizer's own in-place updates happen then too)."""
        self.agent.sync_shared_memory()
        self.control.param_version.value += 1

    def _obtain_samples(self, itr) -> list:
        self._publish_parameters()
        self.control.announce(Command.SAMPLE, itr)
        return self.monitor.gather("sample", range(len(self.processes)))

    def _eval_begin(self, itr) -> None:
        self._publish_parameters()
