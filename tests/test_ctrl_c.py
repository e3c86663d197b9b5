"""Ctrl-C writes a checkpoint and prints the resume command; the resume continues
from the next iteration (issue 30)."""

from __future__ import annotations

import csv
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from rlpyt.utils.interrupt import DeferredInterrupt
from rlpyt.utils.logging.run_dir import list_checkpoints

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The child restores Python's SIGINT handler: a test run started as a background job
# starts with SIGINT ignored, and its children inherit that.
CLI = ("import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
       "from rlpyt.cli import main; sys.exit(main(sys.argv[1:]))")
# Checkpoints only at the end (and at Ctrl-C): the one found after Ctrl-C is Ctrl-C's.
ARGS = ["train", "--n-steps", "60000", "--runner.log_interval_steps", "512",
        "--runner.checkpoint_interval_steps", "1000000000", "--sampler.eval_n_envs", "1",
        "--sampler.eval_max_trajectories", "1"]


def _cli(args, cwd, **kwargs):
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("RLPYT_MAX_STEPS", None)
    return subprocess.Popen([sys.executable, "-c", CLI, *args], cwd=cwd, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs)


def _iterations(run_dir):
    with open(os.path.join(run_dir, "progress.csv"), newline="") as f:
        return [int(row["Iteration"]) for row in csv.DictReader(f)]


def test_ctrl_c_writes_a_checkpoint_that_the_printed_resume_continues(tmp_path):
    proc = _cli([*ARGS, "--log-dir", "runs"], tmp_path)
    try:
        rows = 0
        while rows < 2:  # two log rows after the evaluation before training
            line = proc.stdout.readline()
            assert line or proc.poll() is None, proc.stderr.read()
            rows += bool(re.search(r"\| itr \d+ \| steps", line))
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    run_dir = os.path.join("runs", "run_0")
    assert f"Resume with: rlpyt train --resume {run_dir}" in err, err
    checkpoints = list_checkpoints(str(tmp_path / run_dir))
    assert len(checkpoints) == 1, checkpoints
    stopped_at = checkpoints[0][0]
    assert f"latest checkpoint {os.path.join(run_dir, 'checkpoints', f'itr_{stopped_at}')}" in err
    before = _iterations(tmp_path / run_dir)
    assert before[-1] <= stopped_at

    command = err.split("Resume with: ")[1].split()
    assert command[:2] == ["rlpyt", "train"]
    # Train 4 iterations (of 32 x 8 env steps) past the checkpoint.
    resumed = _cli([*command[1:], "--n-steps", str((stopped_at + 5) * 256)], tmp_path)
    out, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err + out
    debug = (tmp_path / run_dir / "debug.log").read_text()
    assert f"(after iteration {stopped_at}," in debug
    after = _iterations(tmp_path / run_dir)
    assert after[:len(before)] == before
    assert after == sorted(set(after)), after  # no iteration logged twice
    # The resumed run starts at the iteration after the checkpoint: its first row is the
    # first log iteration past it, not one the interrupted run already trained.
    assert after[len(before)] > stopped_at


def test_deferred_interrupt_waits_for_the_step_and_a_second_one_stops_at_once():
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with DeferredInterrupt(message="test") as ctrl_c:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)
            assert ctrl_c.requested  # no KeyboardInterrupt yet
            with pytest.raises(KeyboardInterrupt):
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(1)
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, previous)
