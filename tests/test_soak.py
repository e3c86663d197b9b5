"""Soak: a run of the multi-process runners does not grow (memory, file descriptors,
shared memory), and stops on SIGINT with nothing left behind.

Each case starts a run through the command line and lets it train on CartPole-v1:

- ``async``: ``AsyncRl`` DQN (``rlpyt train --algo dqn --runner async``: optimizer,
  sampler and memory-copier processes);
- ``sync``: 2-rank ``SyncRl`` PPO (``rlpyt train --algo ppo --nproc 2``: a launcher and
  two ranks),

with a log row and an evaluation every 2,000 env steps and no checkpoints.  Once the run
has written ``WARMUP_ROWS`` log rows (imports done, buffers allocated, every per-row path
run once) and ``RLPYT_SOAK_WARMUP_S`` seconds have passed, it records every process of
the run: its RSS, its open file descriptors and the /dev/shm files it maps; again after
``RLPYT_SOAK_MINUTES`` more minutes, in which the run must have written more rows.  Then
it stops the run with SIGINT and asks for exit code 130, no process left and none of the
run's /dev/shm files left.

Growth beyond 5% of any process's RSS, descriptors or mapped /dev/shm files fails, as
does a process that came or went between the snapshots; RSS growth under 2 MiB is
allocator noise of a small process and passes.  The default window is short (a
descriptor or shared-memory leak per batch or per log row shows within it); a slow
memory leak needs the long soak of ``docs/notes/soak.md``:

    RLPYT_SOAK_MINUTES=18 RLPYT_SOAK_WARMUP_S=120 pytest -m soak -s tests/test_soak.py
"""

from __future__ import annotations

import csv
import glob
import os
import signal
import subprocess
import sys
import textwrap
import time

import psutil
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MINUTES = float(os.environ.get("RLPYT_SOAK_MINUTES", "0.25"))
WARMUP_S = float(os.environ.get("RLPYT_SOAK_WARMUP_S", "0"))
WARMUP_ROWS = 3
LOG_INTERVAL_STEPS = 2000
START_WITHIN_S = 180  # Imports and the first rows, on a loaded 2-core machine.
GROWTH = 0.05
RSS_NOISE = 2 * 2**20

RUNS = {
    "async": ["--algo", "dqn", "--runner", "async"],
    "sync": ["--algo", "ppo", "--nproc", "2"],
}

# The command line, with Python's own SIGINT handler (a test run started as a background
# job starts its children with SIGINT ignored).
LAUNCHER = textwrap.dedent("""
    import signal, sys
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from rlpyt.cli import main
    sys.exit(main())  # (as the rlpyt program: arguments from sys.argv)
""")


def shm_inodes(pid: int) -> frozenset:
    """Inodes of the /dev/shm files process ``pid`` maps (a named semaphore is mapped
    under the temporary name it was created with, so names would not match)."""
    try:
        with open(f"/proc/{pid}/maps") as f:
            return frozenset(int(line.split()[4]) for line in f if "/dev/shm/" in line)
    except (OSError, ValueError, IndexError):
        return frozenset()


def snapshot(root: psutil.Process) -> dict:
    """``{pid: (name, rss, fds, shm inodes)}`` of ``root`` and its descendants."""
    procs = {}
    for proc in [root, *root.children(recursive=True)]:
        try:
            with proc.oneshot():
                name = ("launcher" if proc is root else "resource tracker"
                        if "resource_tracker" in " ".join(proc.cmdline()) else "child")
                procs[proc.pid] = (name, proc.memory_info().rss, proc.num_fds(),
                                   shm_inodes(proc.pid))
        except psutil.Error:
            continue
    return procs


def rows_written(log_dir: str) -> int:
    paths = glob.glob(os.path.join(log_dir, "run_*", "progress.csv"))
    if not paths:
        return 0
    with open(paths[0], newline="") as f:
        return max(sum(1 for _ in csv.reader(f)) - 1, 0)


def grew(before: float, after: float, noise: float = 0.0) -> bool:
    return after > before * (1 + GROWTH) and after - before > noise


def growth_report(start: dict, end: dict) -> tuple[list[str], list[str]]:
    """The table of both snapshots, and what grew, came or went."""
    table, problems = [], []
    for pid, (name, rss0, fds0, shm0) in start.items():
        if pid not in end:
            problems.append(f"{pid} {name}: gone before the end")
            continue
        _, rss1, fds1, shm1 = end[pid]
        table.append(f"{pid:>8} {name:<16} RSS {rss0 / 2**20:7.1f} -> {rss1 / 2**20:7.1f} MiB "
                     f"({(rss1 - rss0) / rss0:+.1%}), fds {fds0} -> {fds1}, "
                     f"/dev/shm files {len(shm0)} -> {len(shm1)}")
        if grew(rss0, rss1, RSS_NOISE):
            problems.append(f"{pid} {name}: RSS grew")
        if grew(fds0, fds1):
            problems.append(f"{pid} {name}: file descriptors grew")
        if grew(len(shm0), len(shm1)):
            problems.append(f"{pid} {name}: mapped /dev/shm files grew")
    for pid in end.keys() - start.keys():
        problems.append(f"{pid} {end[pid][0]}: new since the first snapshot")
    return table, problems


def tail(path) -> str:
    with open(path, errors="replace") as f:
        return f.read()[-4000:]


def wait_for_rows(proc, log_dir: str, rows: int, deadline: float, stderr) -> None:
    while rows_written(log_dir) < rows:
        if proc.poll() is not None:
            raise AssertionError(f"the run ended early ({proc.returncode}): {tail(stderr)}")
        if time.monotonic() > deadline:
            raise AssertionError(f"fewer than {rows} log rows in time")
        time.sleep(0.5)


@pytest.mark.soak
@pytest.mark.timeout(int(2 * START_WITHIN_S + WARMUP_S + 60 * MINUTES + 120))
@pytest.mark.parametrize("run", sorted(RUNS))
def test_a_run_does_not_grow_and_stops_clean(run, tmp_path):
    log_dir, stderr = str(tmp_path / "runs"), tmp_path / "stderr.txt"
    # A file, not a pipe: a long run's warnings would fill a pipe nobody reads and block it.
    with open(stderr, "w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-c", LAUNCHER, "train", *RUNS[run], "--n-steps", "1e8",
             "--log-dir", log_dir, "--runner.log_interval_steps", str(LOG_INTERVAL_STEPS),
             "--runner.checkpoint_interval_steps", "0"],
            env=dict(os.environ, PYTHONPATH=ROOT), stdout=subprocess.DEVNULL, stderr=err,
            start_new_session=True)
    root = psutil.Process(proc.pid)
    try:
        started = time.monotonic()
        wait_for_rows(proc, log_dir, WARMUP_ROWS, started + START_WITHIN_S + WARMUP_S, stderr)
        time.sleep(max(WARMUP_S - (time.monotonic() - started), 0.0))
        start, rows0 = snapshot(root), rows_written(log_dir)
        time.sleep(60 * MINUTES)
        # At least two rows in the window: the run trained and logged while measured.
        wait_for_rows(proc, log_dir, rows0 + 2, time.monotonic() + START_WITHIN_S, stderr)
        end, rows1 = snapshot(root), rows_written(log_dir)
        children = root.children(recursive=True)
        os.kill(proc.pid, signal.SIGINT)
        code = proc.wait(60)
        _, left = psutil.wait_procs(children, timeout=10)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    run_inodes = set().union(*(shm for *_, shm in [*start.values(), *end.values()]))
    left_shm = [name for name in os.listdir("/dev/shm")
                if _inode(os.path.join("/dev/shm", name)) in run_inodes]
    table, problems = growth_report(start, end)
    print(f"\n{run}: log rows {rows0} -> {rows1}\n" + "\n".join(table))
    assert not problems, "\n".join(problems + table)
    assert code == 130, (code, tail(stderr))
    assert not left, f"processes left after SIGINT: {left}"
    assert not left_shm, f"/dev/shm files of the run left after SIGINT: {left_shm}"


def _inode(path: str) -> int | None:
    try:
        return os.stat(path).st_ino
    except OSError:
        return None
