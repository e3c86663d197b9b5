"""GPU sampler: workers only step envs; the master selects every env's action in one batch."""

from __future__ import annotations

from rlpyt.samplers.parallel.base import ParallelSamplerBase
from rlpyt.samplers.parallel.gpu.action_server import ActionServer
from rlpyt.samplers.parallel.gpu.collectors import (
    GpuEvalCollector,
    GpuResetCollector,
    build_step_buffers,
)
from rlpyt.samplers.parallel.worker_channel import Command

__all__ = ["GpuSampler"]


class GpuSampler(ActionServer, ParallelSamplerBase):
    """Workers step envs; the master runs ``agent.step`` on all ``batch_B`` observations at once.

    The agent stays in the main process, on the GPU when the runner's affinity sets
    ``cuda_idx`` (the runner calls ``agent.to_device``), on the CPU otherwise.  Each
    step, workers write observations into a shared step buffer, the master writes
    the actions back, and workers step their envs (see ``action_server``).

    Determinism: one agent in the main process draws every env's action from one RNG
    stream, in env order, exactly as ``SerialSampler`` does, so the same seed gives the
    serial sampler's batches, trajectories and evaluations, whatever the number of
    workers or the machine's load.

    Keywords as ``ParallelSamplerBase``; defaults ``CollectorCls=GpuResetCollector``,
    ``eval_CollectorCls=GpuEvalCollector``.
    """

    agent_in_workers = False

    def __init__(self, *args, CollectorCls=GpuResetCollector,
                 eval_CollectorCls=GpuEvalCollector, **kwargs):
        super().__init__(*args, CollectorCls=CollectorCls, eval_CollectorCls=eval_CollectorCls,
                         **kwargs)

    def _check_collectors(self) -> None:
        name = type(self).__name__
        if not issubclass(self.CollectorCls, GpuResetCollector):
            raise TypeError(f"{name}: CollectorCls={self.CollectorCls.__name__} is invalid; "
                            "use GpuResetCollector or GpuWaitResetCollector (the master "
                            "selects actions)")
        if not issubclass(self.eval_CollectorCls, GpuEvalCollector):
            raise TypeError(f"{name}: eval_CollectorCls={self.eval_CollectorCls.__name__} is "
                            "invalid; use GpuEvalCollector")

    def _check_agent(self, agent) -> None:
        if getattr(agent, "alternating", False) and hasattr(agent, "set_alternating_groups"):
            agent.set_alternating_groups(None)  # Plain recurrent stepping on all envs.

    def _build_master_buffers(self, examples: dict, bootstrap_value: bool) -> None:
        self.step_buffer_np, self.eval_step_buffer_np = build_step_buffers(
            examples, self.batch_spec.B, self.eval_n_envs, bootstrap_value)

    def _worker_groups(self) -> list[list[int]]:
        return [list(range(len(self.worker_specs)))]

    def _after_workers_started(self, agent) -> None:
        self.build_groups(self._worker_groups())
        agent.reset()
        agent.sample_mode(itr=0)

    def _obtain_samples(self, itr) -> list:
        self.control.announce(Command.SAMPLE, itr)
        self.serve_actions(itr)
        return self.monitor.gather("sample", range(len(self.processes)))
