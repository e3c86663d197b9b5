"""The rank processes of a ``SyncRl`` run that starts its own ranks (not ``torchrun``):
spawned, watched, and stopped.

Each rank is a ``spawn`` child bound to the launcher by a ``ParentGuard`` (it dies with
the launcher, even while starting) in a process group of its own (signals come from the
launcher only, once).  The launcher waits for every rank's report; the first failure
(an exception or a death) raises ``SyncRlError`` with that rank's traceback, the root
cause first.  A signal to the launcher is passed on once training runs (rank 0 writes
its last snapshot); before every rank is set up, the ranks are ended at once.
"""

from __future__ import annotations

import datetime
import multiprocessing as mp
import os
import signal
import time
from multiprocessing import connection

import torch.distributed as dist

from rlpyt.utils.supervisor import (
    RANK_EXIT_S,
    RANK_FAILURE_WINDOW_S,
    RANK_SNAPSHOT_S,
    RANKS,
    RANKS_INTERRUPTED,
    ParentGuard,
    child_setup,
    describe_exit,
    exit_now,
    failures_reported,
    guarded_target,
    join_all,
    kill_processes,
    signal_processes,
    start_process,
    stop_processes,
)

__all__ = ["SyncRlError", "spawn_ranks"]

_POLL_S = 0.2
STORE_HOST = "127.0.0.1"  # The ranks' rendezvous store: spawned ranks are local.
# A rank whose peer died fails inside a collective with one of these; it is not the cause.
_PEER_LOSS_MARKS = ("DistBackendError", "Connection closed by peer", "Connection reset by peer",
                    "gloo", "NCCL", "Broken pipe")


class SyncRlError(RuntimeError):
    """A rank failed; the message carries that rank's traceback (or how it died)."""


def spawn_ranks(runner, n_ranks: int, log_state: dict):
    """Train ``runner`` on ``n_ranks`` spawned ranks (``runner.train_rank`` in each,
    who meet at a store this launcher hosts); returns rank 0's summary.

    The store listens on a port the OS assigns as it binds, so no other process can take
    the port between choosing and binding it (as with a port found free and bound later by
    rank 0), and it lives exactly as long as the launcher that binds the ranks."""
    ctx = mp.get_context("spawn")
    store = dist.TCPStore(STORE_HOST, 0, is_master=True, wait_for_workers=False,
                          timeout=datetime.timedelta(seconds=runner.timeout_s))
    procs, conns, started = [], [], set()
    try:
        for rank in range(n_ranks):
            recv, send = ctx.Pipe(duplex=False)
            proc = ctx.Process(
                # The guard is unpickled first, before this module and the runner
                # (torch, envs: seconds): it binds the rank to this launcher.
                target=guarded_target,
                args=(ParentGuard(os.getpid()), _spawned_rank_main, runner, rank,
                      n_ranks, store.port, send, log_state),
                name=f"rlpyt-SyncRl-rank-{rank}",
            )
            start_process(proc, procs)
            send.close()
            conns.append(recv)
        summary = _watch_ranks(procs, conns, started)
        # A rank reports before it leaves its process group and exits: give it time
        # to finish on its own (a signal in its teardown can abort it mid-way).
        join_all(procs, RANK_EXIT_S)
        return summary
    except KeyboardInterrupt as e:
        if len(started) < len(procs):
            # A rank still starting may be inside the group's rendezvous (C++: no
            # Python signal handler runs there), and one whose peer stopped first
            # prints c10d's connection warnings.  Nothing is trained yet: end them
            # all at once.
            kill_processes(procs)
            raise
        # The ranks have their own process group (a terminal's Ctrl-C, or a signal
        # to this launcher alone, reaches only it): pass the signal on, once, and let
        # rank 0 write its last snapshot and exit.
        signal_processes(procs, getattr(e, "signum", signal.SIGINT))
        join_all(procs, RANK_SNAPSHOT_S)
        stop_processes(procs, RANKS_INTERRUPTED)
        raise
    finally:
        stop_processes(procs, RANKS)
        for conn in conns:
            conn.close()
        del store  # The ranks are gone: stop listening.


def _spawned_rank_main(guard: ParentGuard, runner, rank: int, world_size: int,
                       store_port: int, conn, log_state: dict) -> None:
    """A rank's process; ``guard`` did its work while being unpickled (a launcher killed
    with SIGKILL takes its ranks with it, even one killed while they were starting)."""
    # Signals come from the launcher only, once (see spawn_ranks): a group of its own.
    # Python's SIGINT handler (even in a background job): rank 0 writes its last
    # snapshot.  SIGTERM stays the launcher's stop.  The guard did the rest.
    child_setup(sigint="raise", exit_on_sigterm=False, torch_threads=None,
                fork_server=True, own_group=True)
    code = 1
    with failures_reported(lambda text: conn.send(("error", text)), quiet=(), exit_code=None):
        store = dist.TCPStore(STORE_HOST, store_port, is_master=False,
                              timeout=datetime.timedelta(seconds=runner.timeout_s))
        summary = runner.train_rank(rank, world_size, rank, None, log_state, store=store,
                                    on_started=lambda: conn.send(("started", None)))
        conn.send(("ok", summary if rank == 0 else None))
        code = 0
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
        if first_failure is not None and time.monotonic() - first_failure > RANK_FAILURE_WINDOW_S:
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
                failures[rank] = f"died without a traceback: {describe_exit(proc.exitcode)}"
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
