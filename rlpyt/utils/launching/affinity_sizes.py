"""The fields of an affinity code and the sizes derived from them.

Both the layout (``affinity_layout``: which cores and GPUs each part of a run slot
gets) and the validated spec (``affinity_spec``, which lays every slot out to check
it) read these, so they live below both.
"""

from __future__ import annotations

import dataclasses

__all__ = ["AffinitySizes"]


@dataclasses.dataclass(frozen=True)
class AffinitySizes:
    """The keywords of an affinity code (see ``encode_affinity`` for each) and the sizes
    that follow from them; ``AffinitySpec`` adds validation and codes."""

    n_cpu_core: int = 1
    n_gpu: int = 0
    contexts_per_gpu: int = 1
    gpu_per_run: int = 1
    cpu_per_run: int = 1
    cpu_per_worker: int = 1
    cpu_reserved: int = 0
    hyperthread_offset: int | None = None
    n_socket: int | None = None
    async_sample: bool = False
    sample_gpu_per_run: int = 0
    optim_sample_share_gpu: bool = False
    alternating: bool = False
    set_affinity: bool = True

    # ---- derived sizes -------------------------------------------------------------
    @property
    def gpus_per_run(self) -> int:
        """GPUs held by one run (optimizer plus separate sampling GPUs)."""
        if self.n_gpu == 0:
            return 0
        if self.async_sample and not self.optim_sample_share_gpu:
            return self.gpu_per_run + self.sample_gpu_per_run
        return self.gpu_per_run

    @property
    def sample_gpus(self) -> int:
        """Sampling GPUs of an async run: every optimizer GPU when they share (as in
        classic rlpyt, whatever ``sample_gpu_per_run`` says), else ``sample_gpu_per_run``."""
        if not self.async_sample or self.n_gpu == 0:
            return 0
        return self.gpu_per_run if self.optim_sample_share_gpu else self.sample_gpu_per_run

    @property
    def cores_per_context(self) -> int:
        """Cores next to one GPU context (sync GPU mode only)."""
        return self.n_cpu_core // (self.n_gpu * self.contexts_per_gpu)

    @property
    def cores_per_run(self) -> int:
        if self.n_gpu == 0:  # gpu_per_run CPU replicas (SyncRl ranks) of cpu_per_run cores
            return self.cpu_per_run * self.gpu_per_run
        if self.async_sample:  # Classic rlpyt: the cores split evenly among the runs.
            return self.n_cpu_core // max(self.n_run_slots, 1)
        return self.cores_per_context * self.gpu_per_run

    @property
    def optimizer_cores(self) -> int:
        """Cores of each async optimizer replica (``cpu_reserved``, at least 1)."""
        return max(self.cpu_reserved, 1)

    @property
    def n_run_slots(self) -> int:
        if self.n_gpu == 0:
            return self.n_cpu_core // self.cores_per_run
        if self.async_sample:
            return self.n_gpu // self.gpus_per_run
        return self.n_gpu // self.gpus_per_run * self.contexts_per_gpu

    @property
    def n_sockets(self) -> int:
        return self.n_socket or 1

    @property
    def cores_per_socket(self) -> int:
        """Cores the layout uses in each socket."""
        return self.n_cpu_core // self.n_sockets

    @property
    def socket_stride(self) -> int:
        """Core index where each socket starts: the machine's cores per socket."""
        return max(self.n_cpu_core, self.hyperthread_offset or 0) // self.n_sockets

    @property
    def n_machine_cores(self) -> int:
        """Core indices the machine has: ``hyperthread_offset`` if given, else the cores used."""
        return self.socket_stride * self.n_sockets
