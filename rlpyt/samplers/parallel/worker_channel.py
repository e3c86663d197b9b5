"""The channel between a parallel sampler's master and its workers (commands, step
handshakes, results, errors), and how worker faults surface.

Protocol (all primitives come from the sampler's start-method context):

* ``command``/``itr``: what the workers do next (sample a batch, evaluate, stop),
  announced by releasing each worker's ``go`` semaphore.
* ``param_version``: how many times the master published model parameters to the
  workers' shared-memory model (CPU sampler).  The master publishes only while every
  worker is parked between commands (it has collected every worker's result of the
  previous command), so a command never runs on a mix of old and new weights; a
  worker checks that the version did not change while it ran a command.
* ``ready[w]``/``act[w]``: the per-step handshake of samplers whose master selects
  actions (worker ``w`` has written observations / the master has written actions).
* ``results``: one message per worker per command (its completed trajectories),
  which also tells the master that the worker finished.
* ``errors``: a worker that raises sends its formatted traceback here, then exits.
* ``busy_since[w]``: the ``time.monotonic()`` at which worker ``w``'s latest env call
  (building the envs, ``reset`` or ``step``) began, 0 while the worker waits for the
  master.

Nothing waits forever: every blocking wait has a short timeout after which the
master checks the error queue, whether each worker is still alive, and whether an
env call has run longer than ``step_timeout`` (a hung env: the master then asks the
worker for its Python stack, see ``rlpyt.samplers.parallel.worker``); a worker checks
whether it was told to stop or lost its master.  A worker fault therefore reaches the
master as a ``WorkerError`` within about a second, a hung env within
``step_timeout`` plus about a second.
"""

from __future__ import annotations

import queue
import time
from dataclasses import dataclass, field
from enum import IntEnum

from rlpyt.samplers.base import WorkerError  # (raised here; importable from here too)
from rlpyt.utils.supervisor import WORKER_ERROR_S, describe_exit, read_stack

__all__ = [
    "Command",
    "SamplerControl",
    "WorkerError",
    "WorkerMonitor",
    "WorkerSpec",
    "WorkerStopped",
    "WorkerSync",
    "unlink_semaphore_names",
]

POLL_S = 0.5  # How often blocked waits look for faults.
ERROR_GRACE_S = WORKER_ERROR_S  # How long to wait for a dead worker's traceback message.


class Command(IntEnum):
    SAMPLE = 1
    EVAL = 2
    STOP = 3


class WorkerStopped(Exception):
    """Raised inside a worker told to stop (or whose parent is gone): exit quietly."""


@dataclass
class WorkerSpec:
    """What one worker owns.

    Args:
        rank: worker index.
        env_ranks: global ranks of its training envs.
        env_slice: ``(start, stop)`` of its envs in the sampler's batch (``B`` axis).
        env_seeds: one seed per training env.
        eval_env_ranks: global ranks of its evaluation envs.
        eval_slice: ``(start, stop)`` of its eval envs among the sampler's eval envs.
        eval_env_seeds: one seed per eval env.
        cpus: CPUs to pin the worker to (empty: unpinned).
        seed: seed of the worker's own python/numpy/torch RNGs.
    """

    rank: int
    env_ranks: list
    env_slice: tuple
    env_seeds: list
    eval_env_ranks: list = field(default_factory=list)
    eval_slice: tuple = (0, 0)
    eval_env_seeds: list = field(default_factory=list)
    cpus: list = field(default_factory=list)
    seed: int = 0

    def describe(self) -> str:
        text = f"sampler worker {self.rank} (env ranks {list(self.env_ranks)}"
        if self.eval_env_ranks:
            text += f", eval env ranks {list(self.eval_env_ranks)}"
        return text + ")"


class SamplerControl:
    """Shared control state of one parallel sampler (picklable to workers at start)."""

    def __init__(self, ctx, n_workers: int):
        self.command = ctx.RawValue("i", 0)
        self.itr = ctx.RawValue("q", 0)
        self.param_version = ctx.RawValue("q", 0)
        self.stop = ctx.RawValue("b", 0)  # Every worker exits at its next wait.
        self.eval_stop = ctx.RawValue("b", 0)  # Master-driven evaluation is over.
        self.go = [ctx.Semaphore(0) for _ in range(n_workers)]
        self.act = [ctx.Semaphore(0) for _ in range(n_workers)]
        self.ready = [ctx.Semaphore(0) for _ in range(n_workers)]
        self.busy_since = ctx.RawArray("d", n_workers)
        self.results = ctx.Queue()
        self.errors = ctx.Queue()

    def announce(self, command: Command, itr: int = 0, workers=None) -> None:
        """Set the next command and wake ``workers`` (default: all)."""
        self.itr.value = int(itr)
        self.command.value = int(command)
        for w in range(len(self.go)) if workers is None else workers:
            self.go[w].release()

    def wake_all(self) -> None:
        """Release every semaphore a worker may be blocked on (used when stopping)."""
        for sems in (self.go, self.act):
            for sem in sems:
                sem.release()

    def worker_sync(self, rank: int, master_alive) -> WorkerSync:
        return WorkerSync(self, rank, master_alive)

    def semaphores(self) -> list:
        """Every semaphore-backed primitive the workers share (queues hold three each)."""
        found = [*self.go, *self.act, *self.ready]
        for q in (self.results, self.errors):
            found += [getattr(q, name) for name in ("_rlock", "_wlock", "_sem")
                      if getattr(q, name, None) is not None]
        return found

    def close_queues(self) -> None:
        for q in (self.results, self.errors):
            q.cancel_join_thread()
            q.close()


class WorkerSync:
    """A worker's side of the control: waits that give up when stopped or orphaned."""

    def __init__(self, control: SamplerControl, rank: int, master_alive):
        self.control = control
        self.rank = rank
        self.master_alive = master_alive  # () -> bool
        self._param_version = 0
        self._go = control.go[rank]
        self._act = control.act[rank]
        self._ready = control.ready[rank]

    def _wait(self, sem) -> None:
        self.control.busy_since[self.rank] = 0.0  # Waiting for the master: not stuck.
        while not sem.acquire(timeout=POLL_S):
            self._check_alive()
        if self.control.stop.value:
            raise WorkerStopped

    def _check_alive(self) -> None:
        if self.control.stop.value or not self.master_alive():
            raise WorkerStopped

    def wait_command(self) -> tuple[Command, int]:
        self._wait(self._go)
        self._param_version = self.control.param_version.value
        return Command(self.control.command.value), int(self.control.itr.value)

    def check_param_version(self) -> None:
        """Raise if the master republished parameters while this command ran (the
        command would have acted with two sets of weights)."""
        now = self.control.param_version.value
        if now != self._param_version:
            raise RuntimeError(
                f"sampler protocol error: model parameters were republished (version "
                f"{self._param_version} -> {now}) while worker {self.rank} was running a "
                "command; parameters may change only between commands")

    def wait_actions(self) -> None:
        """Block until the master has written this step's actions."""
        self._wait(self._act)

    def signal_ready(self) -> None:
        """Tell the master this worker's observations for the next step are written."""
        self._ready.release()

    @property
    def eval_stopped(self) -> bool:
        return bool(self.control.eval_stop.value)

    def send_result(self, kind: str, payload) -> None:
        self.control.results.put((self.rank, kind, payload))

    def send_error(self, spec: WorkerSpec, text: str) -> None:
        self.control.errors.put((self.rank, spec.describe(), text[-20000:]))


class WorkerMonitor:
    """The master's view of its workers: waits that raise ``WorkerError`` on a fault.

    Args:
        control: the sampler's ``SamplerControl``.
        processes: the worker processes, by rank.
        specs: their ``WorkerSpec``s.
        step_timeout: seconds one env call may run before the worker counts as hung
            (None: never).
        stack_readers: per worker, the read end of the pipe its stack dump arrives on
            (None: no stacks).
    """

    def __init__(self, control: SamplerControl, processes: list, specs: list[WorkerSpec],
                 step_timeout=None, stack_readers=None):
        self.control = control
        self.processes = processes
        self.specs = specs
        self.step_timeout = step_timeout
        self.stack_readers = stack_readers
        self.hung = set()  # Ranks of workers found stuck in an env call.

    def check(self) -> None:
        """Raise ``WorkerError`` if any worker reported an error, is no longer running, or
        is stuck in an env call for longer than ``step_timeout``."""
        self._raise_reported(block=False)
        for proc, spec in zip(self.processes, self.specs):
            if not proc.is_alive():
                if proc.exitcode is None or proc.exitcode >= 0:
                    self._raise_reported(block=True)  # Its traceback may be in flight.
                raise WorkerError(f"{spec.describe()} died: {describe_exit(proc.exitcode)}")
        if self.step_timeout is not None:
            now = time.monotonic()
            for w, since in enumerate(self.control.busy_since):
                if since > 0 and now - since > self.step_timeout:
                    self._raise_hung(w, now - since)

    def stuck_workers(self) -> set[int]:
        """Ranks of workers found hung, or in an env call for longer than
        ``step_timeout`` now: they will not see a stop request (shutdown ends them)."""
        stuck = set(self.hung)
        if self.step_timeout is not None:
            now = time.monotonic()
            stuck |= {w for w, since in enumerate(self.control.busy_since)
                      if since > 0 and now - since > self.step_timeout}
        return stuck

    def _poll_s(self) -> float:
        """How long a blocked wait may sleep before the next ``check``: ``POLL_S``, or
        less, so that a worker passing ``step_timeout`` is seen on time."""
        if self.step_timeout is None:
            return POLL_S
        busy = [since for since in self.control.busy_since if since > 0]
        if not busy:
            return POLL_S
        due = min(busy) + self.step_timeout - time.monotonic()
        return min(POLL_S, max(due + 0.01, 0.01))

    def _raise_hung(self, w: int, elapsed: float) -> None:
        spec = self.specs[w]
        self.hung.add(w)
        raise WorkerError(
            f"{spec.describe()} hung: an env call (step, reset or building the envs) has "
            f"not returned after {elapsed:.1f} s (step_timeout={self.step_timeout} s; "
            f"raise it for slow envs, None disables it).\n"
            f"Python stack of the worker:\n{self._worker_stack(w)}")

    def _worker_stack(self, w: int) -> str:
        """Worker ``w``'s Python stack (``read_stack``)."""
        if self.stack_readers is None:
            return "(not available on this platform)"
        return read_stack(self.processes[w].pid, self.stack_readers[w])

    def _raise_reported(self, block: bool) -> None:
        try:
            rank, who, text = self.control.errors.get(block=block, timeout=ERROR_GRACE_S)
        except queue.Empty:
            return
        raise WorkerError(f"{who} failed:\n{text}")

    def acquire(self, sem) -> None:
        """Acquire ``sem``, checking for worker faults while blocked."""
        while not sem.acquire(timeout=self._poll_s()):
            self.check()

    def await_ready(self, workers) -> None:
        for w in workers:
            self.acquire(self.control.ready[w])

    def release_act(self, workers) -> None:
        for w in workers:
            self.control.act[w].release()

    def gather(self, kind: str, workers) -> list:
        """One ``kind`` result per worker in ``workers``, ordered by worker rank."""
        pending = set(workers)
        payloads = {}
        while pending:
            try:
                rank, got_kind, payload = self.control.results.get(timeout=self._poll_s())
            except queue.Empty:
                self.check()
                continue
            if got_kind != kind or rank not in pending:
                raise RuntimeError(
                    f"sampler protocol error: expected a {kind!r} result from workers "
                    f"{sorted(pending)}, got {got_kind!r} from worker {rank}"
                )
            pending.discard(rank)
            payloads[rank] = payload
        return [payloads[w] for w in sorted(payloads)]


def unlink_semaphore_names(semlocks) -> None:
    """Remove the /dev/shm names of POSIX named semaphores once every process opened them.

    Under ``spawn``/``forkserver`` multiprocessing names its semaphores so children can
    open them, and unlinks the names only when the objects are freed.  Unlinking right
    after the workers started leaves nothing in /dev/shm, even if the master is killed;
    the semaphores keep working.  (Under ``fork`` the names are unlinked at creation.)
    """
    from multiprocessing import synchronize, util

    names = {getattr(lock._semlock, "name", None) for lock in semlocks} - {None}
    for finalizer in list(util._finalizer_registry.values()):
        if (getattr(finalizer, "_callback", None) is synchronize.SemLock._cleanup
                and finalizer._args and finalizer._args[0] in names):
            finalizer()  # Unlinks now and unregisters, so it does not run again later.
