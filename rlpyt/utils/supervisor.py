"""Child processes: how each starts, how its parent watches it, how it is stopped.

Every process of a run other than the one the user started (sampler workers, the
async sampler and memory copier, SyncRl ranks, a launched run's supervisor) uses this
module, so a fix to how children start or stop is made once:

- **Start.** ``child_setup`` is what a child does first: it ignores SIGINT (its parent
  stops it; a terminal's Ctrl-C reaches the whole foreground group) or takes Python's
  handler, exits on SIGTERM, dies with its parent (``die_with_parent``), drops the
  fork server's pipe and sets one torch thread before any torch op (a forked child
  that uses torch after its parent used its thread pool can hang).  A ``spawn`` or
  ``forkserver`` child is bound to its parent while it is still unpickling its
  arguments by a ``ParentGuard`` and ``guarded_target``.  ``start_process`` starts
  one with stop signals held, so a parent stopped meanwhile has it on its list.
- **Report.** ``failures_reported(send)`` around a child's work sends any exception's
  traceback to the parent (over the child's own channel) and exits with code 1.
- **Watch.** ``describe_exit`` says how a child ended, for the parent's error;
  ``read_stack`` fetches a hung child's Python stack (every thread) over a
  ``stack_pipe``, which the child offers with ``dump_stack_on_sigusr1``.
- **Stop.** ``stop_processes``: time to leave on a stop request, then SIGTERM, then
  SIGKILL, every child reaped and every descendant it left killed; ``kill_processes``
  at once; ``signal_processes`` passes a signal on; ``join_all`` waits for several
  under one deadline.  ``stop_group`` is the same ladder for a process group (a
  launched run's script and all it started, a run's supervisor), ``signal_group`` a
  signal to one.  ``exit_when_parent_dies`` ends a child whose parent died.  Every
  stop time lives here.
- **The parent's own end.** ``interrupt_on_signals`` (``interrupt_on_sigterm``,
  ``interrupt_on_stop_signals``) turns SIGTERM, or other stop signals, into a
  ``KeyboardInterrupt`` (a run stops as on Ctrl-C), never inside an import or a
  ``stop_signals_held`` block; ``StopSignals`` records them for a process that polls; ``exit_now`` ends a finished process without the interpreter's slow teardown.

This module imports no torch (``guarded_target`` relies on it).
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import select
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass

__all__ = [
    "ASYNC_PROCESSES",
    "KILL_REAP_S",
    "GROUP_SETTLE_S",
    "LAUNCHED_RUN",
    "LAUNCHED_RUN_LEFTOVERS",
    "LAUNCHER_STOPS_RUN",
    "LAUNCHER_WAIT_S",
    "MASTER_GONE_S",
    "RANKS",
    "RANKS_INTERRUPTED",
    "RANK_EXIT_S",
    "RANK_FAILURE_WINDOW_S",
    "RANK_SNAPSHOT_S",
    "RAY_ACTORS_CLOSE_S",
    "RAY_TASK_CANCEL_S",
    "SAMPLER_EXIT_S",
    "SAMPLER_WORKERS",
    "ParentGuard",
    "STACK_GRACE_S",
    "SignalInterrupt",
    "StopSignals",
    "StopTimes",
    "WORKER_ERROR_S",
    "child_processes",
    "child_setup",
    "describe_exit",
    "die_with_parent",
    "dump_stack_on_sigusr1",
    "exit_now",
    "exit_when_parent_dies",
    "failures_reported",
    "guarded_target",
    "interrupt_on_signals",
    "interrupt_on_sigterm",
    "interrupt_on_stop_signals",
    "start_process",
    "stop_signals_held",
    "join_all",
    "kill_descendants",
    "kill_processes",
    "kill_psutil_processes",
    "process_alive",
    "raise_if_stopped",
    "read_stack",
    "release_fork_server",
    "signal_group",
    "signal_processes",
    "stack_pipe",
    "stop_group",
    "stop_processes",
]



@dataclass(frozen=True)
class StopTimes:
    """How long ``stop_processes`` waits: ``join_s`` for children to leave on their own
    after the stop request, then ``terminate_s`` after SIGTERM, before SIGKILL."""

    join_s: float
    terminate_s: float


# Every stop's times, in one place.  A Ctrl-C must end a whole run within 5 s, the
# nested stops included (an async run's sampler process stops its own workers).
SAMPLER_WORKERS = StopTimes(join_s=3.0, terminate_s=1.0)  # SIGTERM: envs close as they unwind
ASYNC_PROCESSES = StopTimes(join_s=1.0, terminate_s=2.0)  # the sampler then stops its workers
RANKS = StopTimes(join_s=0.0, terminate_s=2.0)  # ranks stop on the launcher's signal
RANKS_INTERRUPTED = StopTimes(join_s=0.0, terminate_s=1.0)  # after RANK_SNAPSHOT_S
RANK_SNAPSHOT_S = 2.0  # after Ctrl-C or SIGTERM, rank 0's time for its last snapshot
RANK_EXIT_S = 30.0  # after every rank reported, time to leave its group and exit
RANK_FAILURE_WINDOW_S = 1.0  # after a rank failed, time to collect the others' reports
KILL_REAP_S = 2.0  # after SIGKILL, time to be reaped
STACK_GRACE_S = 1.0  # how long a hung child's stack dump may take to arrive
WORKER_ERROR_S = 2.0  # how long to wait for a dead sampler worker's traceback message
MASTER_GONE_S = 2.0  # a worker whose master died: time to unwind before SIGKILL
SAMPLER_EXIT_S = 5.0  # an async sampler process that exited: time for its last messages
RAY_ACTORS_CLOSE_S = 2.0  # Ray sampler actors: time to close their envs at shutdown
# A launched run (rlpyt launch, rlpyt tune): its supervisor gives the script's process
# group this long after SIGTERM before SIGKILL; the launcher waits for the supervisor a
# little longer, so the supervisor finishes first; a cancelled Ray task gets longer still.
LAUNCHED_RUN = StopTimes(join_s=0.0, terminate_s=5.0)
LAUNCHED_RUN_LEFTOVERS = StopTimes(join_s=0.0, terminate_s=0.5)  # after the script exited
LAUNCHER_WAIT_S = 8.0
LAUNCHER_STOPS_RUN = StopTimes(join_s=0.0, terminate_s=LAUNCHER_WAIT_S)
RAY_TASK_CANCEL_S = LAUNCHER_WAIT_S + 2.0
GROUP_SETTLE_S = 0.2  # after a group's leader left: time for the rest to see the SIGTERM


# ---- start -------------------------------------------------------------------------------
def child_setup(sigint: str = "ignore", exit_on_sigterm: bool = True,
                torch_threads: int | None = 1, fork_server: bool = False,
                own_group: bool = False) -> None:
    """The first thing a child process does.

    Args:
        sigint: ``"ignore"`` (the parent stops this child) or ``"raise"`` (Python's
            ``KeyboardInterrupt``: a child that finishes its own work on Ctrl-C).
        exit_on_sigterm: SIGTERM ends the child with ``sys.exit(0)`` (``finally``
            blocks run: envs close); False leaves SIGTERM as it was.
        torch_threads: torch threads, set before any torch op (None: leave torch
            alone and do not import it).
        fork_server: the child starts processes through the fork server itself (else
            it drops the fork server's pipe: ``release_fork_server``).
        own_group: the child leads a process group of its own, so a signal to its
            parent's group (a terminal's Ctrl-C) does not reach it: its parent passes
            signals on, once (default False).
    """
    if own_group:
        os.setpgid(0, 0)
    if sigint == "ignore":
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    elif sigint == "raise":
        signal.signal(signal.SIGINT, signal.default_int_handler)
    else:
        raise ValueError(f"sigint={sigint!r} must be 'ignore' or 'raise'")
    if exit_on_sigterm:
        signal.signal(signal.SIGTERM, _exit_on_sigterm)
    die_with_parent()
    if not fork_server:
        release_fork_server()
    if torch_threads is not None:
        import torch

        torch.set_num_threads(int(torch_threads))


@contextlib.contextmanager
def failures_reported(send: Callable[[str], None], quiet: tuple = (SystemExit,),
                      exit_code: int | None = 1) -> Iterator[None]:
    """Around a child's work: an exception (other than the ``quiet`` ones, the child's
    own ways to stop) is sent to the parent as its traceback, ``send(text)`` (the last
    20,000 characters), and the child exits with ``exit_code`` (None: carry on after the
    block, for a child that ends itself)."""
    try:
        yield
    except quiet:
        pass
    except BaseException:  # noqa: BLE001 - everything reaches the parent
        send(traceback.format_exc()[-20000:])
        if exit_code is not None:
            sys.exit(exit_code)


def _exit_on_sigterm(signum, frame):
    sys.exit(0)


def _load_prctl():
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


# Bound at import, so that a forked child (a ``preexec_fn``) only calls a function.
_prctl = _load_prctl()
_PR_SET_PDEATHSIG = 1


def die_with_parent(signum: int = signal.SIGKILL) -> bool:
    """Ask the kernel to send ``signum`` (default SIGKILL) to this process when its
    parent dies (Linux only).

    A child blocked in native code (an emulator, a simulator) cannot poll for its
    parent; this makes sure it does not outlive a parent killed with SIGKILL.
    Returns whether the request was made.
    """
    if _prctl is None:
        return False
    return _prctl(_PR_SET_PDEATHSIG, int(signum), 0, 0, 0) == 0


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` exists and has not exited (a zombie counts as exited)."""
    try:
        import psutil

        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except ImportError:  # pragma: no cover - psutil is a dependency
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    except Exception:  # noqa: BLE001 - psutil.NoSuchProcess and friends
        return False


def child_processes(processes) -> list:
    """Every descendant (``psutil.Process``) of the given ``multiprocessing`` processes."""
    try:
        import psutil
    except ImportError:  # pragma: no cover - psutil is a dependency
        return []
    found = []
    for proc in processes:
        try:
            found.extend(psutil.Process(proc.pid).children(recursive=True))
        except (psutil.Error, ValueError, TypeError):
            continue
    return found


def kill_psutil_processes(processes, timeout: float = 1.0) -> None:
    """SIGKILL ``psutil.Process`` objects (gone ones are skipped) and reap them."""
    import psutil

    for p in processes:
        try:
            p.kill()
        except psutil.Error:
            continue
    psutil.wait_procs(processes, timeout=timeout)


def describe_exit(exitcode) -> str:
    """How a child process ended, from its ``exitcode``, for error messages."""
    if exitcode is None:
        return "the process is not running"
    if exitcode < 0:
        import signal

        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return (f"killed by signal {name} (exit code {exitcode}); "
                "no Python traceback is available")
    return f"exited with code {exitcode} without reporting an error"


def release_fork_server() -> None:
    """Close this process's inherited write end of multiprocessing's fork-server "alive" pipe.

    The fork server exits when no process holds that end any more; it gives the end
    to every child it forks, so a child that keeps it keeps the fork server (and, through
    its parent-death signal, itself) alive after the master died.  A child that never
    starts processes through the fork server calls this first thing.  Idempotent.
    """
    from multiprocessing import forkserver

    server = forkserver._forkserver
    fd = getattr(server, "_forkserver_alive_fd", None)
    if fd is None:
        return
    try:
        os.close(fd)
    except OSError:
        pass
    # Forget the master's fork server: this process would start its own if it needed one.
    server._forkserver_alive_fd = server._forkserver_pid = None
    server._forkserver_address = None


class ParentGuard:
    """Ties a ``spawn``/``forkserver`` child to its master as early as possible.

    Pass it as the first argument of the child's target.  The child unpickles it
    before the rest of its arguments (which import torch, envs, ...: seconds on a busy
    machine), and unpickling ignores SIGINT (the master stops a starting child), runs
    ``die_with_parent``, ``release_fork_server`` and a
    check that the master is still alive (else the child exits at once).  Under
    ``fork`` nothing is unpickled: the child calls those itself.

    Args:
        master_pid: pid of the process that starts the child.
    """

    def __init__(self, master_pid: int):
        self.master_pid = int(master_pid)

    def __reduce__(self):
        return _guard_child, (self.master_pid,)


def guarded_target(guard: ParentGuard, target, *args):
    """The ``multiprocessing.Process`` target of a child that a ``ParentGuard`` binds:
    ``Process(target=guarded_target, args=(ParentGuard(os.getpid()), target, *args))``
    runs ``target(guard, *args)``.

    A ``spawn``/``forkserver`` child unpickles its target before its arguments: a target
    in a module that imports torch left seconds in which the master could die (an
    orphan) or a Ctrl-C reach the child (a traceback) before the guard was unpickled.
    This module imports no torch, so the guard comes first.
    """
    return target(guard, *args)


def _guard_child(master_pid: int) -> ParentGuard:
    # The master stops a starting child itself; a Ctrl-C that reached the child while it
    # imported (torch: seconds) printed a KeyboardInterrupt traceback per child.  A child
    # that handles Ctrl-C itself installs its handler once started.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent()
    release_fork_server()
    if not process_alive(master_pid):
        os._exit(0)  # The master died while this child was starting.
    return ParentGuard(master_pid)


# ---- watch: a hung child's stack ----------------------------------------------------------
def stack_pipe(ctx):
    """``(reader, writer)``: give ``writer`` to the child (``dump_stack_on_sigusr1``),
    keep ``reader`` for ``read_stack``; close the parent's ``writer`` once it started."""
    return ctx.Pipe(duplex=False)


def dump_stack_on_sigusr1(writer) -> None:
    """In the child: on SIGUSR1, write every thread's Python stack into ``writer`` (a
    ``stack_pipe`` end), even while the main thread is stuck in native code."""
    if writer is not None and hasattr(signal, "SIGUSR1"):
        faulthandler.register(signal.SIGUSR1, file=writer.fileno(), all_threads=True)


def read_stack(pid: int, reader, grace_s: float = STACK_GRACE_S) -> str:
    """Ask child ``pid`` for its Python stack (SIGUSR1) and read it from ``reader``."""
    if reader is None or not hasattr(signal, "SIGUSR1"):
        return "(not available on this platform)"
    fd = reader.fileno()
    try:
        os.kill(pid, signal.SIGUSR1)
    except (ProcessLookupError, TypeError):
        return "(the process is gone)"
    chunks, deadline = [], time.monotonic() + grace_s
    while time.monotonic() < deadline:
        # Once text arrives, a short quiet spell means the dump is complete.
        wait = 0.2 if chunks else deadline - time.monotonic()
        if not select.select([fd], [], [], max(0.0, wait))[0]:
            if chunks:
                break
            continue
        data = os.read(fd, 65536)
        if not data:
            break
        chunks.append(data)
    text = b"".join(chunks).decode(errors="replace").rstrip()
    return text or "(no stack arrived)"


# ---- stop --------------------------------------------------------------------------------
def stop_processes(processes: list, times: StopTimes, request_stop=None, hung=()) -> None:
    """Stop ``multiprocessing`` children: ``request_stop()`` (if given: the children's
    own stop request), ``times.join_s`` to leave on their own, then SIGTERM and
    ``times.terminate_s``, then SIGKILL; all reaped, and every descendant they had before the
    request killed (an env's own subprocess would outlive its worker).  ``hung``:
    children that cannot see a request (stuck in native code), sent SIGTERM at once.

    A stop signal that lands meanwhile (a second Ctrl-C) is raised once every child is
    gone (``stop_signals_held``): a stop cut in two would leave children running, and
    the interpreter's exit waits for them forever."""
    processes = [p for p in processes if p is not None]
    with stop_signals_held():
        descendants = child_processes(processes)
        if request_stop is not None:
            request_stop()
        for proc in hung:
            if proc.is_alive():
                proc.terminate()
        join_all(processes, times.join_s)
        for proc in processes:
            if proc.is_alive():
                proc.terminate()
        join_all(processes, times.terminate_s)
        kill_processes(processes)
        kill_psutil_processes(descendants, timeout=KILL_REAP_S)


def kill_processes(processes: list) -> None:
    """SIGKILL every live ``multiprocessing`` child, in order, and reap all."""
    for proc in processes:
        if proc.is_alive():
            proc.kill()
    join_all(processes, KILL_REAP_S)


def signal_processes(processes: list, signum: int) -> None:
    """Send ``signum`` to every live child."""
    for proc in processes:
        if proc.is_alive():
            try:
                os.kill(proc.pid, signum)
            except ProcessLookupError:
                pass


def join_all(processes: list, seconds: float) -> None:
    """Join ``multiprocessing`` children under one deadline, ``seconds`` from now."""
    deadline = time.monotonic() + seconds
    for proc in processes:
        proc.join(timeout=max(0.0, deadline - time.monotonic()))


def signal_group(group: int, signum: int) -> bool:
    """Send ``signum`` to process group ``group``; False when none of it is left."""
    try:
        os.killpg(group, signum)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def stop_group(group: int, times: StopTimes, leader=None) -> None:
    """Stop process group ``group`` as ``stop_processes`` stops children: ``times.join_s``
    for ``leader`` (its ``subprocess.Popen``, if this process started it) to exit after a
    stop request sent elsewhere, then SIGTERM to the group and ``times.terminate_s`` for
    the leader (without one: the whole group) to exit, ``GROUP_SETTLE_S`` for the rest to
    see the SIGTERM, and SIGKILL to whatever is left.  The leader is reaped."""
    _wait_for(leader, group, times.join_s)
    if signal_group(group, signal.SIGTERM):
        _wait_for(leader, group, times.terminate_s)
        if signal_group(group, 0):
            time.sleep(min(GROUP_SETTLE_S, times.terminate_s))
        signal_group(group, signal.SIGKILL)
    if leader is not None:
        leader.wait()


def _wait_for(leader, group: int, seconds: float) -> None:
    """Up to ``seconds`` for ``leader`` to exit, or without one for ``group`` to empty."""
    def gone() -> bool:
        if leader is not None:
            return leader.poll() is not None
        return not signal_group(group, 0)

    deadline = time.monotonic() + seconds
    while not gone() and time.monotonic() < deadline:
        time.sleep(0.05)


def kill_descendants() -> None:
    """SIGKILL every process this one started, and theirs (best effort)."""
    try:
        import psutil

        for child in psutil.Process().children(recursive=True):
            child.kill()
    except Exception:  # noqa: BLE001 - best effort, often while dying
        pass


def exit_when_parent_dies(grace_s: float = MASTER_GONE_S) -> Callable[[], bool]:
    """In a ``multiprocessing`` child: start a thread that ends this process when its
    parent dies (SIGKILL included): SIGTERM to itself, so the main thread unwinds and
    closes what it holds, then after ``grace_s`` SIGKILL to its descendants and itself.
    Returns a cheap ``() -> bool``: whether the parent is alive (always True in a
    process not started by ``multiprocessing``, which has no parent to watch)."""
    import multiprocessing
    import multiprocessing.connection

    parent = multiprocessing.parent_process()
    sentinel = getattr(parent, "sentinel", None) if parent is not None else None
    if sentinel is None:
        return lambda: True

    def parent_alive() -> bool:
        return not multiprocessing.connection.wait([sentinel], timeout=0)

    def watch():
        multiprocessing.connection.wait([sentinel])
        os.kill(os.getpid(), signal.SIGTERM)  # Unwind in the main thread.
        time.sleep(grace_s)
        kill_descendants()
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name="rlpyt-parent-watch", daemon=True).start()
    return parent_alive


# ---- the parent's own end --------------------------------------------------------------------
class SignalInterrupt(KeyboardInterrupt):
    """SIGTERM (or another stop signal) turned into a ``KeyboardInterrupt``, so that a run
    stops as on Ctrl-C (last snapshot, workers stopped, shared memory released);
    ``signum`` says which signal (the command line exits with ``128 + signum``)."""

    def __init__(self, signum: int):
        super().__init__(f"stopped by {signal.Signals(signum).name}")
        self.signum = int(signum)


_stop_signal: int | None = None  # The stop signal received inside interrupt_on_signals.
# A stop signal that landed inside an import, waiting to be raised once the import ends.
_pending_signal: int | None = None
_pending_lock = threading.Lock()  # (the redelivering thread's check and call are one step)
_redelivered = False  # The next handler call is the redelivering thread's.
PENDING_SIGNAL_POLL_S = 0.02  # how often a signal held back by an import is tried again


@contextlib.contextmanager
def interrupt_on_signals(*signums: int) -> Iterator[None]:
    """Within the block, each of ``signums`` (default SIGTERM) raises ``SignalInterrupt``
    in the main thread (outside the main thread nothing changes, and a signal this
    process ignores stays ignored).  Blocks nest: the inner one's handlers win within it.

    A signal that lands while a module is being imported is raised as soon as the
    import is over (within ``PENDING_SIGNAL_POLL_S``), or when the block ends: torch's
    C++ runs Python code while it loads, and an exception thrown through it there
    aborts the process (SIGABRT) instead of unwinding.  So is one that lands within
    ``stop_signals_held`` (a child process starting), as that block ends.  ``DeferredInterrupt`` treats
    these handlers as Python's own SIGINT handler.

    The signal is also recorded for ``raise_if_stopped``: Python delivers the exception
    at whatever bytecode runs when the signal lands, and where that is a weakref
    callback or a ``__del__`` (the import system's module locks have one) the exception
    is printed as ignored and the program goes on."""
    global _stop_signal
    signums = signums or (signal.SIGTERM,)
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    outer = _stop_signal
    previous = {s: signal.signal(s, _raise_outside_imports) for s in signums
                if signal.getsignal(s) != signal.SIG_IGN}
    try:
        yield
    except BaseException:
        _end_block(previous, outer)
        raise
    pending = _end_block(previous, outer)
    if pending is not None:  # It landed in the block's last import.
        raise SignalInterrupt(pending)


def _raise_outside_imports(signum, frame) -> None:
    global _stop_signal, _pending_signal, _redelivered
    redelivered, _redelivered = _redelivered, False
    if redelivered and _pending_signal is None:
        return  # A redelivery of a signal already raised: its stop is under way.
    _stop_signal = signum
    if _held or _inside_import(frame):
        if _pending_signal is None:
            _pending_signal = signum
            threading.Thread(target=_deliver_pending, args=(signum,), daemon=True,
                             name="rlpyt-signal-after-import").start()
        return
    # Not _take_pending: this handler can run inside its locked block (the main thread
    # holds the lock there), and the lock is not re-entrant.  The main thread alone
    # writes the variable; the redelivering thread only reads it.
    _pending_signal = None
    raise SignalInterrupt(signum)


_raise_outside_imports.raises_interrupt = True  # (for DeferredInterrupt)


_held = 0  # depth of stop_signals_held blocks


@contextlib.contextmanager
def stop_signals_held() -> Iterator[None]:
    """Within the block, a stop signal of ``interrupt_on_signals`` waits, and is raised
    as the block ends: for steps that must not be cut in two, such as starting a child
    process and recording it (a parent interrupted inside ``Process.start`` leaves a
    child it does not know of, and Python code that runs at a fork cannot raise), or
    stopping children (``stop_processes``).  Outside the main thread, where no signal
    handler runs, it changes nothing."""
    global _held
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _held += 1
    try:
        yield
    finally:
        _held -= 1
    if _held == 0:
        signum = _take_pending()
        if signum is not None:
            raise SignalInterrupt(signum)


def _reset_in_child() -> None:
    global _held, _pending_signal
    _held, _pending_signal = 0, None


os.register_at_fork(after_in_child=_reset_in_child)


def start_process(process, started: list | None = None) -> None:
    """``process.start()``, and ``started.append(process)``, with stop signals held
    (``stop_signals_held``): a parent stopped meanwhile has the child on its list."""
    with stop_signals_held():
        process.start()
        if started is not None:
            started.append(process)


def _inside_import(frame) -> bool:
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def _deliver_pending(signum: int) -> None:
    """Runs the main thread's handler for ``signum`` again (``_thread.interrupt_main``)
    every ``PENDING_SIGNAL_POLL_S`` until it raised, or its block ended."""
    import _thread

    global _redelivered
    while True:
        time.sleep(PENDING_SIGNAL_POLL_S)
        with _pending_lock:
            if _pending_signal != signum:
                return
            _redelivered = True
            _thread.interrupt_main(signum)


def _take_pending() -> int | None:
    """Clears the signal held back (by an import or a hold) and returns it: the caller
    raises it, and the redelivering thread stops, its last call (if any) a no-op."""
    global _pending_signal
    with _pending_lock:  # (atomic with the redelivering thread's check and call)
        pending, _pending_signal = _pending_signal, None
    return pending


def _end_block(previous: dict, outer: int | None) -> int | None:
    """Restores the handlers a block replaced; returns a signal still held back."""
    global _stop_signal
    try:
        pending = _take_pending()  # No redelivery reaches the handlers restored below.
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        _stop_signal = outer
    return pending


class StopSignals:
    """Records the stop signals ``signums`` instead of acting on them, for a process
    whose main loop polls (a launched run's supervisor): ``signum`` is the first one
    received (None before), and later ones change nothing, so a stop in progress runs
    to its end.  The handlers stay for the life of the process."""

    def __init__(self, *signums: int):
        self.signum: int | None = None
        for signum in signums:
            signal.signal(signum, self._record)

    def _record(self, signum, frame) -> None:
        if self.signum is None:
            self.signum = int(signum)


def interrupt_on_sigterm():
    """``interrupt_on_signals(SIGTERM)``: a run stops on SIGTERM as on Ctrl-C."""
    return interrupt_on_signals(signal.SIGTERM)


def interrupt_on_stop_signals():
    """``interrupt_on_signals`` for SIGTERM, and for SIGINT where Python's own handler
    has it (not where it is ignored, as in a background job, or handled by the
    caller): a command stops on either, also while it imports."""
    sigint = signal.getsignal(signal.SIGINT) is signal.default_int_handler
    return interrupt_on_signals(signal.SIGTERM, *([signal.SIGINT] if sigint else []))


def raise_if_stopped() -> None:
    """Raise ``SignalInterrupt`` again for a SIGTERM whose first one was swallowed where
    it landed (``interrupt_on_sigterm``); the training loops call it once an iteration,
    where an exception always propagates.  A signal still held back by an import is
    raised here too, and so is not raised a second time later (in the stop it began)."""
    if _stop_signal is not None:
        _take_pending()
        raise SignalInterrupt(_stop_signal)


def exit_now(code: int) -> None:
    """End this process with ``code`` without the interpreter's teardown.

    For a process whose work is over (workers stopped, run files closed: the ``rlpyt``
    program after its command, a spawned SyncRl rank after its report); tearing down
    the interpreter frees every object torch and the envs made, one by one, which
    is slow even on an idle machine and takes seconds on a busy one, after a Ctrl-C or
    ``SIGTERM`` too, where a scheduler waits for the exit (docs/notes/signals.md has the
    timings).  What an ordinary exit still does that matters is done first: non-daemon
    threads are joined, the ``atexit`` handlers run (logging, multiprocessing's clean-up)
    and the standard streams are flushed.  Where the interpreter offers no way to run the
    handlers, the ordinary exit stays, with the last garbage collection skipped.
    """
    import atexit
    import gc
    import threading

    gc.freeze()  # (the ordinary exit's last collection would walk the whole heap)
    run_exit_handlers = getattr(atexit, "_run_exitfuncs", None)
    if run_exit_handlers is None:  # pragma: no cover - not CPython
        return
    for thread in threading.enumerate():
        if thread is not threading.main_thread() and not thread.daemon:
            thread.join()
    run_exit_handlers()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    os._exit(code)
