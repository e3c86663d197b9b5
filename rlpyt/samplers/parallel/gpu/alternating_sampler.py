"""Alternating samplers: two worker groups take turns, so action selection overlaps env steps."""

from __future__ import annotations

from rlpyt.samplers.parallel.base import split_evenly
from rlpyt.samplers.parallel.gpu.sampler import GpuSampler

__all__ = ["AlternatingSampler", "NoOverlapAlternatingSampler"]


class AlternatingSampler(GpuSampler):
    """``GpuSampler`` with the envs in two halves, each stepped by its own worker group.

    While group 0 steps its envs, the master selects group 1's actions, and vice
    versa, so the GPU (or the master's CPU) and the env workers are busy at the same
    time.  Group 0 holds envs ``0 .. ceil(B/2) - 1`` and the first ``ceil(n/2)``
    workers.  Needs at least 2 workers and ``batch_B >= 2``.

    A recurrent agent must be an ``Alternating...`` agent
    (``AlternatingRecurrentAgentMixin``): it keeps one recurrent state per group.
    Keywords as ``GpuSampler``.
    """

    alternating = True

    def _worker_env_slices(self, n_workers: int) -> list[tuple[int, int]]:
        B = self.batch_spec.B
        if n_workers < 2 or B < 2:
            raise ValueError(f"{type(self).__name__} needs at least 2 workers and batch_B >= 2, "
                             f"got {n_workers} workers and batch_B={B}")
        n0, B0 = (n_workers + 1) // 2, (B + 1) // 2
        if n0 > B0 or n_workers - n0 > B - B0:
            raise ValueError(f"{type(self).__name__}: {n_workers} workers are too many for "
                             f"batch_B={B} (each group of workers shares half the envs)")
        return split_evenly(B0, n0) + split_evenly(B - B0, n_workers - n0, start=B0)

    def _worker_groups(self) -> list[list[int]]:
        n = len(self.worker_specs)
        n0 = (n + 1) // 2
        return [list(range(n0)), list(range(n0, n))]

    def _check_agent(self, agent) -> None:
        if not getattr(agent, "recurrent", False):
            return
        if not hasattr(agent, "set_alternating_groups"):
            raise TypeError(
                f"{type(self).__name__} steps two env groups in turn, so a recurrent agent "
                f"must keep one state per group: use the Alternating version of "
                f"{type(agent).__name__} (AlternatingRecurrentAgentMixin)")
        B0 = (self.batch_spec.B + 1) // 2
        agent.set_alternating_groups((B0, self.batch_spec.B - B0))
        self.alternating_agent_steps = True


class NoOverlapAlternatingSampler(AlternatingSampler):
    """``AlternatingSampler`` whose two groups never step envs at the same time.

    A group is released only after the other group has finished its step, so both
    groups may share the same CPU cores without contending; the master still
    selects one group's actions while the other group steps.
    """

    overlap = False
