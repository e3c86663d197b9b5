"""Atari training speed with freed memory kept for reuse and without (``rlpyt.utils.malloc``).

The runners raise glibc's mmap and trim thresholds in the training process, so the large
blocks a learner frees each step (float32 minibatches of frames, activations, gradients)
are reused instead of mapped afresh, each page faulting and zeroed by the kernel.  Each
measurement is one ``rlpyt train`` command, as a user runs it, on Pong with no evaluation
games: ``ppo`` (``--sampler-type cpu``) and ``appo`` (``--runner async``); the other side
sets ``RLPYT_KEEP_FREED_MEMORY=0``.  The rate is env steps a second between the first log
row and the last (start-up excluded); the CPU time and minor page faults are the whole
run's, its worker processes included.  Repeats alternate the order; medians and their
ratios are printed.

    python bench/speed/malloc.py --repeats 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from row_rate import command_rate  # noqa: E402

COMMANDS = {
    "ppo": ["--algo", "ppo", "--sampler-type", "cpu"],
    "appo": ["--algo", "appo", "--runner", "async"],
}


def measure(algo: str, keep: bool, n_steps: int, rows: int) -> dict:
    """One run: its env steps a second between log rows, CPU seconds and page faults."""
    args = [*COMMANDS[algo], "--env", "PongNoFrameskip-v4", "--sampler.eval_n_envs", "0",
            "--seed", "0"]
    return command_rate(args, n_steps, rows, env=dict(RLPYT_KEEP_FREED_MEMORY="1" if keep
                                                      else "0"))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--algos", nargs="+", default=list(COMMANDS), choices=list(COMMANDS))
    p.add_argument("--n-steps", type=int, default=49_152,
                   help="agent steps a run (default 49152: six log rows of 8192)")
    p.add_argument("--rows", type=int, default=6, help="log rows a run (default 6)")
    a = p.parse_args()
    for algo in a.algos:
        runs = {True: [], False: []}
        for repeat in range(a.repeats):
            for keep in ((True, False) if repeat % 2 == 0 else (False, True)):
                runs[keep].append(measure(algo, keep, a.n_steps, a.rows))
                r = runs[keep][-1]
                print(f"  {algo} {'kept' if keep else 'mapped afresh'}: {r['rate']:.0f} steps/s, "
                      f"{r['user']:.0f} s user + {r['system']:.0f} s system, "
                      f"{r['faults'] / 1e6:.2f}M page faults", flush=True)
        med = {keep: {k: statistics.median(r[k] for r in runs[keep]) for k in runs[keep][0]}
               for keep in runs}
        kept, fresh = med[True], med[False]
        print(f"{algo}: {kept['rate']:.0f} agent steps/s kept, {fresh['rate']:.0f} mapped afresh: "
              f"kept / afresh = {kept['rate'] / fresh['rate']:.2f}x; system CPU "
              f"{kept['system']:.0f} s against {fresh['system']:.0f} s, user "
              f"{kept['user']:.0f} s against {fresh['user']:.0f} s, page faults "
              f"{kept['faults'] / 1e6:.2f}M against {fresh['faults'] / 1e6:.2f}M "
              f"(medians of {a.repeats})", flush=True)


if __name__ == "__main__":
    main()
