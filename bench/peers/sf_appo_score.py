"""Peer: Sample Factory's APPO learning Pong with its Atari defaults, logged as a run.

Run in the Sample Factory venv (``bench/peers/``), by
``bench/sample_factory/pong_to_score.py``.  The settings are Sample Factory's own for
Atari (``sf_examples.atari``: PongNoFrameskip-v4 with its wrappers, and
``atari_override_defaults``: 8 workers, rollouts of 128, 4 epochs of 4 minibatches of
256, Adam 2.5e-4 decayed linearly, 10M frames), on the CPU; only the seed, the
wall-time cap and the place of its files are set here.

Every report of its learner (about every 5 s) becomes a row of ``<out>/progress.csv`` in
rlpyt's columns: ``CumTime (s)`` (from this script's start, so Sample Factory's start-up
counts, as rlpyt's does), ``CumSteps`` (agent steps: its frame count over the frame skip
of 4) and ``GameScoreAverage`` (its mean reward of the latest 100 episodes; on Pong,
which has one life and rewards of -1 and 1, an episode is a whole game and its clipped
reward is the game's score).  The run stops at ``--stop-score``, at ``--max-seconds``, or
at its 10M frames, whichever comes first.

    python sf_appo_score.py --seed 0 --out DIR --stop-score 18 --max-seconds 6000
"""

from __future__ import annotations

import argparse
import ast
import csv
import json
import logging
import os
import re
import signal
import sys
import tempfile
import time

FRAME_SKIP = 4
FRAMES = re.compile(r"Total num frames: (\d+)")
REWARD = re.compile(r"Avg episode reward: (\[.*\])")
COLUMNS = ("CumTime (s)", "CumSteps", "GameScoreAverage")


class ProgressRows(logging.Handler):
    """Writes a row at each of Sample Factory's reward reports; interrupts the run (as a
    user's Ctrl-C would) once the score reaches ``stop_score``."""

    def __init__(self, path: str, start: float, stop_score: float):
        super().__init__(level=logging.DEBUG)
        self.start, self.stop_score = start, stop_score
        self.frames = 0
        self.reached = False
        self.file = open(path, "w", newline="")
        self.writer = csv.writer(self.file)
        self.writer.writerow(COLUMNS)

    def emit(self, record):
        message = record.getMessage()
        frames = FRAMES.search(message)
        if frames:
            self.frames = int(frames.group(1))
            return
        reward = REWARD.search(message)
        if not reward or self.frames == 0:
            return
        stats = dict(ast.literal_eval(reward.group(1)))  # [(policy, 'mean'), ...]
        if 0 not in stats:
            return
        score = float(stats[0])
        self.writer.writerow((f"{time.perf_counter() - self.start:.1f}",
                              self.frames // FRAME_SKIP, f"{score:.3f}"))
        self.file.flush()
        if score >= self.stop_score and not self.reached:
            self.reached = True
            os.kill(os.getpid(), signal.SIGINT)


def main():
    start = time.perf_counter()
    p = argparse.ArgumentParser()
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True, help="run folder for progress.csv")
    p.add_argument("--stop-score", type=float, default=18.0)
    p.add_argument("--max-seconds", type=float, default=1e10)
    a = p.parse_args()

    import torch
    from sample_factory.envs.env_utils import register_env
    from sample_factory.train import run_rl
    from sample_factory.utils.utils import log
    from sf_appo import make_atari
    from sf_examples.atari.train_atari import parse_atari_args

    torch.set_num_threads(1)
    register_env("atari_pong", make_atari)
    os.makedirs(a.out, exist_ok=True)
    train_dir = tempfile.mkdtemp(prefix="sf_pong_")
    argv = ["--env=atari_pong", "--experiment=pong", f"--train_dir={train_dir}",
            "--device=cpu", f"--seed={a.seed}", f"--train_for_seconds={int(a.max_seconds)}"]
    cfg = parse_atari_args(argv)
    rows = ProgressRows(os.path.join(a.out, "progress.csv"), start, a.stop_score)
    log.setLevel(logging.DEBUG)  # Its reward reports are debug lines.
    log.addHandler(rows)
    with open(os.path.join(a.out, "params.json"), "w") as f:
        json.dump(dict(library="sample-factory==2.1.1", algorithm="APPO", argv=argv,
                       config={k: v for k, v in vars(cfg).items()
                               if isinstance(v, (int, float, str, bool, type(None)))},
                       stop_score=a.stop_score, max_seconds=a.max_seconds), f, indent=1)
    try:
        status = run_rl(cfg)
    except KeyboardInterrupt:
        status = 0
    rows.file.close()
    print("PEER_RESULT " + json.dumps(dict(reached=rows.reached, frames=rows.frames,
                                           seconds=time.perf_counter() - start,
                                           status=int(status))))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
