"""Wall time to a Pong score: Sample Factory's APPO beside our committed PPO runs.

Users compare libraries by how long a game takes to learn, not by frames per second.
Our side is the committed runs of the results page (``docs/results/atari/ppo/
PongNoFrameskip-v4``, made by the page's command); this script runs the peer, Sample
Factory 2.1.1's APPO with its own Atari defaults, in its venv (``bench/peers/``), on the
same id (the DQN Nature pipeline: no sticky actions), and commits its run beside ours as
``docs/results/atari/sample-factory-appo/PongNoFrameskip-v4/run_<seed>``.  The peer
stops at the score of 18, or once it has used ``--cap`` times the wall time our slowest
run needed for 18 (our longest run's whole wall time, where none reached 18), or at its
own budget of 10M frames.  Then it prints both sides' frames and wall time to scores of
0, 10 and 18 and the ratio of wall times (peer / ours: above 1, ours is faster).

    python bench/sample_factory/pong_to_score.py --seed 0            # about 2 hours of both cores
    python bench/sample_factory/pong_to_score.py --report-only       # the table from committed runs
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))  # bench/peers/
sys.path.insert(0, str(ROOT / "docs_tools"))

import peers  # noqa: E402
import time_to_score as tts  # noqa: E402

OURS, PEER = tts.PPO_PONG, tts.SF_APPO_PONG  # the peer's time cap follows OURS
GOAL = tts.MILESTONES[-1]


def runs(results: Path, contender: tts.ScoreRuns) -> list[Path]:
    return sorted(p.parent for p in (results / contender.folder).glob("run_*/progress.csv"))


def peer_cap(results: Path, factor: float) -> float:
    """Seconds the peer may run: ``factor`` times our slowest time to the goal, or our
    longest run where none reached it."""
    times, ends = [], []
    for run in runs(results, OURS):
        rows = tts.read_rows(run)
        reach = tts.first_reach(rows, OURS.column, GOAL, OURS.frames_per_step)
        end = tts.run_end(rows, OURS.column, OURS.frames_per_step)
        if reach is not None:
            times.append(reach.seconds)
        if end is not None:
            ends.append(end.seconds)
    if times:
        return factor * max(times)
    if ends:
        return factor * max(ends)
    raise SystemExit(f"no committed run of ours under {results / OURS.folder}: make one with "
                     "the results page's command first, or give --max-hours")


def report(results: Path) -> None:
    """Each side's frames and wall time to each milestone, and the wall-time ratio."""
    best = {}
    for contender in tts.SCORE_RUNS:
        for run in runs(results, contender):
            rows = tts.read_rows(run)
            cells = []
            for score in tts.MILESTONES:
                reach = tts.first_reach(rows, contender.column, score, contender.frames_per_step)
                cells.append("not reached" if reach is None else
                             f"{reach.frames / 1e6:.2f}M frames {reach.seconds / 60:.0f} min")
                if reach is not None:
                    key = (contender.label, score)
                    best[key] = min(best.get(key, float("inf")), reach.seconds)
            print(f"{contender.label}, {run.name}: " + "; ".join(
                f"{score:g}: {cell}" for score, cell in zip(tts.MILESTONES, cells)))
    for score in tts.MILESTONES:
        peer = best.get((PEER.label, score))
        for contender in tts.SCORE_RUNS:
            ours = best.get((contender.label, score))
            if contender is not PEER and ours and peer:
                print(f"score {score:g}: wall time peer / {contender.label} (fastest run "
                      f"each) = {peer / ours:.2f}x")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--results-dir", type=Path, default=ROOT / "docs" / "results")
    p.add_argument("--cap", type=float, default=1.2,
                   help="the peer's wall time as a multiple of ours to 18 (default 1.2)")
    p.add_argument("--max-hours", type=float, default=None,
                   help="the peer's wall-time cap in hours (default: from --cap)")
    p.add_argument("--stop-score", type=float, default=GOAL)
    p.add_argument("--report-only", action="store_true")
    a = p.parse_args()
    if not a.report_only:
        seconds = (a.max_hours * 3600 if a.max_hours is not None
                   else peer_cap(a.results_dir, a.cap))
        out = a.results_dir / PEER.folder / f"run_{a.seed}"
        print(f"Sample Factory APPO on Pong, seed {a.seed}: up to {seconds / 3600:.2f} h, "
              f"stopping at a score of {a.stop_score:g}; rows in {out}")
        result = peers.run("sample-factory",
                           ["sf_appo_score.py", f"--seed={a.seed}", f"--out={os.fspath(out)}",
                            f"--stop-score={a.stop_score}", f"--max-seconds={seconds}"],
                           timeout=seconds + 900)
        print(f"peer result: {result}")
        if result is None:
            return 1
    report(a.results_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
