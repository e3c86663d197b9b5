"""Process set-up: CPU pinning, torch threads, and tying a child's life to its parent.

Pinning uses ``psutil`` where the platform supports it (Linux, Windows) and takes
CPU ids from the set actually available to the process (containers and batch
schedulers often grant a subset such as ``{4, 5, 6, 7}``), never assuming
``0 .. n-1``.  Where pinning is unsupported (macOS) it warns once and runs unpinned.

Each process pins itself from the full CPU set its run was given (``granted_cpus``),
never from a parent's narrowed one: a parent that pinned itself before forking (the
optimizer of an async run, a sampler master) hands its children its own narrow set,
and they widen back to the granted set as they pin themselves.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import warnings
from collections.abc import Iterable, Iterator

__all__ = [
    "ParentGuard",
    "SignalInterrupt",
    "apply_affinity",
    "available_cpus",
    "die_with_parent",
    "exit_now",
    "granted_cpus",
    "guarded_target",
    "interrupt_on_sigterm",
    "process_alive",
    "release_fork_server",
]

_warned_unpinned = False
_granted: list[int] | None = None  # Recorded before this process tree's first pin.


def exit_now(code: int) -> None:
    """End this process with ``code`` without the interpreter's teardown.

    For a process whose work is over (workers stopped, run files closed: the ``rlpyt``
    program after its command, a spawned SyncRl rank after its report); tearing down
    the interpreter frees every object torch and the envs made, one by one, which
    takes about 0.4 s on an idle machine and seconds on a busy one, after a Ctrl-C or
    ``SIGTERM`` too, where a scheduler waits for the exit.  What an ordinary exit still
    does that matters is done first: non-daemon threads are joined, the ``atexit``
    handlers run (logging, multiprocessing's clean-up) and the standard streams are
    flushed.  Where the interpreter offers no way to run the handlers, the ordinary exit
    stays, with the last garbage collection skipped.
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


def available_cpus() -> list[int]:
    """Ids of the CPUs this process may run on, sorted (all CPUs where unknown)."""
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        pass
    try:
        import psutil

        return sorted(psutil.Process().cpu_affinity())
    except (ImportError, AttributeError, OSError, NotImplementedError):
        return list(range(os.cpu_count() or 1))


def granted_cpus() -> list[int]:
    """The CPUs this run may use: those available when rlpyt first pinned a process of it.

    Recorded at the first call (``apply_affinity`` calls it before it pins), so a child
    forked after its parent pinned itself still knows the full set; CPUs available now
    are included too (a process may have been given more since)."""
    global _granted
    if _granted is None:
        _granted = available_cpus()
    return sorted(set(_granted) | set(available_cpus()))


def _as_cpu_list(cpus) -> list[int]:
    if isinstance(cpus, int):
        return [cpus]
    if not isinstance(cpus, Iterable):
        raise TypeError(f"cpus={cpus!r} must be a CPU id or a list of CPU ids")
    return [int(c) for c in cpus]


def apply_affinity(cpus=None, torch_threads=None, set_affinity: bool = True) -> None:
    """Pin this process to ``cpus`` and set torch's intra-op thread count.

    Args:
        cpus: a CPU id or a list of ids, all among ``granted_cpus()`` (a process pinned
            narrower by its parent widens back to them); ``None`` or empty leaves the
            process unpinned.
        torch_threads: torch intra-op threads; ``None`` uses ``len(cpus)`` when
            ``cpus`` is given and leaves torch's setting alone otherwise.
        set_affinity: False skips pinning (threads are still set).

    Raises ``ValueError`` naming the CPUs that are not available to the run.
    """
    global _warned_unpinned
    cpus = _as_cpu_list(cpus) if cpus not in (None, ()) else []
    available = set(granted_cpus())  # Recorded before the first pin, whatever happens.
    if cpus and set_affinity:
        missing = sorted(set(cpus) - available)
        if missing:
            raise ValueError(
                f"affinity CPUs {missing} are not available to this process; "
                f"available CPUs: {sorted(available)}"
            )
        try:
            import psutil

            proc = psutil.Process()
            if not hasattr(proc, "cpu_affinity"):
                raise NotImplementedError("psutil has no cpu_affinity on this platform")
            proc.cpu_affinity(cpus)
        except (ImportError, NotImplementedError, AttributeError, OSError) as e:
            if not _warned_unpinned:
                warnings.warn(f"CPU affinity not set ({e}); running unpinned", stacklevel=2)
                _warned_unpinned = True
    if torch_threads is None and cpus:
        torch_threads = len(cpus)
    if torch_threads is not None:
        if int(torch_threads) < 1:
            raise ValueError(f"torch_threads={torch_threads!r} must be a positive integer")
        import torch  # Lazy: utils must import without torch.

        torch.set_num_threads(int(torch_threads))


def die_with_parent() -> bool:
    """Ask the kernel to SIGKILL this process when its parent dies (Linux only).

    A child blocked in native code (an emulator, a simulator) cannot poll for its
    parent; this makes sure it does not outlive a parent killed with SIGKILL.
    Returns whether the request was made.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes
        import signal

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        return libc.prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


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


def kill_processes(processes, timeout: float = 1.0) -> None:
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


class SignalInterrupt(KeyboardInterrupt):
    """SIGTERM (or another stop signal) turned into a ``KeyboardInterrupt``, so that a run
    stops as on Ctrl-C (last snapshot, workers stopped, shared memory released);
    ``signum`` says which signal (the command line exits with ``128 + signum``)."""

    def __init__(self, signum: int):
        super().__init__(f"stopped by {signal.Signals(signum).name}")
        self.signum = int(signum)


@contextlib.contextmanager
def interrupt_on_sigterm() -> Iterator[None]:
    """Within the block, SIGTERM raises ``SignalInterrupt`` in the main thread (outside
    the main thread, or where SIGTERM is ignored, nothing changes)."""
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGTERM) == signal.SIG_IGN:
        yield
        return

    def on_sigterm(signum, frame):
        raise SignalInterrupt(signum)

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
