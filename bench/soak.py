"""Soak test: long runs must not grow (memory, file descriptors, shared memory).

Runs, one after the other, through the real command line:

- ``async``: AsyncRl DQN on CartPole-v1 (``rlpyt train --algo dqn --runner async``:
  optimizer, sampler and memory-copier processes);
- ``sync``: 2-rank SyncRl PPO on CartPole-v1 (``rlpyt train --algo ppo --nproc 2``:
  launcher and two ranks),

each for ``--minutes`` (default 20).  After ``--warmup-s`` (default 120 s: imports done,
buffers allocated and touched) it records, for every process of the run, its RSS and
open file descriptors, and the number of /dev/shm entries; again at the end.  Then it
stops the run with SIGINT and checks that it exits and leaves no process behind.

Growth beyond 5% (RSS or descriptors of any process, /dev/shm entries) is flagged
``GROWTH``; a per-process RSS growth under 2 MiB is not flagged (allocator noise of a
small process).  /dev/shm is counted machine-wide: on a shared machine other jobs'
entries come and go, so an shm flag there is checked by hand.

    python bench/soak.py --minutes 20
    python bench/soak.py --minutes 3 --which async
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time

import psutil

RUNS = {
    "async": ["--algo", "dqn", "--runner", "async"],
    "sync": ["--algo", "ppo", "--nproc", "2"],
}
GROWTH = 0.05
RSS_NOISE = 2 * 2**20


def snapshot(root: psutil.Process) -> dict:
    """``{pid: (name, rss, fds)}`` of ``root`` and its descendants, plus /dev/shm."""
    procs = {}
    for proc in [root, *root.children(recursive=True)]:
        try:
            with proc.oneshot():
                name = " ".join(proc.cmdline()[-3:])[-50:] if proc is root else proc.name()
                procs[proc.pid] = (name, proc.memory_info().rss, proc.num_fds())
        except psutil.Error:
            continue
    try:
        shm = len(os.listdir("/dev/shm"))
    except OSError:
        shm = -1
    return dict(procs=procs, shm=shm, time=time.monotonic())


def grew(before: float, after: float, noise: float = 0.0) -> bool:
    return after > before * (1 + GROWTH) and after - before > noise


def report(which: str, start: dict, end: dict) -> bool:
    minutes = (end["time"] - start["time"]) / 60
    print(f"\n== {which}: {minutes:.1f} min between the two snapshots ==")
    print(f"{'pid':>8} {'process':<28} {'RSS start MiB':>14} {'RSS end MiB':>12} "
          f"{'growth':>8} {'fds start':>9} {'fds end':>8}")
    ok = True
    for pid, (name, rss0, fds0) in start["procs"].items():
        if pid not in end["procs"]:
            print(f"{pid:>8} {name:<28} {rss0 / 2**20:>14.1f} {'(gone)':>12}")
            ok = False
            continue
        _, rss1, fds1 = end["procs"][pid]
        flag = ""
        if grew(rss0, rss1, RSS_NOISE) or grew(fds0, fds1):
            flag, ok = "  GROWTH", False
        print(f"{pid:>8} {name[:28]:<28} {rss0 / 2**20:>14.1f} {rss1 / 2**20:>12.1f} "
              f"{(rss1 - rss0) / rss0:>+8.1%} {fds0:>9} {fds1:>8}{flag}")
    for pid in set(end["procs"]) - set(start["procs"]):
        name, rss1, fds1 = end["procs"][pid]
        print(f"{pid:>8} {name[:28]:<28} {'(new)':>14} {rss1 / 2**20:>12.1f}")
        ok = False
    total0 = sum(r for _, r, _ in start["procs"].values())
    total1 = sum(r for _, r, _ in end["procs"].values())
    shm_flag = "  GROWTH" if grew(start["shm"], end["shm"]) else ""
    print(f"total RSS {total0 / 2**20:.1f} -> {total1 / 2**20:.1f} MiB "
          f"({(total1 - total0) / total0:+.1%}); /dev/shm entries {start['shm']} -> "
          f"{end['shm']}{shm_flag}")
    return ok and not shm_flag


def soak(which: str, minutes: float, warmup_s: float) -> bool:
    log_dir = tempfile.mkdtemp(prefix=f"rlpyt-soak-{which}-")
    cmd = [sys.executable, "-m", "rlpyt", "train", *RUNS[which], "--n-steps", "1e8",
           "--log-dir", log_dir, "--runner.log_interval_steps", "10000",
           "--runner.checkpoint_interval_steps", "0"]
    print(f"$ {' '.join(cmd)}", flush=True)
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT,
                                                             signal.default_int_handler))
    root = psutil.Process(proc.pid)
    try:
        time.sleep(warmup_s)
        if proc.poll() is not None:
            raise RuntimeError(f"the run ended early: {proc.stderr.read()}")
        start = snapshot(root)
        time.sleep(max(minutes * 60 - warmup_s, 1.0))
        if proc.poll() is not None:
            raise RuntimeError(f"the run ended early: {proc.stderr.read()}")
        end = snapshot(root)
        children = root.children(recursive=True)
        os.kill(proc.pid, signal.SIGINT)
        code = proc.wait(60)
        _, left = psutil.wait_procs(children, timeout=10)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    ok = report(which, start, end)
    print(f"stopped with SIGINT: exit code {code}, processes left: {len(left)}")
    return ok and code == 130 and not left


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=20.0, help="per run (default 20)")
    parser.add_argument("--warmup-s", type=float, default=120.0,
                        help="seconds before the first snapshot (default 120)")
    parser.add_argument("--which", choices=["async", "sync", "both"], default="both",
                        help="the AsyncRl DQN run, the 2-rank SyncRl PPO run, or both "
                             "one after the other (default)")
    args = parser.parse_args()
    runs = ["async", "sync"] if args.which == "both" else [args.which]
    results = {which: soak(which, args.minutes, args.warmup_s) for which in runs}
    print("\n" + ", ".join(f"{w}: {'ok' if ok else 'GROWTH or leftovers'}"
                           for w, ok in results.items()))
    return 0 if all(results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
