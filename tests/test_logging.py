"""rlpyt.utils.logging: logger (text, tabular CSV, TensorBoard, snapshots) and context."""

import collections
import csv
import glob
import json
import math
import os
import re
import warnings

import numpy as np
import pytest
import torch

from rlpyt.utils.logging import logger
from rlpyt.utils.logging.context import add_exp_param, get_log_dir, logger_context


@pytest.fixture(autouse=True)
def clean_logger(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    logger.reset()
    yield
    logger.reset()


def _read_csv(path):
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        return reader.fieldnames, list(reader)


# ---------------------------------------------------------------- text log


def test_log_prints_and_writes_with_prefix_and_timestamp(tmp_path, capsys):
    logger.add_text_output(str(tmp_path / "sub" / "debug.log"))
    with logger.prefix("runA "):
        logger.log("hello")
    logger.log("bare", with_prefix=False, with_timestamp=False)
    out = capsys.readouterr().out.splitlines()
    assert re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+ .* \| runA hello$", out[0])
    assert out[1] == "bare"
    assert (tmp_path / "sub" / "debug.log").read_text().splitlines() == out


def test_tabular_only_mode_silences_log_but_keeps_the_file(tmp_path, capsys):
    logger.add_text_output(str(tmp_path / "debug.log"))
    logger.set_log_tabular_only(True)
    logger.log("quiet")
    logger.record_tabular("Loss", 1.5)
    logger.dump_tabular()
    out = capsys.readouterr().out
    assert "quiet" not in out and "Loss" in out
    assert "quiet" in (tmp_path / "debug.log").read_text()


def test_disable_prefix_and_remove_text_output(tmp_path, capsys):
    path = str(tmp_path / "debug.log")
    logger.add_text_output(path)
    logger.push_prefix("P ")
    logger.set_disable_prefix(True)
    logger.log("x", with_timestamp=False)
    logger.set_disable_prefix(False)
    logger.log("y", with_timestamp=False)
    logger.pop_prefix()
    logger.remove_text_output(path)
    logger.log("z", with_timestamp=False)
    assert open(path).read().splitlines() == ["x", "P y"]
    assert capsys.readouterr().out.splitlines() == ["x", "P y", "z"]


# ---------------------------------------------------------------- tabular


def test_csv_stays_valid_when_keys_appear_mid_run(tmp_path):
    path = str(tmp_path / "progress.csv")
    logger.add_tabular_output(path)
    assert logger.get_tabular_output() == path
    for itr in range(5):
        logger.record_tabular("Iteration", itr)
        logger.record_tabular("Loss", 0.5 * itr)
        if itr >= 2:
            logger.record_tabular("EvalReturn", 10 + itr)  # new key at itr 2
        if itr == 3:
            logger.record_tabular("Rare", "yes")  # another new key, then gone
        logger.dump_tabular()
    fieldnames, rows = _read_csv(path)
    assert fieldnames == ["Iteration", "Loss", "EvalReturn", "Rare"]
    assert [r["Iteration"] for r in rows] == ["0", "1", "2", "3", "4"]
    assert [r["Loss"] for r in rows] == ["0.0", "0.5", "1.0", "1.5", "2.0"]
    assert [r["EvalReturn"] for r in rows] == ["", "", "12", "13", "14"]
    assert [r["Rare"] for r in rows] == ["", "", "", "yes", ""]
    # Every line has exactly as many cells as the header.
    with open(path, newline="") as f:
        assert {len(line) for line in csv.reader(f)} == {4}


def test_tabular_output_append_continues_existing_file(tmp_path):
    path = str(tmp_path / "progress.csv")
    logger.add_tabular_output(path)
    logger.record_tabular("A", 1)
    logger.dump_tabular()
    logger.remove_tabular_output(path)
    assert logger.get_tabular_output() is None
    logger.add_tabular_output(path, append=True)
    logger.record_tabular("A", 2)
    logger.record_tabular("B", 3)
    logger.dump_tabular()
    assert _read_csv(path) == (["A", "B"], [{"A": "1", "B": ""}, {"A": "2", "B": "3"}])
    logger.remove_tabular_output(path)
    logger.add_tabular_output(path)  # not appending: starts afresh
    logger.record_tabular("C", 4)
    logger.dump_tabular()
    assert _read_csv(path) == (["C"], [{"C": "4"}])


def test_tabular_prefix_and_value_conversion(tmp_path, capsys):
    path = str(tmp_path / "progress.csv")
    logger.add_tabular_output(path)
    with logger.tabular_prefix("Eval"):
        logger.record_tabular("Return", np.float32(0.1))
    logger.push_tabular_prefix("Opt")
    logger.record_tabular("Loss", torch.tensor(2.5))
    logger.pop_tabular_prefix()
    logger.record_tabular("Steps", np.array([7]))
    logger.dump_tabular(with_prefix=False, with_timestamp=False)
    _, rows = _read_csv(path)
    assert rows == [{"EvalReturn": "0.1", "OptLoss": "2.5", "Steps": "7"}]
    printed = capsys.readouterr().out
    assert re.search(r"^EvalReturn\s+0\.1$", printed, re.M)
    logger.dump_tabular()  # nothing recorded: no new row
    assert len(_read_csv(path)[1]) == 1


def test_record_tabular_misc_stat_matches_numpy_and_handles_empty():
    values = [3.0, 1.0, 4.0, 1.0, 5.0]
    logger.record_tabular_misc_stat("Return", values)
    logger.record_tabular_misc_stat("Len", torch.tensor([2.0, 4.0]), placement="front")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "mean of empty slice" warnings
        logger.record_tabular_misc_stat("Empty", [])
    row = dict(logger._tabular)
    assert row["ReturnAverage"] == pytest.approx(np.mean(values))
    assert row["ReturnStd"] == pytest.approx(np.std(values))
    assert row["ReturnMedian"] == 3.0 and row["ReturnMin"] == 1.0 and row["ReturnMax"] == 5.0
    assert row["AverageLen"] == 3.0 and row["MaxLen"] == 4.0
    assert all(math.isnan(row[f"Empty{s}"]) for s in ("Average", "Std", "Median", "Min", "Max"))
    with pytest.raises(ValueError, match="placement"):
        logger.record_tabular_misc_stat("X", [1], placement="middle")


# ---------------------------------------------------------------- snapshots


@pytest.mark.parametrize(
    "mode, expected",
    [
        ("all", ["itr_0.pkl", "itr_1.pkl", "itr_2.pkl", "itr_3.pkl", "itr_4.pkl", "itr_5.pkl"]),
        ("last", ["params.pkl"]),
        ("gap", ["itr_0.pkl", "itr_2.pkl", "itr_4.pkl"]),
        ("last+gap", ["itr_0.pkl", "itr_2.pkl", "itr_4.pkl", "params.pkl"]),
        ("none", []),
    ],
)
def test_snapshot_modes_write_the_right_files(tmp_path, mode, expected):
    logger.set_snapshot_dir(str(tmp_path / "snap"))
    logger.set_snapshot_mode(mode)
    logger.set_snapshot_gap(2)
    for itr in range(6):
        logger.save_itr_params(itr, {"itr": itr, "w": torch.full((2,), float(itr))})
    found = sorted(os.listdir(tmp_path / "snap")) if (tmp_path / "snap").exists() else []
    assert found == expected
    for name in found:
        snap = torch.load(tmp_path / "snap" / name)
        itr = 5 if name == "params.pkl" else int(name[4:-4])
        assert snap["itr"] == itr and torch.equal(snap["w"], torch.full((2,), float(itr)))


def test_snapshot_settings_are_checked_and_no_dir_means_no_files(tmp_path):
    with pytest.raises(ValueError, match="snapshot_mode='sometimes'"):
        logger.set_snapshot_mode("sometimes")
    with pytest.raises(ValueError, match="snapshot_gap"):
        logger.set_snapshot_gap(0)
    logger.set_snapshot_mode("all")
    assert logger.save_itr_params(0, {"a": 1}) == []
    assert os.listdir(tmp_path) == []


# ---------------------------------------------------------------- params.json


def test_log_parameters_writes_json_with_reprs(tmp_path):
    Point = collections.namedtuple("Point", ["x", "y"])
    params = {
        "lr": np.float32(0.5),
        "sizes": np.array([1, 2]),
        "point": Point(1, 2),
        "cls": torch.optim.Adam,
        (1, 2): "tuple key",
        "nested": {"t": (1, 2.5, None)},
    }
    path = logger.log_parameters(params, str(tmp_path / "p.json"))
    loaded = json.load(open(path))
    assert loaded["lr"] == 0.5 and loaded["sizes"] == [1, 2]
    assert loaded["point"] == {"x": 1, "y": 2}
    assert loaded["cls"] == repr(torch.optim.Adam)
    assert loaded["(1, 2)"] == "tuple key"
    assert loaded["nested"] == {"t": [1, 2.5, None]}


# ---------------------------------------------------------------- logger_context


def test_logger_context_layout_and_teardown(tmp_path, capsys):
    config = {"algo": {"lr": 1e-3}, "net": object()}
    with logger_context("exp", 3, "ppo", config, snapshot_mode="last") as run_dir:
        assert logger.get_snapshot_dir() == run_dir
        logger.log("inside")
        for itr in range(3):
            logger.record_tabular("Iteration", itr)
            logger.dump_tabular()
            logger.save_itr_params(itr, {"itr": itr})
    rel = os.path.relpath(run_dir, tmp_path)
    assert re.fullmatch(r"data/local/\d{8}/\d{6}/exp/run_3", rel), rel
    assert sorted(os.listdir(run_dir)) == [".lock", "debug.log", "params.json", "params.pkl",
                                           "progress.csv"]  # .lock: see run_dir.py
    params = json.load(open(os.path.join(run_dir, "params.json")))
    assert params["name"] == "ppo" and params["run_ID"] == 3
    assert params["algo"] == {"lr": 1e-3} and params["net"].startswith("<object object")
    assert "name" not in config  # the caller's dict is not modified
    assert "ppo_3 inside" in open(os.path.join(run_dir, "debug.log")).read()
    assert len(_read_csv(os.path.join(run_dir, "progress.csv"))[1]) == 3
    assert torch.load(os.path.join(run_dir, "params.pkl"))["itr"] == 2
    # Torn down: outputs removed, settings restored.
    assert logger.get_snapshot_dir() is None and logger.get_snapshot_mode() == "all"
    assert logger.get_text_outputs() == [] and logger.get_tabular_outputs() == []
    logger.log("after")
    assert "after" not in open(os.path.join(run_dir, "debug.log")).read()
    assert "inside" in capsys.readouterr().out


def test_logger_context_override_prefix_and_absolute_dir(tmp_path):
    with logger_context("mine", "a", "n", override_prefix=True) as run_dir:
        pass
    assert run_dir == str(tmp_path / "mine" / "run_a")
    absolute = str(tmp_path / "abs" / "exp")
    with logger_context(absolute, 0, "n") as run_dir:
        pass
    assert run_dir == os.path.join(absolute, "run_0")
    with logger_context("data/mine", 1, "n") as run_dir:  # already under ./data
        pass
    assert run_dir == str(tmp_path / "data" / "mine" / "run_1")
    launched = get_log_dir("grid")
    assert re.fullmatch(r"data/local/\d{8}/\d{6}/grid", os.path.relpath(launched, tmp_path))
    with logger_context(launched + "/variant1", 2, "n") as run_dir:
        pass
    assert run_dir == os.path.join(launched, "variant1", "run_2")


def test_logger_context_tears_down_on_error(tmp_path):
    with pytest.raises(RuntimeError, match="boom"):
        with logger_context("exp", 0, "n", snapshot_mode="all"):
            raise RuntimeError("boom")
    assert logger.get_snapshot_dir() is None and logger.get_tabular_outputs() == []
    assert logger._prefixes == []
    with pytest.raises(ValueError, match="snapshot_mode"):
        with logger_context("exp", 0, "n", snapshot_mode="bad"):
            pass
    assert logger.get_snapshot_mode() == "all" and logger.get_text_outputs() == []


def test_logger_context_writes_tensorboard_events(tmp_path):
    event_accumulator = pytest.importorskip(
        "tensorboard.backend.event_processing.event_accumulator"
    )
    with logger_context("tb", 0, "n", use_summary_writer=True) as run_dir:
        assert logger.get_tf_summary_writer() is not None
        for itr in range(3):
            logger.record_tabular("Iteration", itr)
            logger.record_tabular("Return", 10.0 * itr)
            logger.record_tabular("Note", "text is skipped")
            logger.dump_tabular()
    assert logger.get_tf_summary_writer() is None
    events = glob.glob(os.path.join(run_dir, "events.out.tfevents.*"))
    assert len(events) == 1
    acc = event_accumulator.EventAccumulator(run_dir)
    acc.Reload()
    assert "Note" not in acc.Tags()["scalars"]
    scalars = acc.Scalars("Return")
    assert [(s.step, s.value) for s in scalars] == [(0, 0.0), (1, 10.0), (2, 20.0)]


def test_add_exp_param(tmp_path):
    for run in ("a", "b"):
        with logger_context("exp", run, "n", {"lr": 1}, override_prefix=True):
            pass
    changed = add_exp_param("tag", "x", exp_dir=str(tmp_path / "exp"))
    assert len(changed) == 2
    assert add_exp_param("tag", "y", exp_dir=str(tmp_path / "exp")) == []
    assert len(add_exp_param("tag", "y", exp_dir=str(tmp_path / "exp"), overwrite=True)) == 2
    params = json.load(open(tmp_path / "exp" / "run_a" / "params.json"))
    assert params == {"lr": 1, "name": "n", "run_ID": "a", "tag": "y"}
    with pytest.raises(FileNotFoundError, match="exp_dir"):
        add_exp_param("tag", 1, exp_dir=str(tmp_path / "missing"))


def test_terminal_rows_line_prints_one_line_and_keeps_the_table_in_text_outputs(tmp_path,
                                                                                 capsys):
    text = tmp_path / "debug.log"
    logger.add_text_output(str(text))
    try:
        logger.set_terminal_rows("line")
        logger.log("Evaluating agent...", routine=True)
        logger.log("a warning")
        for key, val in [("Iteration", 3), ("CumSteps", 1024), ("ReturnAverage", 12.5),
                         ("lossAverage", 0.25)]:
            logger.record_tabular(key, val)
        logger.dump_tabular(with_prefix=False, with_timestamp=False)
        printed = capsys.readouterr().out.splitlines()
        assert printed[-1] == "itr 3 | steps 1024 | return 12.5"
        assert not any("Evaluating" in line for line in printed)
        assert any("a warning" in line for line in printed)
        logged = text.read_text()
        assert "Evaluating agent..." in logged and re.search(r"^lossAverage\s+0\.25$", logged, re.M)
        with pytest.raises(ValueError, match="set_terminal_rows.*'table', 'line'"):
            logger.set_terminal_rows("short")
    finally:
        logger.reset()
