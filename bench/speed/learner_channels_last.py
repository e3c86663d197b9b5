"""APPO's asynchronous learner on Pong with its conv weights channels-last and without.

``AsyncRl(learner_channels_last=True)``, the default, keeps the learner's convolution
weights in channels-last memory order on the CPU (``BaseAgent.learner_channels_last``);
the sampler's copy keeps the default order.  Each measurement is one ``rlpyt train
--algo appo --runner async --sampler-type serial --torch-threads 1`` command on
PongNoFrameskip-v4 with no evaluation games, the other side adding
``--runner.learner_channels_last false``.  On 2 cores the learner is the bottleneck, so
its speed is the run's.  The rate is env steps a second between the first log row and
the last (start-up excluded).  Repeats alternate the order; medians and their ratio are
printed.

    python bench/speed/learner_channels_last.py --repeats 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from row_rate import command_rate  # noqa: E402

APPO = ["--algo", "appo", "--runner", "async", "--sampler-type", "serial",
        "--torch-threads", "1", "--env", "PongNoFrameskip-v4", "--sampler.eval_n_envs", "0",
        "--seed", "0"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--n-steps", type=int, default=61_440,
                   help="agent steps a run (default 61440: four log rows of 15360)")
    p.add_argument("--rows", type=int, default=4, help="log rows a run (default 4)")
    a = p.parse_args()
    runs = {True: [], False: []}
    for repeat in range(a.repeats):
        for channels_last in ((True, False) if repeat % 2 == 0 else (False, True)):
            args = APPO + ([] if channels_last else ["--runner.learner_channels_last", "false"])
            runs[channels_last].append(command_rate(args, a.n_steps, a.rows))
            r = runs[channels_last][-1]
            print(f"  {'channels-last' if channels_last else 'default order'}: "
                  f"{r['rate']:.0f} steps/s, {r['user']:.0f} s user", flush=True)
    last, plain = (statistics.median(r["rate"] for r in runs[k]) for k in (True, False))
    print(f"appo: {last:.0f} agent steps/s channels-last, {plain:.0f} default order: "
          f"channels-last / default = {last / plain:.2f}x (medians of {a.repeats})")


if __name__ == "__main__":
    main()
