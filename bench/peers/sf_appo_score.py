"""Peer: Sample Factory's APPO learning an Atari game with its Atari defaults, logged as a run.

Run in the Sample Factory venv (``bench/peers/``), by
``bench/sample_factory/atari_to_score.py``.  The settings are Sample Factory's own for
Atari (``sf_examples.atari``: ``<Game>NoFrameskip-v4`` with its wrappers, and
``atari_override_defaults``: 8 workers, rollouts of 128, 4 epochs of 4 minibatches of
256, Adam 2.5e-4 decayed linearly, 10M frames), on the CPU; only the game, the seed,
the wall-time cap and the place of its files are set here.

Every report of its learner (about every 5 s) becomes a row of ``<out>/progress.csv`` in
rlpyt's columns: ``CumTime (s)`` (from this script's start, so Sample Factory's start-up
counts, as rlpyt's does), ``CumSteps`` (agent steps: its frame count over the frame skip
of 4) and ``GameScoreAverage``: the mean whole-game score of the latest 100 games.  Its
training episodes end at each lost life and its rewards are clipped, so its logged
"episode reward" is not a game's score (on Breakout, a fifth of a game with each brick
worth 1); its Atari env wraps the raw game in Gymnasium's ``RecordEpisodeStatistics``
below those wrappers, and its runner keeps the latest 100 of those whole-game scores
(``RecordEpisodeStatistics_reward``), which are what is logged here.  The run stops at
``--stop-score``, at ``--max-seconds``, or at its 10M frames, whichever comes first.

    python sf_appo_score.py --game breakout --seed 0 --out DIR --stop-score 100 --max-seconds 6000
"""

from __future__ import annotations

import argparse
import csv
import json
import logging
import os
import re
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Sequence

FRAME_SKIP = 4
FRAMES = re.compile(r"Total num frames: (\d+)")
COLUMNS = ("CumTime (s)", "CumSteps", "GameScoreAverage")
GAME_SCORE = "RecordEpisodeStatistics_reward"  # the runner's key of whole-game scores
GAMES = ("pong", "breakout")


def latest_game_scores(runner) -> list[float]:
    """Policy 0's whole-game scores of the latest ``stats_avg`` (100) games."""
    per_policy = runner.policy_avg_stats.get(GAME_SCORE)
    return [] if per_policy is None else [float(v) for v in per_policy[0]]


class ProgressRows(logging.Handler):
    """Writes a row at each of Sample Factory's frame reports once a game has ended;
    interrupts the run (as a user's Ctrl-C would) once the score reaches
    ``stop_score`` or the run has used ``max_seconds``.  ``game_scores()`` gives the
    latest games' scores.

    The wall-time cap is enforced here because Sample Factory 2.1.1's own
    ``--train_for_seconds`` never fires: its runner compares the limit with a
    ``total_train_seconds`` that nothing advances past 0."""

    def __init__(self, path: str, start: float, stop_score: float, max_seconds: float,
                 game_scores: Callable[[], Sequence[float]]):
        super().__init__(level=logging.DEBUG)
        self.start, self.stop_score, self.game_scores = start, stop_score, game_scores
        self.max_seconds = max_seconds
        self.frames = 0
        self.reached = False
        self.capped = False
        self.file = open(path, "w", newline="")
        self.writer = csv.writer(self.file)
        self.writer.writerow(COLUMNS)

    def emit(self, record):
        frames = FRAMES.search(record.getMessage())
        if not frames:
            return
        self.frames = int(frames.group(1))
        seconds = time.perf_counter() - self.start
        scores = self.game_scores()
        if self.frames > 0 and scores:
            score = sum(scores) / len(scores)
            self.writer.writerow((f"{seconds:.1f}", self.frames // FRAME_SKIP, f"{score:.3f}"))
            self.file.flush()
            if score >= self.stop_score and not self.reached:
                self.reached = True
                self.interrupt()
        if seconds >= self.max_seconds and not self.capped:
            self.capped = True
            self.interrupt()

    @staticmethod
    def interrupt() -> None:
        """Stop the run as a user's Ctrl-C would (Sample Factory saves and exits)."""
        os.kill(os.getpid(), signal.SIGINT)


def main():
    start = time.perf_counter()
    p = argparse.ArgumentParser()
    p.add_argument("--game", choices=GAMES, default="pong")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True, help="run folder for progress.csv")
    p.add_argument("--stop-score", type=float, default=18.0)
    p.add_argument("--max-seconds", type=float, default=1e10)
    a = p.parse_args()

    import torch
    from sample_factory.algo.utils.misc import ExperimentStatus
    from sample_factory.envs.env_utils import register_env
    from sample_factory.train import make_runner
    from sample_factory.utils.utils import log
    from sf_appo import make_atari
    from sf_examples.atari.train_atari import parse_atari_args

    torch.set_num_threads(1)
    env = f"atari_{a.game}"
    register_env(env, make_atari)
    os.makedirs(a.out, exist_ok=True)
    train_dir = tempfile.mkdtemp(prefix=f"sf_{a.game}_")
    argv = [f"--env={env}", f"--experiment={a.game}", f"--train_dir={train_dir}",
            "--device=cpu", f"--seed={a.seed}", f"--train_for_seconds={int(a.max_seconds)}"]
    cfg, runner = make_runner(parse_atari_args(argv))
    rows = ProgressRows(os.path.join(a.out, "progress.csv"), start, a.stop_score,
                        a.max_seconds, lambda: latest_game_scores(runner))
    log.setLevel(logging.DEBUG)  # Its reward reports are debug lines.
    log.addHandler(rows)
    with open(os.path.join(a.out, "params.json"), "w") as f:
        json.dump(dict(library="sample-factory==2.1.1", algorithm="APPO", argv=argv,
                       config={k: v for k, v in vars(cfg).items()
                               if isinstance(v, (int, float, str, bool, type(None)))},
                       stop_score=a.stop_score, max_seconds=a.max_seconds), f, indent=1)
    try:  # What Sample Factory's run_rl does, with the runner kept for its statistics.
        status = runner.init()
        if status == ExperimentStatus.SUCCESS:
            status = runner.run()
    except KeyboardInterrupt:
        status = 0
    rows.file.close()
    print("PEER_RESULT " + json.dumps(dict(reached=rows.reached, capped=rows.capped,
                                           frames=rows.frames,
                                           seconds=time.perf_counter() - start,
                                           status=int(status))))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
