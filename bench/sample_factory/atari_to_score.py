"""Wall time to an Atari score: Sample Factory's APPO beside our committed runs.

Users compare libraries by how long a game takes to learn, not by frames per second.
The games, their milestone scores and the runs compared are
``docs_tools/time_to_score.py``'s ``GAMES`` (Pong: 0, 10, 18; Breakout: 50, 100). Our
side is the committed runs of the results page (``docs/results/atari/<algo>/<id>``, made
by the page's commands; the game's ``ours`` caps the peer); this script runs the peer,
Sample Factory 2.1.1's APPO with its own Atari defaults, in its venv (``bench/peers/``),
on the same id (the DQN Nature pipeline: no sticky actions, a game is all its lives),
and commits its run beside ours as
``docs/results/atari/sample-factory-appo/<id>/run_<seed>``. The peer stops at the game's
last milestone, or once it has used ``--cap`` times the wall time our slowest run needed
for it (our longest run's whole wall time, where none reached it), or at its own budget
of 10M frames. Then it prints both sides' frames and wall time to each milestone and the
ratio of wall times (peer / ours: above 1, ours is faster).

    python bench/sample_factory/atari_to_score.py --game Pong --seed 0     # about 2 hours of both cores
    python bench/sample_factory/atari_to_score.py --game Breakout --report-only
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


def peer_cap(results: Path, factor: float, game: tts.ScoreGame = tts.PONG) -> float:
    """Seconds the peer may run: ``factor`` times our slowest time to the game's last
    milestone, or our longest run where none reached it.  Only runs of the preset as it
    stands count: a run of earlier settings (its table row names them) is not ours now."""
    ours = game.ours
    times, ends = [], []
    for run in ours.runs(results):
        if tts.other_settings(run):
            continue
        rows = tts.read_rows(run)
        reach = tts.first_reach(rows, ours.column, game.goal, ours.frames_per_step)
        end = tts.run_end(rows, ours.column, ours.frames_per_step)
        if reach is not None:
            times.append(reach.seconds)
        if end is not None:
            ends.append(end.seconds)
    if times:
        return factor * max(times)
    if ends:
        return factor * max(ends)
    raise SystemExit(f"no committed run of the preset's settings under {results / ours.folder}: "
                     f"make one with the results page's command ({ours.command}) first, "
                     "or give --max-hours")


def report(results: Path, game: tts.ScoreGame = tts.PONG) -> None:
    """Each side's frames and wall time to each milestone, and the wall-time ratio."""
    best = {}
    for contender in game.contenders:
        for run in contender.runs(results):
            rows = tts.read_rows(run)
            cells = []
            for score in game.milestones:
                reach = tts.first_reach(rows, contender.column, score, contender.frames_per_step)
                cells.append("not reached" if reach is None else
                             f"{reach.frames / 1e6:.2f}M frames {reach.seconds / 60:.0f} min")
                if reach is not None:
                    key = (contender.label, score)
                    best[key] = min(best.get(key, float("inf")), reach.seconds)
            print(f"{contender.label}, {run.name}: " + "; ".join(
                f"{score:g}: {cell}" for score, cell in zip(game.milestones, cells)))
    for score in game.milestones:
        peer = best.get((game.peer.label, score))
        for contender in game.contenders:
            ours = best.get((contender.label, score))
            if contender is not game.peer and ours and peer:
                print(f"score {score:g}: wall time peer / {contender.label} (fastest run "
                      f"each) = {peer / ours:.2f}x")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--game", choices=sorted(tts.GAMES), default="Pong")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--results-dir", type=Path, default=ROOT / "docs" / "results")
    p.add_argument("--cap", type=float, default=1.2,
                   help="the peer's wall time as a multiple of ours to the game's last "
                        "milestone (default 1.2)")
    p.add_argument("--max-hours", type=float, default=None,
                   help="the peer's wall-time cap in hours (default: from --cap)")
    p.add_argument("--stop-score", type=float, default=None,
                   help="the peer's score to stop at (default: the game's last milestone)")
    p.add_argument("--report-only", action="store_true")
    a = p.parse_args()
    game = tts.GAMES[a.game]
    if not a.report_only:
        stop_score = game.goal if a.stop_score is None else a.stop_score
        seconds = (a.max_hours * 3600 if a.max_hours is not None
                   else peer_cap(a.results_dir, a.cap, game))
        out = a.results_dir / game.peer.folder / f"run_{a.seed}"
        print(f"Sample Factory APPO on {game.task}, seed {a.seed}: up to "
              f"{seconds / 3600:.2f} h, stopping at a score of {stop_score:g}; rows in {out}")
        result = peers.run("sample-factory",
                           ["sf_appo_score.py", f"--game={game.name.lower()}",
                            f"--seed={a.seed}", f"--out={os.fspath(out)}",
                            f"--stop-score={stop_score}", f"--max-seconds={seconds}"],
                           timeout=seconds + 900)
        print(f"peer result: {result}")
        if result is None:
            return 1
    report(a.results_dir, game)
    return 0


if __name__ == "__main__":
    sys.exit(main())
