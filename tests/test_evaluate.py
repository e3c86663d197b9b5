"""``rlpyt evaluate`` on a saved run, and ``rlpyt train --resume`` on the command line."""

from __future__ import annotations

import csv
import os

import pytest

from rlpyt.cli import main
from rlpyt.cli.evaluate import evaluate_run

HORIZON = 15  # CartPole cut at 15 steps: a briefly trained PPO agent reaches it every time


@pytest.fixture(scope="module")
def ppo_run(tmp_path_factory):
    log_dir = tmp_path_factory.mktemp("eval") / "ppo"
    assert main(["train", "--n-steps", "8000", "--log-dir", str(log_dir), "--seed", "2",
                 f"--env.max_episode_steps={HORIZON}", "--runner.log_interval_steps", "4000"]) == 0
    return log_dir / "run_0"


def rows(run_dir):
    with open(run_dir / "progress.csv", newline="") as f:
        return list(csv.DictReader(f))


def test_evaluate_matches_the_runs_last_evaluation(ppo_run, capsys):
    last = rows(ppo_run)[-1]
    assert float(last["ReturnAverage"]) == HORIZON  # the run's own last evaluation
    assert float(rows(ppo_run)[0]["ReturnMin"]) < HORIZON  # untrained: it fell early
    result = evaluate_run(str(ppo_run), episodes=6)
    assert result["mean"] == float(last["ReturnAverage"]) and result["std"] == 0
    assert result["lengths"] == [HORIZON] * 6 and result["seed"] == 2
    assert result["weights"].endswith(os.path.join("checkpoints", "itr_31"))
    # The snapshot file gives the same agent; the CLI prints the summary.
    assert main(["evaluate", str(ppo_run / "params.pkl"), "--episodes", "2"]) == 0
    out = capsys.readouterr().out
    assert f"Return: mean {HORIZON:.2f}  std 0.00" in out and "params.pkl" in out


def test_evaluate_writes_a_playable_video(ppo_run, tmp_path):
    imageio = pytest.importorskip("imageio.v2")
    pytest.importorskip("imageio_ffmpeg", reason="no ffmpeg backend for imageio")
    out = tmp_path / "episode.mp4"
    result = evaluate_run(str(ppo_run), episodes=1, video=str(out))
    assert result["video"] == str(out)
    reader = imageio.get_reader(str(out))
    frames = [frame for frame in reader]  # (list() would ask ffmpeg's infinite length)
    assert len(frames) == HORIZON + 1  # the reset frame and one per step
    assert frames[0].ndim == 3 and frames[0].std() > 0  # a picture, not a blank


def test_evaluate_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such run directory"):
        evaluate_run(str(tmp_path / "nothing"))
    with pytest.raises(ValueError, match="episodes=0"):
        evaluate_run(str(tmp_path), episodes=0)


def test_cli_resume_continues_and_extends_a_finished_run(ppo_run, tmp_path, capsys):
    # A copy, so the fixture's run stays as it is for the other tests.
    import shutil

    copy = tmp_path / "copy" / "run_0"
    shutil.copytree(ppo_run, copy)
    before = rows(copy)
    assert main(["train", "--resume", str(copy), "--n-steps", "8704"]) == 0
    after = rows(copy)
    assert after[:len(before)] == before
    assert [r["Iteration"] for r in after[len(before):]] == ["33"]
    assert "Resuming from" in capsys.readouterr().out
    assert main(["train", "--resume", str(copy), "--algo.epochs", "3"]) == 2
