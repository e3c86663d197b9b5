"""Storage faults: a run file that cannot be written, a checkpoint that cannot be read.

A write that fails (no space, a read-only folder, a quota) raises ``StorageWriteError``
naming the file and the system's reason, removes what it half wrote and leaves the
earlier complete files as they were; ``rlpyt train`` then ends with exit 1 and that one
line.  A ``state.pt`` that cannot be loaded (truncated, or garbage) raises
``CheckpointUnreadableError`` naming the file; a resume from a run directory falls back
to the previous complete checkpoint when ``checkpoint_keep`` kept one, saying so.
"""

from __future__ import annotations

import csv
import errno
import os
import shutil
import subprocess
import sys
import uuid

import pytest
import torch

from rlpyt.runners import checkpoint_files as ckpt
from rlpyt.runners.checkpointer import Checkpointer, load_newest_readable
from rlpyt.utils.logging import csv_output, logger
from rlpyt.utils.logging.csv_output import CsvOutput
from rlpyt.utils.logging.run_dir import CheckpointUnreadableError, StorageWriteError

FAULTS = {errno.ENOSPC: "No space left on device", errno.EROFS: "Read-only file system",
          errno.EDQUOT: "Disk quota exceeded"}


class FailingFile:
    """A binary file that takes ``budget`` bytes, then fails every write with ``code``."""

    def __init__(self, f, budget: int, code: int):
        self._f, self._left, self._code = f, budget, code

    def write(self, data) -> int:
        if len(data) > self._left:
            self._f.write(bytes(data[:self._left]))
            self._left = 0
            raise OSError(self._code, os.strerror(self._code))
        self._left -= len(data)
        return self._f.write(data)

    def __getattr__(self, name):
        return getattr(self._f, name)


def _fail_checkpoint_writes(monkeypatch, code: int, budget: int = 100) -> None:
    real = ckpt._RecordingWriter.__init__
    monkeypatch.setattr(ckpt._RecordingWriter, "__init__",
                        lambda self, f: real(self, FailingFile(f, budget, code)))


def _state(itr: int) -> dict:
    return dict(itr=itr, weights=torch.arange(10_000.0))


@pytest.mark.parametrize("code", list(FAULTS))
def test_a_failed_checkpoint_is_removed_and_named_and_the_last_one_kept(code, tmp_path,
                                                                         monkeypatch):
    first = ckpt.save_checkpoint(str(tmp_path), 3, _state(3))
    _fail_checkpoint_writes(monkeypatch, code)
    with pytest.raises(StorageWriteError) as raised:
        ckpt.save_checkpoint(str(tmp_path), 7, _state(7))
    message = str(raised.value)
    assert message == (f"could not write checkpoint {tmp_path}/checkpoints/itr_7: "
                       f"{FAULTS[code]}; the last complete checkpoint is {first}")
    assert raised.value.errno == code
    assert sorted(os.listdir(tmp_path / "checkpoints")) == ["itr_3"]  # no itr_7.tmp-<pid>
    assert ckpt.load_checkpoint(str(tmp_path))["itr"] == 3


def test_a_failed_first_checkpoint_says_there_is_none_before(tmp_path, monkeypatch):
    _fail_checkpoint_writes(monkeypatch, errno.ENOSPC, budget=0)
    with pytest.raises(StorageWriteError, match="no complete checkpoint was written before"):
        ckpt.save_checkpoint(str(tmp_path), 0, _state(0))
    assert os.listdir(tmp_path / "checkpoints") == []


def test_a_folder_that_cannot_be_made_is_named(tmp_path, monkeypatch):
    def read_only(path, *args, **kwargs):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), path)

    monkeypatch.setattr(ckpt.os, "makedirs", read_only)
    with pytest.raises(StorageWriteError, match="itr_0: Read-only file system"):
        ckpt.save_checkpoint(str(tmp_path), 0, _state(0))


class HalfRowWriter:
    """A ``csv.DictWriter`` whose row is cut off by a full disk half way."""

    def __init__(self, f, fieldnames, restval=""):
        self._f = f

    def writerow(self, row) -> None:
        self._f.write("0.5,1")
        self._f.flush()
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_a_log_row_that_cannot_be_written_leaves_the_file_as_it_was(tmp_path, monkeypatch):
    path = tmp_path / "progress.csv"
    output = CsvOutput(str(path))
    output.write_row({"Iteration": 0, "Return": 1.5})
    before = path.read_bytes()
    monkeypatch.setattr(csv_output.csv, "DictWriter", HalfRowWriter)
    with pytest.raises(StorageWriteError) as raised:
        output.write_row({"Iteration": 1, "Return": 2.5})
    assert str(raised.value) == f"could not write the log row of {path}: No space left on device"
    assert path.read_bytes() == before  # No half row to break the next reader.


def test_a_log_line_that_cannot_be_written_is_named_once(tmp_path, monkeypatch):
    class FullFile:
        def write(self, line):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        def close(self):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    name = str(tmp_path / "debug.log")
    monkeypatch.setitem(logger._text_outputs, name, FullFile())
    with pytest.raises(StorageWriteError, match=f"the log {name}: No space left on device"):
        logger.log("a line")
    logger.log("the line a stopping run writes next")  # The full file is not tried again.
    assert name not in logger._text_outputs


@pytest.mark.parametrize("content", [b"", b"not a checkpoint at all", "truncated"])
def test_an_unreadable_checkpoint_is_named(content, tmp_path):
    path = ckpt.save_checkpoint(str(tmp_path), 5, _state(5))
    state_file = os.path.join(path, "state.pt")
    if content == "truncated":
        with open(state_file, "rb") as f:
            content = f.read()[:200]
    with open(state_file, "wb") as f:
        f.write(content)
    with pytest.raises(CheckpointUnreadableError) as raised:
        ckpt.load_checkpoint(str(tmp_path))
    assert str(raised.value).startswith(f"checkpoint {state_file} is unreadable (")
    assert str(raised.value).endswith("it is truncated or not a checkpoint")


def _spoil(checkpoint: str) -> str:
    state_file = os.path.join(checkpoint, "state.pt")
    with open(state_file, "wb") as f:
        f.write(b"garbage")
    return state_file


def test_a_resume_falls_back_past_unreadable_checkpoints_saying_so(tmp_path, capsys):
    run_dir = str(tmp_path)
    paths = [ckpt.save_checkpoint(run_dir, itr, _state(itr), keep=3) for itr in (3, 7, 11)]
    assert [p for _, p in ckpt.list_checkpoints(run_dir)] == paths
    newest = _spoil(paths[2])
    assert load_newest_readable(run_dir)["itr"] == 7
    out = capsys.readouterr().out
    assert (f"Resume: checkpoint {newest} is unreadable (" in out
            and f"falling back to the previous complete checkpoint, {paths[1]}." in out), out
    _spoil(paths[1])
    assert load_newest_readable(run_dir)["itr"] == 3
    _spoil(paths[0])
    with pytest.raises(CheckpointUnreadableError,
                       match=r"itr_3/state\.pt is unreadable .*; and so is every earlier"):
        load_newest_readable(run_dir)
    # A checkpoint named by its own directory is that one or nothing.
    with pytest.raises(CheckpointUnreadableError, match=r"itr_11/state\.pt is unreadable"):
        load_newest_readable(paths[2])


def test_without_an_earlier_checkpoint_the_error_says_none_is_kept(tmp_path):
    ckpt.save_checkpoint(str(tmp_path), 1, _state(1))
    ckpt.save_checkpoint(str(tmp_path), 2, _state(2))  # keep=1: itr_1 is deleted
    _spoil(ckpt.latest_checkpoint(str(tmp_path)))
    with pytest.raises(CheckpointUnreadableError,
                       match=r"no earlier checkpoint is kept \(a run with checkpoint_keep=2"):
        load_newest_readable(str(tmp_path))


def test_checkpoint_keep_must_be_a_positive_integer():
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match=rf"checkpoint_keep={bad!r} must be an integer"):
            Checkpointer(100, keep=bad)


def _rlpyt(*args, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rlpyt", *args], capture_output=True,
                          text=True, timeout=300, cwd=cwd)


def _train_args(run_dir) -> list[str]:
    return ["train", "--log-dir", str(run_dir), "--run-id", "0", "--n-steps", "2048",
            "--runner.log_interval_steps", "1024"]


def test_rlpyt_train_resume_names_an_unreadable_checkpoint(tmp_path):
    done = _rlpyt(*_train_args(tmp_path / "runs"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    run_dir = tmp_path / "runs" / "run_0"
    (state_file,) = run_dir.glob("checkpoints/itr_*/state.pt")
    state_file.write_bytes(b"garbage")
    resumed = _rlpyt("train", "--resume", str(run_dir), "--n-steps", "4096", cwd=tmp_path)
    assert resumed.returncode == 1, resumed.stderr
    (line,) = resumed.stderr.strip().splitlines()
    assert f"checkpoint {state_file} is unreadable" in line, line


def test_rlpyt_train_resume_falls_back_to_the_previous_kept_checkpoint(tmp_path):
    """With --runner.checkpoint_keep 2 an unreadable newest checkpoint is passed over:
    the run goes on from the one before, its progress.csv cut back to that checkpoint's
    rows and continued without a gap or a repeat."""
    done = _rlpyt(*_train_args(tmp_path / "runs"), "--runner.checkpoint_keep", "2",
                  cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    run_dir = tmp_path / "runs" / "run_0"
    kept = ckpt.list_checkpoints(str(run_dir))
    assert len(kept) == 2
    newest = _spoil(kept[-1][1])
    resumed = _rlpyt("train", "--resume", str(run_dir), "--n-steps", "4096", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert (f"checkpoint {newest} is unreadable" in resumed.stdout
            and f"falling back to the previous complete checkpoint, {kept[0][1]}"
            in resumed.stdout), resumed.stdout
    with open(run_dir / "progress.csv", newline="") as f:
        steps = [int(row["CumSteps"]) for row in csv.DictReader(f)]
    assert steps == sorted(set(steps)) and steps[-1] == 4096, steps


@pytest.fixture
def full_disk(tmp_path):
    """A 200 KB tmpfs: room for a run's logs, none for its first checkpoint."""
    mount = tmp_path / f"full-{uuid.uuid4().hex[:6]}"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=200k", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({made.stderr.strip() or made.returncode}); "
                    f"the monkeypatched faults above still run")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], capture_output=True)
    shutil.rmtree(mount, ignore_errors=True)


def test_rlpyt_train_on_a_full_disk_exits_1_naming_the_checkpoint(full_disk):
    done = _rlpyt(*_train_args(full_disk / "runs"), cwd=full_disk.parent)
    assert done.returncode == 1, done.stderr
    (line,) = done.stderr.strip().splitlines()
    checkpoints = full_disk / "runs" / "run_0" / "checkpoints"
    assert line.startswith(f"rlpyt train: error: could not write checkpoint {checkpoints}/itr_"), line
    assert "No space left on device" in line, line
    assert os.listdir(checkpoints) == []  # The partial checkpoint is gone.


def test_a_failed_rank_part_is_removed_and_named(tmp_path, monkeypatch):
    _fail_checkpoint_writes(monkeypatch, errno.EDQUOT)
    with pytest.raises(StorageWriteError, match=r"this rank's part of checkpoint .*itr_2\.part"
                                                r"\.tmp-\d+: Disk quota exceeded"):
        ckpt.write_part(str(tmp_path), 2, _state(2))
    assert os.listdir(tmp_path / "checkpoints") == []
