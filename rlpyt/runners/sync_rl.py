"""Data-parallel training on ``torch.distributed``: one full replica per rank.

Every rank holds its own sampler, agent and algorithm; gradients are averaged across
ranks in the backward pass by ``DistributedDataParallel`` (gloo on CPU, NCCL on GPU),
so all replicas take the same optimizer steps and keep identical parameters.  Rank 0
logs, evaluates and snapshots; trajectory statistics and optimizer diagnostics are
gathered from every rank.

The runner either starts the ranks itself (``torch.multiprocessing`` spawn, one rank per
entry of the ``affinity`` list, a free local port) and watches them, or, when the
process was started by ``torchrun`` (``RANK``, ``WORLD_SIZE`` and ``LOCAL_RANK`` set),
joins that job as its rank: the same launch script runs on one machine and across
nodes.  See ``docs/distributed.md``.
"""

from __future__ import annotations

import datetime
import hashlib
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch
import torch.distributed as dist

from rlpyt.runners import checkpoint_files as ckpt
from rlpyt.runners.diagnostics import extend_opt_infos
from rlpyt.runners.minibatch_rl import MinibatchRlBase, MinibatchRlEval
from rlpyt.runners.sync_checkpointer import RankCheckpointer, from_rank0
from rlpyt.runners.sync_ranks import SyncRlError, spawn_ranks
from rlpyt.utils.logging import logger
from rlpyt.utils.logging.rank_logging import capture_logger_state, rank_logging
from rlpyt.utils.process import launched_by_torchrun
from rlpyt.utils.seed import make_seed, set_seed

__all__ = ["SyncRl", "SyncRlError", "SyncRlEval", "SyncRlMixin", "agent_digest",
           "launched_by_torchrun", "rank_seed"]



# Spawn-key tag of the ranks' own streams.  A run's envs are the children ``(i,)`` of
# ``SeedSequence(seed)`` (``rlpyt.utils.seed.env_seeds``), parallel sampler workers are
# ``(0x5A4D, i)``; a rank's children ``(_RANK_STREAM, r)`` are a branch of their own, so
# no rank draws the stream of an env or a worker (with ``(r,)``, rank r would be env r).
_RANK_STREAM = 0x524B


def rank_seed(seed: int, rank: int) -> int:
    """A seed for rank ``rank``'s own random streams (exploration noise, replay
    sampling), derived from the run seed so that ranks never share a stream with each
    other, with an env or with a sampler worker."""
    return int(np.random.SeedSequence(seed, spawn_key=(_RANK_STREAM, rank))
               .generate_state(1)[0])


def _as_affinity_list(affinity) -> list[dict]:
    if affinity is None:
        return [{}]
    if isinstance(affinity, Mapping):
        if "optimizer" in affinity:
            raise ValueError(
                "affinity is an async layout (optimizer/sampler parts), which SyncRl cannot "
                "use; build a sync one with make_affinity(..., gpu_per_run=N) (one entry per "
                "replica)"
            )
        return [dict(affinity)]
    if isinstance(affinity, Sequence) and affinity and all(
            isinstance(a, Mapping) for a in affinity):
        return [dict(a) for a in affinity]
    raise ValueError(
        f"affinity={affinity!r} must be a list of affinity dicts, one per replica (e.g. "
        f"make_affinity(n_cpu_core=..., n_gpu=N, gpu_per_run=N)), or a single dict"
    )


class SyncRlMixin:
    """Turns a ``MinibatchRlBase`` runner into a data-parallel one; see ``SyncRl``."""

    checkpointer_cls = RankCheckpointer  # rank 0 writes, every rank its own part

    def __init__(self, algo, agent, sampler, n_steps, seed=None, affinity=None,
                 log_interval_steps=1e5, log_traj_window=100, backend: str | None = None,
                 timeout_s: float = 1800.0, checkpoint_interval_steps=None,
                 checkpoint_replay=True, max_abs_value=None, divergence="stop",
                 checkpoint_keep=1):
        self.affinities = _as_affinity_list(affinity)
        super().__init__(algo, agent, sampler, n_steps, seed=seed, affinity=None,
                         log_interval_steps=log_interval_steps, log_traj_window=log_traj_window,
                         checkpoint_interval_steps=checkpoint_interval_steps,
                         checkpoint_replay=checkpoint_replay, max_abs_value=max_abs_value,
                         divergence=divergence, checkpoint_keep=checkpoint_keep)
        if backend not in (None, "gloo", "nccl", "mpi"):
            raise ValueError(f"backend={backend!r} must be None (auto), 'gloo', 'nccl' or 'mpi'")
        if not (isinstance(timeout_s, (int, float)) and timeout_s > 0):
            raise ValueError(f"timeout_s={timeout_s!r} must be a positive number of seconds")
        self.backend = backend
        self.timeout_s = float(timeout_s)
        self._on_started = None  # set by train_rank

    @property
    def n_replicas(self) -> int:
        """Ranks this runner spawns when not started by torchrun."""
        return len(self.affinities)

    # ---- entry points ----------------------------------------------------------------------
    def train(self, resume: bool | str | None = None):
        """Train on every rank; returns rank 0's summary (``MinibatchRl.train``'s).

        ``resume`` as in ``MinibatchRl.train``: rank 0 finds the checkpoint and every rank
        continues from its own part of it (its envs, replay and random streams); the
        run must have the same number of ranks as the one that wrote it.
        """
        # Resolved here: spawned ranks do not inherit this process's logger_context.
        self._resume_request = logger.resume_requested() if resume is None else resume
        if dist.is_available() and dist.is_initialized():
            raise RuntimeError("SyncRl.train: torch.distributed is already initialised in "
                               "this process; SyncRl sets up (and tears down) its own group")
        if launched_by_torchrun():
            return self.train_rank(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]),
                                   int(os.environ["LOCAL_RANK"]), "env://")
        return self._spawn_ranks()

    def _spawn_ranks(self):
        if self._resume_is_complete_here():
            return self.summary()  # Nothing to train: no rank is spawned.
        if self.seed is None:
            self.seed = make_seed()  # one run seed for every rank
        return spawn_ranks(self, self.n_replicas, capture_logger_state())

    def _resume_is_complete_here(self) -> bool:
        """Before any rank is spawned: whether the checkpoint a resume continues from
        holds the whole run (its summary is then rank 0's), ``ValueError`` for an
        ``n_steps`` below it, as every rank would find (``resume_is_complete``), but
        without seconds of start-up.  Anything else about the checkpoint (none yet, a
        different number of ranks) is for rank 0 to find and say."""
        resume = self._resume_request
        if resume is False:
            return False
        path = str(resume) if resume is not True else logger.get_snapshot_dir()
        if path is None or (resume is True and ckpt.latest_checkpoint(path) is None):
            return False
        try:
            state = ckpt.load_checkpoint(path)
        except (OSError, ValueError):
            return False
        if state.get("world_size", 1) != self.n_replicas:
            return False  # Refused by the ranks, naming both counts.
        return self._resume_is_complete(state, self.n_replicas)

    def train_rank(self, rank: int, world_size: int, local_rank: int, init_method: str | None,
                   log_state: dict | None = None, store: dist.Store | None = None,
                   on_started: Callable[[], None] | None = None):
        """Everything one rank does: join the group (at ``init_method``, or at ``store``
        where the launcher hosts one), train, leave the group.  ``on_started`` is called
        once the rank is set up and about to train (a spawned rank tells its launcher,
        which may then pass signals on)."""
        self._on_started = on_started
        if local_rank >= len(self.affinities):
            if len(self.affinities) == 1 and not self.affinities[0]:
                self.affinities = [{} for _ in range(local_rank + 1)]
            else:
                raise ValueError(
                    f"SyncRl: local rank {local_rank} has no entry in affinity (a list of "
                    f"{len(self.affinities)}); give one affinity per process on this node")
        self.rank, self.world_size = rank, world_size
        self.checkpoints.bind(rank, world_size)
        self.affinity = dict(self.affinities[local_rank])
        cuda_idx = self.affinity.get("cuda_idx")
        backend = self.backend or ("nccl" if cuda_idx is not None else "gloo")
        if cuda_idx is not None:
            torch.cuda.set_device(cuda_idx)
        dist.init_process_group(
            backend, init_method=init_method, store=store, rank=rank, world_size=world_size,
            timeout=datetime.timedelta(seconds=self.timeout_s),
            **({"device_id": torch.device("cuda", cuda_idx)} if backend == "nccl" else {}),
        )
        try:
            self.seed = self._common_seed()
            with rank_logging(rank, log_state):
                return super().train(resume=getattr(self, "_resume_request", False))
        finally:
            dist.destroy_process_group()

    def _common_seed(self) -> int:
        """Rank 0's seed on every rank (under torchrun each process may have drawn its own)."""
        box = [self.seed if self.seed is not None else make_seed()]
        dist.broadcast_object_list(box, src=0)
        return int(box[0])

    # ---- set-up ------------------------------------------------------------------------------
    def startup(self) -> int:
        n_itr = super().startup()  # wraps the agent's trained modules in DDP (world_size > 1)
        self._configure_ddp()
        self._broadcast_agent_state()
        set_seed(rank_seed(self.seed, self.rank))  # own exploration and replay streams
        self._pending_traj_infos: list = []
        self._pending_opt_infos = {k: [] for k in self.algo.opt_info_fields}
        if self.rank == 0:
            logger.log(f"SyncRl: {self.world_size} ranks, backend {dist.get_backend()}; "
                       f"{self.sampler.batch_spec.size} env steps per rank per iteration.")
        if self._on_started is not None:
            self._on_started()
        return n_itr

    def _configure_ddp(self) -> None:
        """Buffers are not broadcast on each forward: rank 0 alone runs evaluation forwards,
        which would then wait on a broadcast no other rank joins.  The buffers that change
        during training (running observation statistics) all-reduce themselves."""
        for module in _ddp_modules(self.agent):
            module.broadcast_buffers = False

    def _broadcast_agent_state(self) -> None:
        """Rank 0's complete agent state (target networks and buffers too, which DDP does
        not cover) on every rank, so the replicas start identical."""
        nccl = dist.get_backend() == "nccl"
        with torch.no_grad():
            for tensor in _state_tensors(self.agent.state_dict()):
                if nccl and tensor.device.type != "cuda":  # NCCL moves CUDA tensors only
                    on_gpu = tensor.cuda()
                    dist.broadcast(on_gpu, src=0)
                    tensor.copy_(on_gpu)
                else:
                    dist.broadcast(tensor, src=0)

    def _replay_batch_size(self):
        batch = getattr(self.algo, "batch_size", None)
        return None if batch is None else batch * self.world_size

    # ---- whole-run checkpoints: one part per rank -------------------------------------------
    def checkpoint_state(self, itr: int) -> dict:
        state = super().checkpoint_state(itr)
        state.update(world_size=self.world_size, rank=self.rank)
        return state

    def _from_rank0(self, value):
        return from_rank0(value)

    # ---- diagnostics: every rank's, logged by rank 0 --------------------------------------------
    def store_diagnostics(self, itr, traj_infos, opt_info):
        """Keep this rank's new trajectories and optimizer values until the next log row."""
        self._pending_traj_infos.extend(traj_infos)
        extend_opt_infos(self._pending_opt_infos, opt_info)
        self.diagnostics.tick(itr)

    def diagnostics_state(self) -> dict:
        """Also this rank's trajectories and optimizer values not yet gathered into a row."""
        return dict(super().diagnostics_state(), pending_traj_infos=self._pending_traj_infos,
                    pending_opt_infos=self._pending_opt_infos)

    def load_diagnostics_state(self, state: dict) -> None:
        super().load_diagnostics_state(state)
        self._pending_traj_infos = list(state["pending_traj_infos"])
        self._pending_opt_infos = {k: list(v) for k, v in state["pending_opt_infos"].items()}

    def _gather_diagnostics(self) -> None:
        """All-gather every rank's trajectories and optimizer values since the last log row
        into rank 0's running statistics (the other ranks drop theirs)."""
        local = (self._pending_traj_infos, self._pending_opt_infos, agent_digest(self.agent))
        gathered = [None] * self.world_size
        dist.all_gather_object(gathered, local)
        self._pending_traj_infos = []
        self._pending_opt_infos = {k: [] for k in self._pending_opt_infos}
        digests = [digest for *_, digest in gathered]
        if len(set(digests)) > 1:
            raise SyncRlError(
                f"SyncRl: the replicas' agent states differ (digests by rank: {digests}): "
                f"some gradient or state update was not averaged across ranks (e.g. a model "
                f"called through DistributedDataParallel's .module, or a parameter changed "
                f"outside the optimizer)")
        for traj_infos, opt_infos, _ in gathered:
            self.diagnostics.add_gathered(traj_infos, opt_infos)

    def _log_itr(self, itr):
        self._gather_diagnostics()
        if self.rank == 0:
            super()._log_itr(itr)
        else:
            self.diagnostics.drop_row()

    def _stop_now(self) -> bool:
        """Rank 0's ``should_stop()`` (it alone has the evaluation results), on every rank."""
        return bool(self._from_rank0(self.should_stop() if self.rank == 0 else None))


class SyncRl(SyncRlMixin, MinibatchRlBase):
    """Synchronous data-parallel RL: one full replica (sampler, agent, algorithm) per rank.

    Gradients are averaged across ranks by ``DistributedDataParallel`` in the backward
    pass (before clipping and the optimizer step), so every rank takes the same step and
    the replicas stay identical; ``n_steps``, ``CumSteps`` and the logged rates count the
    env steps of all ranks.  Rank ``r`` seeds its envs with the global env ranks
    ``r * B .. (r + 1) * B - 1`` of the one run seed, and its exploration and replay
    sampling from ``rank_seed(seed, r)``.  Off-policy algorithms keep one replay buffer
    per rank.  Rank 0 logs (the statistics of every rank's trajectories and optimizer
    values) and snapshots.

    Args:
        algo, agent, sampler, n_steps, seed, log_interval_steps, log_traj_window: as in
            ``MinibatchRl`` (``n_steps`` counts the env steps of all ranks; ``seed=None``
            draws one seed shared by every rank).
        affinity: a list with one affinity dict per replica, e.g. from
            ``make_affinity(n_cpu_core=..., n_gpu=N, gpu_per_run=N)`` (GPU ranks, NCCL) or
            ``make_affinity(n_cpu_core=..., n_gpu=0, gpu_per_run=N)`` (CPU ranks, gloo).
            The runner spawns one rank per entry; under ``torchrun`` entry ``LOCAL_RANK``
            is used (``None`` there: every rank on CPU).  A single dict runs one rank.
        backend: ``torch.distributed`` backend; default None picks NCCL when the
            affinity has a ``cuda_idx``, else gloo.
        timeout_s: process-group timeout in seconds (default 1800): a collective that
            waits longer on a silent peer fails instead of hanging.  It must exceed rank
            0's evaluation and snapshot time, during which the other ranks wait.
        checkpoint_interval_steps, checkpoint_replay, checkpoint_keep, max_abs_value: as in
            ``MinibatchRl``
            (steps of all ranks).  A checkpoint holds rank 0's state plus one
            ``rank_<r>/`` part per other rank (its envs, replay and random streams), and
            ``train(resume=...)`` continues every rank exactly, with the same number of
            ranks; the run directory must be reachable from every rank.
    """


class SyncRlEval(SyncRlMixin, MinibatchRlEval):
    """``SyncRl`` with ``MinibatchRlEval``'s evaluation: rank 0 evaluates at iteration 0 and
    every log interval, while the other ranks wait at their next collective."""

    def _before_train(self):
        if self.rank == 0:
            super()._before_train()


# ---- agent state ------------------------------------------------------------------------------
def _ddp_modules(agent) -> list:
    from torch.nn.parallel import DistributedDataParallel as DDP

    return [value for value in vars(agent).values() if isinstance(value, DDP)]


def agent_digest(agent) -> str:
    """A hash of every tensor in ``agent.state_dict()``: equal on two ranks exactly when
    their agents are bitwise identical."""
    digest = hashlib.blake2b(digest_size=16)
    for tensor in _state_tensors(agent.state_dict()):
        digest.update(tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def _state_tensors(state: Any) -> list[torch.Tensor]:
    """Every tensor of a (possibly nested) state dict, in a fixed order."""
    if isinstance(state, torch.Tensor):
        return [state]
    if isinstance(state, Mapping):
        return [t for key in sorted(state, key=str) for t in _state_tensors(state[key])]
    if isinstance(state, (list, tuple)):
        return [t for item in state for t in _state_tensors(item)]
    return []
