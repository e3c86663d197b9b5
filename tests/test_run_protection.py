"""A run directory holding a run is never overwritten; one live run per directory."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import textwrap
import time

import pytest

from rlpyt.cli import main
from rlpyt.utils.logging import logger
from rlpyt.utils.logging.context import logger_context
from rlpyt.utils.logging.run_dir import RunDirExistsError, RunDirLockedError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fingerprint(run_dir):
    out = {}
    for name in sorted(os.listdir(run_dir)):
        path = os.path.join(run_dir, name)
        if os.path.isfile(path) and name != ".lock":
            out[name] = hashlib.sha256(open(path, "rb").read()).hexdigest()
    return out


def write_run(log_dir, rows=2):
    with logger_context(str(log_dir), 0, "r", override_prefix=True,
                        snapshot_mode="last") as run_dir:
        for itr in range(rows):
            logger.record_tabular("Iteration", itr)
            logger.dump_tabular()
            logger.save_itr_params(itr, {"itr": itr})
    return run_dir


def child(code, *args):
    script = textwrap.dedent(code)
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.Popen([sys.executable, "-c", script, *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_finished_run_is_refused_and_unchanged(tmp_path):
    run_dir = write_run(tmp_path)
    before = fingerprint(run_dir)
    with pytest.raises(RunDirExistsError, match=r"run_0 already holds a run.*--resume"):
        write_run(tmp_path)
    assert fingerprint(run_dir) == before
    # The command line says the same in one line and exits 2.
    assert main(["train", "--log-dir", str(tmp_path), "--n-steps", "64", "--run-id", "0"]) == 2
    assert fingerprint(run_dir) == before


def test_cli_without_run_id_starts_a_new_run(tmp_path):
    """A repeated ``rlpyt train`` (``make demo`` run twice) starts the next run id."""
    run_dir = write_run(tmp_path)
    before = fingerprint(run_dir)
    assert main(["train", "--log-dir", str(tmp_path), "--n-steps", "64"]) == 0
    assert fingerprint(run_dir) == before
    assert os.path.isfile(os.path.join(tmp_path, "run_1", "progress.csv"))


KILLED_RUN = """
import os, sys
from rlpyt.utils.logging import logger
from rlpyt.utils.logging.context import logger_context
with logger_context(sys.argv[1], 0, "r", override_prefix=True):
    logger.record_tabular("Iteration", 0)
    logger.dump_tabular()
    print("ready", flush=True)
    if sys.argv[2] == "die":
        os.kill(os.getpid(), 9)
    __import__("time").sleep(60)
"""


def test_killed_run_is_refused_unchanged_and_its_lock_is_free(tmp_path):
    proc = child(KILLED_RUN, str(tmp_path), "die")
    proc.wait(60)
    assert proc.returncode == -9, proc.stderr.read()
    run_dir = str(tmp_path / "run_0")
    before = fingerprint(run_dir)
    with pytest.raises(RunDirExistsError, match="already holds a run"):
        write_run(tmp_path)
    assert fingerprint(run_dir) == before
    # The dead owner's lock does not block a resume.
    with logger_context(str(tmp_path), 0, "r", override_prefix=True, resume=True):
        logger.record_tabular("Iteration", 1)
        logger.dump_tabular()
    with open(os.path.join(run_dir, "progress.csv")) as f:
        assert f.read().split() == ["Iteration", "0", "1"]


def test_second_live_run_is_refused(tmp_path):
    proc = child(KILLED_RUN, str(tmp_path), "live")
    try:
        while proc.stdout.readline().strip() != "ready":  # after the logged table
            assert proc.poll() is None, proc.stderr.read()
        with pytest.raises(RunDirLockedError, match=rf"in use by a live run \(pid {proc.pid}\)"):
            with logger_context(str(tmp_path), 0, "r", override_prefix=True, resume=True):
                pass
    finally:
        proc.kill()
        proc.wait()
    deadline = time.monotonic() + 10
    while True:  # the lock is free as soon as its owner is gone
        try:
            with logger_context(str(tmp_path), 0, "r", override_prefix=True, resume=True):
                break
        except RunDirLockedError:
            assert time.monotonic() < deadline
            time.sleep(0.05)


def test_a_run_that_failed_before_its_first_row_may_be_reused(tmp_path):
    with pytest.raises(RuntimeError):
        with logger_context(str(tmp_path), 0, "r", override_prefix=True):
            raise RuntimeError("set-up failed")
    write_run(tmp_path)  # no result was there to lose


def test_resume_cuts_progress_back_and_purges_later_tensorboard_events(tmp_path):
    accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    with logger_context(str(tmp_path), 0, "r", override_prefix=True, use_summary_writer=True):
        for step in range(3):  # the checkpoint saw 2 rows; the killed run logged a 3rd
            logger.record_tabular("A", step)
            logger.dump_tabular(step=step)
    with logger_context(str(tmp_path), 0, "r", override_prefix=True, use_summary_writer=True,
                        resume=True) as run_dir:
        logger.truncate_tabular_outputs(2)  # what the runner does on resume
        logger.restart_summary_writer(purge_step=2)
        logger.record_tabular("A", 9)
        logger.dump_tabular(step=2)
    with open(os.path.join(run_dir, "progress.csv")) as f:
        assert f.read().split() == ["A", "0", "1", "9"]
    events = accumulator.EventAccumulator(run_dir)
    events.Reload()
    assert [(e.step, e.value) for e in events.Scalars("A")] == [(0, 0.0), (1, 1.0), (2, 9.0)]


@pytest.mark.parametrize("how", ["new", "resume"])
def test_the_cli_refuses_a_live_run_dir_within_a_second(how, tmp_path, capsys):
    """The lock is taken before any component is built (env, model, replay, workers)."""
    proc = child(KILLED_RUN, str(tmp_path), "live")
    try:
        while proc.stdout.readline().strip() != "ready":
            assert proc.poll() is None, proc.stderr.read()
        args = (["--resume", str(tmp_path / "run_0")] if how == "resume"
                else ["--log-dir", str(tmp_path), "--run-id", "0", "--algo", "dqn"])
        start = time.perf_counter()
        code = main(["train", *args])
        elapsed = time.perf_counter() - start
    finally:
        proc.kill()
        proc.wait()
    err = capsys.readouterr().err
    assert code == 1 and f"in use by a live run (pid {proc.pid})" in err, err
    assert elapsed < 1.0, f"refused after {elapsed:.2f} s"
