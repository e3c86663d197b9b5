"""``rlpyt evaluate`` on a saved run, and ``rlpyt train --resume`` on the command line."""

from __future__ import annotations

import csv
import os
import subprocess
import sys

import numpy as np
import pytest

from rlpyt.cli import main
from rlpyt.cli.evaluate import evaluate_run, pad_to_block

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


def test_cli_video_on_a_headless_machine_prints_no_display_or_codec_noise(ppo_run, tmp_path):
    """A fresh process without XDG_RUNTIME_DIR, DISPLAY or SDL settings, as on a server:
    SDL said "XDG_RUNTIME_DIR is invalid or not set" and imageio warned that it rescaled
    CartPole's 600x400 frames (issue 30)."""
    pytest.importorskip("imageio_ffmpeg", reason="no ffmpeg backend for imageio")
    import imageio.v2 as imageio

    out = tmp_path / "headless.mp4"
    env = {k: v for k, v in os.environ.items()
           if k not in ("XDG_RUNTIME_DIR", "DISPLAY", "WAYLAND_DISPLAY", "SDL_VIDEODRIVER",
                        "SDL_AUDIODRIVER")}
    proc = subprocess.run([sys.executable, "-m", "rlpyt", "evaluate", str(ppo_run),
                           "--episodes", "1", "--video", str(out)],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "XDG_RUNTIME_DIR" not in proc.stdout + proc.stderr
    assert "WARNING" not in proc.stdout + proc.stderr
    assert f"Video written to {out}" in proc.stdout
    frame = imageio.get_reader(str(out)).get_data(0)
    assert frame.shape == (400, 608, 3)  # padded to whole 16-pixel blocks, not rescaled


def test_pad_to_block_repeats_the_edge():
    frame = np.arange(5 * 7 * 3, dtype=np.uint8).reshape(5, 7, 3)
    padded = pad_to_block(frame, block=4)
    assert padded.shape == (8, 8, 3)
    np.testing.assert_array_equal(padded[:5, :7], frame)
    np.testing.assert_array_equal(padded[5:, :7], np.broadcast_to(frame[-1:], (3, 7, 3)))
    np.testing.assert_array_equal(padded[:5, 7], frame[:, -1])
    assert pad_to_block(padded, block=4) is padded


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


def _script_run(tmp_path):
    """A run made by a launch script: no rlpyt train config in its params.json."""
    from rlpyt.agents.pg.categorical import CategoricalPgAgent
    from rlpyt.algos.pg.ppo import PPO
    from rlpyt.envs.gym import make
    from rlpyt.runners.minibatch_rl import MinibatchRl
    from rlpyt.samplers.serial.sampler import SerialSampler
    from rlpyt.utils.logging.context import logger_context

    sampler = SerialSampler(EnvCls=make, env_kwargs=dict(id="CartPole-v1"), batch_T=16,
                            batch_B=2, max_decorrelation_steps=0)
    runner = MinibatchRl(algo=PPO(epochs=1, minibatches=1), sampler=sampler,
                         agent=CategoricalPgAgent(model_kwargs=dict(hidden_sizes=[8])),
                         n_steps=64, seed=0, log_interval_steps=64)
    with logger_context(str(tmp_path), 0, "script", snapshot_mode="last",
                        override_prefix=True, log_params=dict(lr=1e-3)) as run_dir:
        runner.train()
    return run_dir


def test_evaluate_rebuilds_the_agent_of_a_script_run(tmp_path, capsys):
    import torch

    run_dir = _script_run(tmp_path)
    result = evaluate_run(run_dir, episodes=2)
    assert len(result["returns"]) == 2
    # Older snapshots record nothing: the error says what to pass, and passing it works.
    snapshot_path = os.path.join(run_dir, "params.pkl")
    snapshot = torch.load(snapshot_path, weights_only=False)
    del snapshot["rebuild"]
    torch.save(snapshot, snapshot_path)
    assert main(["evaluate", snapshot_path, "--episodes", "1"]) == 2
    message = capsys.readouterr().out
    assert "not made by rlpyt train" in message and "--agent MODULE:CLASS" in message
    assert main(["evaluate", snapshot_path, "--episodes", "1", "--env", "CartPole-v1",
                 "--agent", "rlpyt.agents.pg.categorical:CategoricalPgAgent",
                 "--agent-kwargs", '{"model_kwargs": {"hidden_sizes": [8]}}']) == 0
    assert "Return: mean" in capsys.readouterr().out
