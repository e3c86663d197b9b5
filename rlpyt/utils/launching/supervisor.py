"""Supervisor of one launched run: pin, start the train script, take its tree down with it.

Run as a plain script (it imports only ``rlpyt.utils.supervisor``, which imports no
torch, so it starts in milliseconds)::

    python supervisor.py [--cpus 0,1,8,9] [--parent-pid PID] -- python train.py ARGS...

The supervisor

- pins itself to ``--cpus`` before starting the script, so the whole run tree
  inherits the CPU set (no ``taskset`` needed);
- starts the script as the leader of a new process group, so the script and
  every process it starts can be signalled at once;
- on Linux asks the kernel to SIGTERM the supervisor when the launcher dies, and
  to SIGKILL the script when the supervisor dies, so a killed launcher leaves no
  orphans;
- on SIGTERM / SIGINT / SIGHUP terminates the script's group (SIGTERM, then
  SIGKILL after a grace period), and after the script exits kills whatever it
  left behind in its group;
- exits with the script's exit code (128 + signal number if a signal ended it).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time

if not __package__:  # run as a script: the package this file belongs to, last on the path
    sys.path.append(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))))
from rlpyt.utils.supervisor import LAUNCHED_RUN, die_with_parent  # noqa: E402

GRACE_SECONDS = LAUNCHED_RUN.terminate_s


def _pin(cpus: list[int]) -> None:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, cpus)
        return
    try:
        import psutil

        psutil.Process().cpu_affinity(cpus)
    except (ImportError, AttributeError, NotImplementedError):
        print("supervisor: this platform cannot pin CPUs; running unpinned", file=sys.stderr)


def _kill_group(group: int, grace: float, child: subprocess.Popen) -> None:
    """SIGTERM the script's process group, then SIGKILL what is left after ``grace``."""
    try:
        os.killpg(group, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace
    while child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(min(0.2, grace))  # Let the script's own children see the TERM too.
    try:
        os.killpg(group, signal.SIGKILL)
    except ProcessLookupError:
        pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpus", default="", help="comma-separated CPU ids to pin to")
    parser.add_argument("--parent-pid", type=int, default=None)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given after --")
    if args.parent_pid is not None:
        die_with_parent(signal.SIGTERM)
        if os.getppid() != args.parent_pid:  # The launcher died before prctl took effect.
            return 128 + signal.SIGTERM
    if args.cpus:
        _pin([int(c) for c in args.cpus.split(",")])

    stop: dict[str, int | None] = {"signal": None}

    def on_signal(signum, _frame):
        stop["signal"] = signum

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, on_signal)
    child = subprocess.Popen(
        command,
        start_new_session=True,  # The script leads its own process group.
        preexec_fn=lambda: die_with_parent(signal.SIGKILL),
    )
    while child.poll() is None and stop["signal"] is None:
        time.sleep(0.05)
    if stop["signal"] is not None:
        _kill_group(child.pid, GRACE_SECONDS, child)
        child.wait()
        return 128 + stop["signal"]
    _kill_group(child.pid, 0.5, child)  # Leftovers of a finished script are orphans.
    code = child.returncode
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main())
