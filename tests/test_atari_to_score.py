"""The Atari time-to-score comparison (``bench/sample_factory/atari_to_score.py``): the
peer's reports become rows of whole-game scores in our columns, the run stops once at
the score, and the peer's wall-time cap follows our runs of the same game.  Fast: no
training, no peer venv."""

from __future__ import annotations

import csv
import importlib.util
import json
import logging
import sys
from collections import deque
from pathlib import Path

import pytest
from helpers import write_score_run

ROOT = Path(__file__).resolve().parents[1]


def load(path: Path):
    """The module at ``path``, imported with its folder (and the folders it adds itself)
    on ``sys.path`` only while it loads: ``bench/``'s folders on the path for good would
    shadow other tests' modules (``bench/sb3/dqn.py`` is not ``bench/minatar/dqn.py``)."""
    saved = list(sys.path)
    sys.path.insert(0, str(path.parent))
    try:
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path[:] = saved


sf_appo_score = load(ROOT / "bench" / "peers" / "sf_appo_score.py")
atari_to_score = load(ROOT / "bench" / "sample_factory" / "atari_to_score.py")
tts = atari_to_score.tts


def record(message: str) -> logging.LogRecord:
    return logging.LogRecord("sf", logging.DEBUG, __file__, 0, message, None, None)


class FakeRunner:
    """What ``latest_game_scores`` reads of Sample Factory's runner: its averaged
    episodic statistics, one deque per policy, keyed by name."""

    def __init__(self):
        self.policy_avg_stats = {"reward": [deque([1.0, -1.0], maxlen=100)]}

    def game_ends(self, *scores: float) -> None:
        games = self.policy_avg_stats.setdefault(sf_appo_score.GAME_SCORE,
                                                 [deque(maxlen=100)])
        games[0].extend(scores)


def test_peer_reports_become_rows_of_game_scores_and_the_goal_interrupts_once(
        tmp_path, monkeypatch):
    kills = []
    monkeypatch.setattr(sf_appo_score.os, "kill", lambda pid, sig: kills.append(sig))
    runner = FakeRunner()
    rows = sf_appo_score.ProgressRows(str(tmp_path / "progress.csv"), start=0.0,
                                      stop_score=100.0, max_seconds=1e10,
                                      game_scores=lambda: sf_appo_score.latest_game_scores(runner))
    frames = "Fps is (10 sec: 1200.0). Total num frames: {}. Throughput: 0: 1.0"
    rows.emit(record(frames.format(40960)))  # Lives were lost, but no game has ended.
    runner.game_ends(10.0, 20.0)
    rows.emit(record("Avg episode reward: [(0, '0.500')]"))  # Per life, clipped: not a score.
    rows.emit(record(frames.format(81920)))
    runner.game_ends(*[150.0] * 100)  # The deque keeps the latest 100 games.
    rows.emit(record(frames.format(122880)))
    rows.emit(record(frames.format(163840)))
    rows.file.close()
    with open(tmp_path / "progress.csv", newline="") as f:
        got = list(csv.DictReader(f))
    assert [(r["CumSteps"], r["GameScoreAverage"]) for r in got] == [
        ("20480", "15.000"), ("30720", "150.000"), ("40960", "150.000")]
    assert rows.reached and kills == [sf_appo_score.signal.SIGINT]


def test_peer_run_is_interrupted_once_at_its_wall_time_cap(tmp_path, monkeypatch):
    """Sample Factory's own time limit never fires, so the rows' handler keeps it."""
    kills = []
    monkeypatch.setattr(sf_appo_score.os, "kill", lambda pid, sig: kills.append(sig))
    clock = iter([10.0, 20.0, 30.0])
    monkeypatch.setattr(sf_appo_score.time, "perf_counter", lambda: next(clock))
    runner = FakeRunner()
    rows = sf_appo_score.ProgressRows(str(tmp_path / "progress.csv"), start=0.0,
                                      stop_score=18.0, max_seconds=15.0,
                                      game_scores=lambda: sf_appo_score.latest_game_scores(runner))
    frames = "Fps is (10 sec: 1200.0). Total num frames: {}. Throughput: 0: 1.0"
    rows.emit(record(frames.format(40960)))  # 10 s: within the cap, no game yet.
    assert kills == [] and not rows.capped
    rows.emit(record(frames.format(81920)))  # 20 s: past it, though no game has ended.
    runner.game_ends(-20.0)
    rows.emit(record(frames.format(122880)))  # 30 s: a row, but no second interrupt.
    rows.file.close()
    assert rows.capped and not rows.reached and kills == [sf_appo_score.signal.SIGINT]
    with open(tmp_path / "progress.csv", newline="") as f:
        assert [r["CumTime (s)"] for r in csv.DictReader(f)] == ["30.0"]


def test_game_scores_of_a_runner_without_ended_games_are_none():
    assert sf_appo_score.latest_game_scores(FakeRunner()) == []


def write_ours(results: Path, seed: int, rows: list[tuple[int, float, float]],
               game=tts.PONG) -> None:
    write_score_run(results / game.ours.folder / f"run_{seed}", rows)


def test_peer_cap_is_a_multiple_of_our_slowest_time_to_the_goal(tmp_path):
    write_ours(tmp_path, 0, [(1_000_000, 2000.0, 10.0), (2_000_000, 4000.0, 18.5)])
    write_ours(tmp_path, 1, [(1_000_000, 2100.0, 18.0), (2_500_000, 5000.0, 20.0)])
    assert atari_to_score.peer_cap(tmp_path, 1.2) == pytest.approx(1.2 * 4000.0)


def test_peer_cap_without_the_goal_is_a_multiple_of_our_longest_run(tmp_path):
    write_ours(tmp_path, 0, [(1_000_000, 2000.0, 5.0), (2_500_000, 5000.0, 15.0)])
    assert atari_to_score.peer_cap(tmp_path, 1.2) == pytest.approx(6000.0)


def test_peer_cap_without_our_runs_says_what_to_run(tmp_path):
    with pytest.raises(SystemExit, match="no committed run of the preset's settings"):
        atari_to_score.peer_cap(tmp_path, 1.2)


def test_peer_cap_follows_our_runs_of_the_same_game(tmp_path):
    write_ours(tmp_path, 0, [(1_000_000, 2000.0, 18.5)])  # Pong's goal, not Breakout's.
    write_ours(tmp_path, 0, [(1_000_000, 3000.0, 60.0), (2_000_000, 6000.0, 101.0)],
               game=tts.BREAKOUT)
    assert atari_to_score.peer_cap(tmp_path, 1.2, tts.BREAKOUT) == pytest.approx(7200.0)
    assert atari_to_score.peer_cap(tmp_path, 1.2, tts.PONG) == pytest.approx(2400.0)


def test_every_game_names_a_peer_run_of_its_own_id():
    for name, game in tts.GAMES.items():
        assert name.lower() in sf_appo_score.GAMES
        assert all(c.task == game.task for c in game.contenders)
        assert game.peer.folder.startswith("atari/sample-factory-appo/")
        assert f"--game {name}" in game.peer.command
        assert game.ours in game.contenders and game.milestones == tuple(sorted(game.milestones))


def test_runs_are_listed_in_the_order_of_their_ids(tmp_path):
    for run_id in (10, 2, 0, 1):
        write_ours(tmp_path, run_id, [(1_000_000, 2000.0, 18.5)])
    assert [p.name for p in tts.PONG.ours.runs(tmp_path)] == ["run_0", "run_1", "run_2",
                                                              "run_10"]


def test_peer_cap_leaves_out_our_runs_of_earlier_settings(tmp_path):
    """A run whose params name settings the preset no longer has does not set the cap."""
    write_ours(tmp_path, 0, [(1_000_000, 2000.0, 18.5)])
    write_ours(tmp_path, 1, [(1_000_000, 9000.0, 18.5)])
    (tmp_path / tts.PONG.ours.folder / "run_1" / "params.json").write_text(json.dumps(
        {"config": {"algo_name": "appo", "env": {"id": "PongNoFrameskip-v4"},
                    "algo": {"epochs": 99}}}))
    assert atari_to_score.peer_cap(tmp_path, 1.2) == pytest.approx(2400.0)
