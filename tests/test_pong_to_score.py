"""The Pong time-to-score comparison (``bench/sample_factory/pong_to_score.py``): the
peer's log lines become rows in our columns, the run stops once at the score, and the
peer's wall-time cap follows our runs.  Fast: no training, no peer venv."""

from __future__ import annotations

import csv
import importlib.util
import logging
import sys
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
pong_to_score = load(ROOT / "bench" / "sample_factory" / "pong_to_score.py")


def record(message: str) -> logging.LogRecord:
    return logging.LogRecord("sf", logging.DEBUG, __file__, 0, message, None, None)


def test_peer_reports_become_rows_and_the_goal_interrupts_once(tmp_path, monkeypatch):
    kills = []
    monkeypatch.setattr(sf_appo_score.os, "kill", lambda pid, sig: kills.append(sig))
    rows = sf_appo_score.ProgressRows(str(tmp_path / "progress.csv"), start=0.0,
                                      stop_score=18.0)
    rows.emit(record("Avg episode reward: [(0, '-21.000')]"))  # Before any frame count.
    rows.emit(record("Fps is (10 sec: 1200.0). Total num frames: 40960. Throughput: 0: 1.0"))
    rows.emit(record("Avg episode reward: [(0, '-20.500')]"))
    rows.emit(record("Fps is (10 sec: 1200.0). Total num frames: 81920. Throughput: 0: 1.0"))
    rows.emit(record("Avg episode reward: [(0, '18.250')]"))
    rows.emit(record("Avg episode reward: [(0, '19.000')]"))
    rows.file.close()
    with open(tmp_path / "progress.csv", newline="") as f:
        got = list(csv.DictReader(f))
    assert [(r["CumSteps"], r["GameScoreAverage"]) for r in got] == [
        ("10240", "-20.500"), ("20480", "18.250"), ("20480", "19.000")]
    assert rows.reached and kills == [sf_appo_score.signal.SIGINT]


def write_ours(results: Path, seed: int, rows: list[tuple[int, float, float]]) -> None:
    write_score_run(results / pong_to_score.OURS.folder / f"run_{seed}", rows)


def test_peer_cap_is_a_multiple_of_our_slowest_time_to_the_goal(tmp_path):
    write_ours(tmp_path, 0, [(1_000_000, 2000.0, 10.0), (2_000_000, 4000.0, 18.5)])
    write_ours(tmp_path, 1, [(1_000_000, 2100.0, 18.0), (2_500_000, 5000.0, 20.0)])
    assert pong_to_score.peer_cap(tmp_path, 1.2) == pytest.approx(1.2 * 4000.0)


def test_peer_cap_without_the_goal_is_a_multiple_of_our_longest_run(tmp_path):
    write_ours(tmp_path, 0, [(1_000_000, 2000.0, 5.0), (2_500_000, 5000.0, 15.0)])
    assert pong_to_score.peer_cap(tmp_path, 1.2) == pytest.approx(6000.0)


def test_peer_cap_without_our_runs_says_what_to_run(tmp_path):
    with pytest.raises(SystemExit, match="no committed run of ours"):
        pong_to_score.peer_cap(tmp_path, 1.2)
