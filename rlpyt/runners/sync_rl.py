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
import multiprocessing as mp
import os
import signal
import time
import traceback
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from multiprocessing import connection
from typing import Any

import numpy as np
import torch
import torch.distributed as dist

from rlpyt.runners import checkpoint as ckpt
from rlpyt.runners.minibatch_rl import MinibatchRlBase, MinibatchRlEval, resume_is_complete
from rlpyt.utils.logging import logger
from rlpyt.utils.process import ParentGuard, exit_now, guarded_target
from rlpyt.utils.seed import make_seed, set_seed
from rlpyt.utils.synchronize import find_port

__all__ = ["SyncRl", "SyncRlError", "SyncRlEval", "SyncRlMixin", "agent_digest",
           "launched_by_torchrun", "rank_seed"]

TORCHRUN_ENV = ("RANK", "WORLD_SIZE", "LOCAL_RANK")
_STOP_GRACE_S = 2.0  # SIGTERM, then SIGKILL after this long
_EXIT_GRACE_S = 30.0  # after every rank reported success, time to exit on its own
# After Ctrl-C / SIGTERM, time for rank 0's last snapshot; then SIGTERM, and SIGKILL after
# _INTERRUPT_STOP_GRACE_S: every rank is gone within 5 s of the signal.
_INTERRUPT_GRACE_S = 2.0
_INTERRUPT_STOP_GRACE_S = 1.0
_POLL_S = 0.2
_FAILURE_WINDOW_S = 1.0  # after a first failure, collect the others' for the report
# A rank whose peer died fails inside a collective with one of these; it is not the cause.
_PEER_LOSS_MARKS = ("DistBackendError", "Connection closed by peer", "Connection reset by peer",
                    "gloo", "NCCL", "Broken pipe")


class SyncRlError(RuntimeError):
    """A rank failed; the message carries that rank's traceback (or how it died)."""


def launched_by_torchrun() -> bool:
    """True in a process started by ``torchrun`` (or any env:// launcher setting
    ``RANK``, ``WORLD_SIZE`` and ``LOCAL_RANK``)."""
    return all(key in os.environ for key in TORCHRUN_ENV)


# Spawn-key tag of the ranks' own streams.  A run's envs are the children ``(i,)`` of
# ``SeedSequence(seed)`` (``rlpyt.utils.seed.env_seeds``), parallel sampler workers are
# ``(0x5A4D, i)``; a rank's children ``(_RANK_STREAM, r)`` are a branch of their own, so
# no rank draws the stream of an env or a worker (with ``(r,)``, rank r was env r).
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

    def __init__(self, algo, agent, sampler, n_steps, seed=None, affinity=None,
                 log_interval_steps=1e5, log_traj_window=100, backend: str | None = None,
                 timeout_s: float = 1800.0, checkpoint_interval_steps=None,
                 checkpoint_replay=True, max_abs_value=None, divergence="stop"):
        self.affinities = _as_affinity_list(affinity)
        super().__init__(algo, agent, sampler, n_steps, seed=seed, affinity=None,
                         log_interval_steps=log_interval_steps, log_traj_window=log_traj_window,
                         checkpoint_interval_steps=checkpoint_interval_steps,
                         checkpoint_replay=checkpoint_replay, max_abs_value=max_abs_value,
                         divergence=divergence)
        if backend not in (None, "gloo", "nccl", "mpi"):
            raise ValueError(f"backend={backend!r} must be None (auto), 'gloo', 'nccl' or 'mpi'")
        if not (isinstance(timeout_s, (int, float)) and timeout_s > 0):
            raise ValueError(f"timeout_s={timeout_s!r} must be a positive number of seconds")
        self.backend = backend
        self.timeout_s = float(timeout_s)

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
            return self._train_rank(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]),
                                    int(os.environ["LOCAL_RANK"]), "env://")
        return self._spawn_ranks()

    def _spawn_ranks(self):
        if self._resume_is_complete_here():
            return self.summary()  # Nothing to train: no rank is spawned.
        if self.seed is None:
            self.seed = make_seed()  # one run seed for every rank
        ctx = mp.get_context("spawn")
        init_method = f"tcp://127.0.0.1:{find_port()}"
        log_state = _capture_logger_state()
        procs, conns, started = [], [], set()
        try:
            for rank in range(self.n_replicas):
                recv, send = ctx.Pipe(duplex=False)
                proc = ctx.Process(
                    # The guard is unpickled first, before this module and the runner
                    # (torch, envs: seconds): it binds the rank to this launcher.
                    target=guarded_target,
                    args=(ParentGuard(os.getpid()), _spawned_rank_main, self, rank,
                          self.n_replicas, init_method, send, log_state),
                    name=f"rlpyt-SyncRl-rank-{rank}",
                )
                proc.start()
                send.close()
                procs.append(proc)
                conns.append(recv)
            summary = _watch_ranks(procs, conns, started)
            # A rank reports before it leaves its process group and exits: give it time
            # to finish on its own (a signal in its teardown can abort it mid-way).
            deadline = time.monotonic() + _EXIT_GRACE_S
            for proc in procs:
                proc.join(max(deadline - time.monotonic(), 0))
            return summary
        except KeyboardInterrupt as e:
            if len(started) < len(procs):
                # A rank still starting may be inside the group's rendezvous (C++: no
                # Python signal handler runs there), and one whose peer stopped first
                # prints c10d's connection warnings.  Nothing is trained yet: end them
                # all at once, the store's host (rank 0) last.
                _kill_processes(procs[::-1])
                raise
            # The ranks have their own process group (a terminal's Ctrl-C, or a signal
            # to this launcher alone, reaches only it): pass the signal on, once, and let
            # rank 0 write its last snapshot and exit.
            _signal_processes(procs, getattr(e, "signum", signal.SIGINT))
            deadline = time.monotonic() + _INTERRUPT_GRACE_S
            for proc in procs:
                proc.join(max(deadline - time.monotonic(), 0))
            _stop_processes(procs, _INTERRUPT_STOP_GRACE_S)
            raise
        finally:
            _stop_processes(procs)
            for conn in conns:
                conn.close()

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
        if not resume_is_complete(state, self.n_steps,
                                  self.sampler.batch_spec.size * self.n_replicas):
            return False
        self.load_diagnostics_state(state["diagnostics"])
        return True

    def _train_rank(self, rank: int, world_size: int, local_rank: int, init_method: str,
                    log_state: dict | None = None):
        """Everything one rank does: join the group, train, leave the group."""
        if local_rank >= len(self.affinities):
            if len(self.affinities) == 1 and not self.affinities[0]:
                self.affinities = [{} for _ in range(local_rank + 1)]
            else:
                raise ValueError(
                    f"SyncRl: local rank {local_rank} has no entry in affinity (a list of "
                    f"{len(self.affinities)}); give one affinity per process on this node")
        self.rank, self.world_size = rank, world_size
        self.affinity = dict(self.affinities[local_rank])
        cuda_idx = self.affinity.get("cuda_idx")
        backend = self.backend or ("nccl" if cuda_idx is not None else "gloo")
        if cuda_idx is not None:
            torch.cuda.set_device(cuda_idx)
        dist.init_process_group(
            backend, init_method=init_method, rank=rank, world_size=world_size,
            timeout=datetime.timedelta(seconds=self.timeout_s),
            **({"device_id": torch.device("cuda", cuda_idx)} if backend == "nccl" else {}),
        )
        try:
            self.seed = self._common_seed()
            with _rank_logging(rank, log_state):
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
        launcher = getattr(self, "_launcher_conn", None)
        if launcher is not None:  # a spawned rank: the launcher may now pass signals on
            launcher.send(("started", None))
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

    def save_checkpoint(self, itr: int) -> str | None:
        """Collective.  Every rank other than 0 writes its own part (envs, replay, random
        state, optimizer) with ``checkpoint.write_part``; rank 0 writes its state and
        moves the parts in as ``rank_<r>/``, so the checkpoint appears whole or not at
        all.  The run directory must be on a file system every rank can reach."""
        run_dir = self._from_rank0(logger.get_snapshot_dir() if self.rank == 0 else None)
        if run_dir is None:
            return None
        replay = getattr(self.algo, "replay_buffer", None) if self.checkpoint_replay else None
        part = (ckpt.write_part(run_dir, itr, self.checkpoint_state(itr), replay)
                if self.rank > 0 else None)
        parts = [None] * self.world_size
        dist.all_gather_object(parts, part)
        outcome = None
        if self.rank == 0:
            unseen = {r: p for r, p in enumerate(parts) if r > 0 and not os.path.isdir(p)}
            if unseen:
                outcome = ("error", f"SyncRl: rank 0 cannot see the checkpoint parts of ranks "
                                    f"{sorted(unseen)} ({sorted(unseen.values())}): checkpoints "
                                    f"need a run directory shared by every node")
            else:
                path = ckpt.save_checkpoint(
                    run_dir, itr, self.checkpoint_state(itr), replay,
                    parts={f"rank_{r}": p for r, p in enumerate(parts) if r > 0})
                logger.log(f"checkpoint written: {path} ({self.world_size} ranks)")
                outcome = ("ok", path)
        kind, value = self._from_rank0(outcome)
        if kind == "error":
            raise SyncRlError(value)
        self.last_checkpoint = value
        return value

    def find_resume_state(self, resume) -> dict | None:
        """Rank 0 finds the checkpoint (as ``MinibatchRl`` does); every rank then loads
        its own part of it."""
        outcome = None
        if self.rank == 0:
            try:
                state = super().find_resume_state(resume)
                outcome = ("ok", None if state is None else
                           (state["_path"], state.get("world_size", 1)))
            except Exception as e:  # Every rank must raise, not wait on rank 0.
                outcome = ("error", f"{type(e).__name__}: {e}")
        kind, found = self._from_rank0(outcome)
        if kind == "error":
            raise ValueError(f"SyncRl resume: {found}")
        if found is None:
            return None
        path, world_size = found
        if world_size != self.world_size:
            raise ValueError(
                f"SyncRl resume: checkpoint {path} was written by {world_size} rank(s) and "
                f"this run has {self.world_size}; resume it with {world_size} ranks (each "
                f"rank continues its own envs, replay and random streams)")
        if self.rank == 0:
            return state
        state = ckpt.load_checkpoint(os.path.join(path, f"rank_{self.rank}"))
        self.seed = state["seed"]
        return state

    def _from_rank0(self, value):
        box = [value]
        dist.broadcast_object_list(box, src=0)
        return box[0]

    # ---- diagnostics: every rank's, logged by rank 0 --------------------------------------------
    def store_diagnostics(self, itr, traj_infos, opt_info):
        """Keep this rank's new trajectories and optimizer values until the next log row."""
        self._pending_traj_infos.extend(traj_infos)
        for k, values in self._pending_opt_infos.items():
            new = getattr(opt_info, k, [])
            values.extend(new if isinstance(new, list) else [new])
        self.pbar.update((itr + 1) % self.log_interval_itrs or self.log_interval_itrs)

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
            self._cum_completed_trajs += len(traj_infos)
            self._new_completed_trajs += len(traj_infos)
            self._traj_infos.extend(traj_infos)
            for k, values in opt_infos.items():
                self._opt_infos.setdefault(k, []).extend(values)

    def _log_itr(self, itr):
        self._gather_diagnostics()
        if self.rank == 0:
            super()._log_itr(itr)
        else:
            self._opt_infos = {k: [] for k in self._opt_infos}
            self._new_completed_trajs = 0

    def _stop_now(self) -> bool:
        """Rank 0's ``should_stop()`` (it alone has the evaluation results), on every rank."""
        box = [self.should_stop() if self.rank == 0 else None]
        dist.broadcast_object_list(box, src=0)
        return bool(box[0])


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
        checkpoint_interval_steps, checkpoint_replay, max_abs_value: as in ``MinibatchRl``
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


# ---- process management (spawn mode) -------------------------------------------------------
def _spawned_rank_main(guard: ParentGuard, runner: SyncRlMixin, rank: int, world_size: int,
                       init_method: str, conn, log_state: dict) -> None:
    """A rank's process; ``guard`` did its work while being unpickled (a launcher killed
    with SIGKILL takes its ranks with it, even one killed while they were starting)."""
    os.setpgid(0, 0)  # signals come from the launcher only, once (see _spawn_ranks)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # (even in a background job)
    runner._launcher_conn = conn  # for SyncRl.startup's "started"
    try:
        summary = runner._train_rank(rank, world_size, rank, init_method, log_state)
        conn.send(("ok", summary if rank == 0 else None))
        code = 0
    except BaseException:  # noqa: BLE001 - every failure goes to the launcher
        conn.send(("error", traceback.format_exc()))
        code = 1
    conn.close()
    # Reported: end now.  The interpreter's teardown (torch, gloo) takes seconds on a
    # busy machine, and the launcher waits for it after a Ctrl-C.
    exit_now(code)


def _watch_ranks(procs: list, conns: list, started: set):
    """Wait for every rank; on the first failure (an exception or a death) raise
    ``SyncRlError`` with the failed rank's traceback.  Returns rank 0's summary.
    ``started`` gets the ranks that said they are set up and about to train."""
    summary, done, failures = None, set(), {}
    open_conns = dict(enumerate(conns))
    first_failure = None
    while len(done) + len(failures) < len(procs):
        if first_failure is not None and time.monotonic() - first_failure > _FAILURE_WINDOW_S:
            break
        waitables = list(open_conns.values()) + [
            p.sentinel for r, p in enumerate(procs) if r not in done and r not in failures]
        connection.wait(waitables, timeout=_POLL_S)
        for rank, proc in enumerate(procs):
            if rank in done or rank in failures:
                continue
            message = _receive(open_conns[rank]) if rank in open_conns else "closed"
            if message == "closed":
                open_conns.pop(rank, None)
            if isinstance(message, tuple):
                kind, payload = message
                if kind == "started":
                    started.add(rank)
                elif kind == "ok":
                    done.add(rank)
                    summary = payload if rank == 0 else summary
                else:
                    failures[rank] = payload
            elif proc.exitcode is not None and rank not in open_conns:
                failures[rank] = f"died without a traceback: {_exit_reason(proc.exitcode)}"
            if rank in failures and first_failure is None:
                first_failure = time.monotonic()
    if failures:
        raise SyncRlError(_failure_report(failures))
    return summary


def _failure_report(failures: dict[int, str]) -> str:
    """The root cause first: ranks that failed in a collective only because a peer went
    away are reported after the rank that failed on its own."""
    def secondary(text: str) -> bool:
        return any(mark in text for mark in _PEER_LOSS_MARKS)

    order = sorted(failures, key=lambda r: (secondary(failures[r]), r))
    root = order[0]
    report = f"SyncRl rank {root} failed:\n{failures[root].rstrip()}"
    for rank in order[1:]:
        last = failures[rank].rstrip().splitlines()[-1] if failures[rank].strip() else ""
        report += f"\n(rank {rank} also stopped: {last})"
    return report


def _receive(conn):
    """One message if ready; "closed" at end of stream; None if nothing is there yet."""
    try:
        if not conn.poll():
            return None
        return conn.recv()
    except (EOFError, OSError):
        return "closed"


def _exit_reason(exitcode: int) -> str:
    if exitcode < 0:
        try:
            return f"killed by signal {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exit code {exitcode}"


def _signal_processes(procs: list, signum: int) -> None:
    for proc in procs:
        if proc.is_alive():
            try:
                os.kill(proc.pid, signum)
            except ProcessLookupError:
                pass


def _kill_processes(procs: list) -> None:
    """SIGKILL every live process, in order, and reap all."""
    for proc in procs:
        if proc.is_alive():
            proc.kill()
    for proc in procs:
        proc.join()


def _stop_processes(procs: list, grace_s: float = _STOP_GRACE_S) -> None:
    """SIGTERM every live rank, SIGKILL what is left after ``grace_s``, reap all."""
    for proc in procs:
        if proc.is_alive():
            proc.terminate()
    deadline = time.monotonic() + grace_s
    for proc in procs:
        proc.join(max(deadline - time.monotonic(), 0))
    for proc in procs:
        if proc.is_alive():
            proc.kill()
            proc.join()


# ---- logging on the ranks -------------------------------------------------------------------
def _capture_logger_state() -> dict:
    """What a spawned rank 0 needs to keep writing into the launcher's run directory."""
    writer = logger.get_tf_summary_writer()
    return dict(
        text_outputs=logger.get_text_outputs(),
        tabular_outputs=logger.get_tabular_outputs(),
        snapshot_dir=logger.get_snapshot_dir(),
        snapshot_mode=logger.get_snapshot_mode(),
        snapshot_gap=logger.get_snapshot_gap(),
        log_tabular_only=logger.get_log_tabular_only(),
        disable_prefix=logger.get_disable_prefix(),
        prefixes=list(logger._prefixes),
        tabular_prefixes=list(logger._tabular_prefixes),
        summary_dir=getattr(writer, "log_dir", None),
    )


@contextmanager
def _rank_logging(rank: int, log_state: dict | None) -> Iterator[None]:
    """Rank 0 writes the run's outputs (a spawned one re-opens the launcher's); every other
    rank writes nothing at all: no console lines, files or snapshots."""
    if rank == 0:
        if log_state is None:  # torchrun: this process's own logger context is the run's
            yield
            return
        _restore_logger_state(log_state)
        yield
        return
    saved = _capture_logger_state()
    for path in saved["text_outputs"]:
        logger.remove_text_output(path)
    for path in saved["tabular_outputs"]:
        logger.remove_tabular_output(path)
    writer = logger.get_tf_summary_writer()
    logger.set_tf_summary_writer(None)
    logger.set_snapshot_dir(None)
    logger.set_log_tabular_only(True)
    try:
        yield
    finally:
        for path in saved["text_outputs"]:
            logger.add_text_output(path)
        for path in saved["tabular_outputs"]:
            logger.add_tabular_output(path, append=True)
        logger.set_tf_summary_writer(writer)
        logger.set_snapshot_dir(saved["snapshot_dir"])
        logger.set_log_tabular_only(saved["log_tabular_only"])


def _restore_logger_state(state: dict) -> None:
    for path in state["text_outputs"]:
        logger.add_text_output(path)
    for path in state["tabular_outputs"]:
        logger.add_tabular_output(path, append=True)
    logger.set_snapshot_dir(state["snapshot_dir"])
    logger.set_snapshot_mode(state["snapshot_mode"])
    logger.set_snapshot_gap(state["snapshot_gap"])
    logger.set_log_tabular_only(state["log_tabular_only"])
    logger.set_disable_prefix(state["disable_prefix"])
    for prefix in state["prefixes"]:
        logger.push_prefix(prefix)
    for prefix in state["tabular_prefixes"]:
        logger.push_tabular_prefix(prefix)
    if state["summary_dir"] is not None:
        from torch.utils.tensorboard import SummaryWriter

        logger.set_tf_summary_writer(SummaryWriter(log_dir=state["summary_dir"]))


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
