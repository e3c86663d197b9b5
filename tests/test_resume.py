"""Kill -9 a training run at a random point, resume it, compare with an uninterrupted run.

The runs are ``tests/resume_driver.py`` cases.  Serial runs must continue bit for bit
(same ``progress.csv`` values, time columns aside, and the same final parameters);
the CPU-sampler run's envs live in workers and restart on resume, so there only the
counters and the log rows must continue without gaps or duplicates.
"""

from __future__ import annotations

import csv
import os
import random
import shutil
import signal
import subprocess
import sys
import time

import pytest
import torch

from rlpyt.runners.checkpoint_files import list_checkpoints, load_checkpoint, save_checkpoint

DRIVER = os.path.join(os.path.dirname(__file__), "resume_driver.py")
TIME_COLUMNS = {"CumTime (s)", "StepsPerSecond", "UpdatesPerSecond", "EvalTime (s)",
                "CumEvalTime (s)"}


def _env():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))


def _command(case, run_dir, resume=False):
    return [sys.executable, DRIVER, case, str(run_dir)] + (["--resume"] if resume else [])


def _rows(run_dir):
    with open(os.path.join(run_dir, "run_0", "progress.csv"), newline="") as f:
        return [{k: v for k, v in row.items() if k not in TIME_COLUMNS}
                for row in csv.DictReader(f)]


def _kill_after_a_checkpoint(case, run_dir, rng) -> int:
    """Start the case, SIGKILL it at a random moment after its first checkpoint and
    before its last; returns the number of checkpointed iterations before the kill.
    A kill that lands after the last checkpoint (a loaded machine can run the whole
    rest of the run inside the random delay) leaves nothing to resume: that attempt is
    thrown away and the next kills at once after the first checkpoint."""
    for attempt in range(3):
        shutil.rmtree(run_dir, ignore_errors=True)
        process = subprocess.Popen(_command(case, run_dir), env=_env(),
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        run = os.path.join(run_dir, "run_0")
        deadline = time.monotonic() + 120
        while not list_checkpoints(run):
            assert process.poll() is None, process.stderr.read().decode()[-2000:]
            assert time.monotonic() < deadline, "no checkpoint within 120 s"
            time.sleep(0.02)
        time.sleep(rng.uniform(0, 0.6) if attempt == 0 else 0.0)
        process.send_signal(signal.SIGKILL)
        process.wait()
        process.stderr.close()
        killed_at = list_checkpoints(run)[-1][0]
        if killed_at < load_checkpoint(run)["n_itr"] - 1:
            return killed_at
    raise AssertionError(f"{case}: every kill came after the run's last checkpoint")


def _resume(case, run_dir):
    done = subprocess.run(_command(case, run_dir, resume=True), env=_env(),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.parametrize("case", ["ppo", "dqn_frames", "r2d1", "sac", "sync_dqn"])
def test_kill_9_and_resume_is_bit_exact(case, tmp_path):
    from tests.resume_driver import main

    main(case, str(tmp_path / "ref"), resume=False)  # the uninterrupted run, in-process
    rng = random.Random()
    killed_at = _kill_after_a_checkpoint(case, tmp_path / "killed", rng)
    out = _resume(case, tmp_path / "killed")
    assert f"after iteration {killed_at}" in out
    assert _rows(tmp_path / "killed") == _rows(tmp_path / "ref")
    final = torch.load(tmp_path / "killed" / "run_0" / "final_agent.pt")
    ref = torch.load(tmp_path / "ref" / "run_0" / "final_agent.pt")
    _assert_same(final, ref, f"{case} killed after itr {killed_at}")


def _assert_same(a, b, where):
    if isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for k in a:
            _assert_same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, torch.Tensor):
        assert torch.equal(a, b), where
    else:
        assert a == b, where


def test_cpu_sampler_resume_continues_rows_and_counters(tmp_path):
    from tests.resume_driver import main

    main("ppo_cpu", str(tmp_path / "ref"), resume=False)
    _kill_after_a_checkpoint("ppo_cpu", tmp_path / "killed", random.Random())
    out = _resume("ppo_cpu", tmp_path / "killed")
    assert "envs restart from new seeds" in out
    ref, got = _rows(tmp_path / "ref"), _rows(tmp_path / "killed")
    for key in ("Iteration", "CumSteps", "CumUpdates"):
        assert [r[key] for r in got] == [r[key] for r in ref], key


SLOW_SAVE = """
import sys, time
import torch
from rlpyt.runners.checkpoint_files import save_checkpoint


class SlowReplay:  # a replay buffer whose save takes a while
    def save_state(self, f):
        for _ in range(200):
            f.write(bytes(1 << 16))
            f.flush()
            print("writing", flush=True)
            time.sleep(0.05)


save_checkpoint(sys.argv[1], 3, dict(itr=3, x=torch.arange(3)))
save_checkpoint(sys.argv[1], 7, dict(itr=7), replay_buffer=SlowReplay())
"""


def test_kill_during_checkpoint_write_keeps_previous_loadable(tmp_path):
    run_dir = str(tmp_path)
    process = subprocess.Popen([sys.executable, "-c", SLOW_SAVE, run_dir], env=_env(),
                               stdout=subprocess.PIPE, text=True)
    for _ in range(3):  # well inside the second save
        assert process.stdout.readline().strip() == "writing"
    process.send_signal(signal.SIGKILL)
    process.wait()
    process.stdout.close()
    names = sorted(os.listdir(os.path.join(run_dir, "checkpoints")))
    assert names == ["itr_3", f"itr_7.tmp-{process.pid}"]  # the cut save left its tmp dir
    assert [itr for itr, _ in list_checkpoints(run_dir)] == [3]
    state = load_checkpoint(run_dir)
    assert state["itr"] == 3 and torch.equal(state["x"], torch.arange(3))
    save_checkpoint(run_dir, 8, dict(itr=8))  # the next save clears the leftover
    assert sorted(os.listdir(os.path.join(run_dir, "checkpoints"))) == ["itr_8"]
