"""Supervisor of one launched run: pin, start the train script, take its tree down with it.

Run as a plain script (it imports only ``rlpyt.utils.supervisor``, which imports no
torch, so it starts in milliseconds)::

    python run_supervisor.py [--cpus 0,1,8,9] [--parent-pid PID] -- python train.py ARGS...

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
from rlpyt.utils.launching.cpus import pin_process  # noqa: E402
from rlpyt.utils.supervisor import (  # noqa: E402
    LAUNCHED_RUN,
    LAUNCHED_RUN_LEFTOVERS,
    StopSignals,
    die_with_parent,
    stop_group,
)


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
        pin_process(int(c) for c in args.cpus.split(","))
    stop = StopSignals(signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
    child = subprocess.Popen(
        command,
        start_new_session=True,  # The script leads its own process group.
        preexec_fn=lambda: die_with_parent(signal.SIGKILL),
    )
    while child.poll() is None and stop.signum is None:
        time.sleep(0.05)
    if stop.signum is not None:
        stop_group(child.pid, LAUNCHED_RUN, leader=child)
        return 128 + stop.signum
    stop_group(child.pid, LAUNCHED_RUN_LEFTOVERS, leader=child)  # a finished script's orphans
    code = child.returncode
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main())
