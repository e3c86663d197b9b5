"""``rlpyt.load_runs``: runs as one table, from hand-made run folders."""

from __future__ import annotations

import json
import math

import pytest

import rlpyt
from rlpyt.utils.logging.run_table import RUN_COLUMNS, find_run_dirs, flat_params


def write_run(run_dir, rows, header=("Iteration", "CumSteps", "ReturnAverage"), config=None,
              run_id=None):
    run_dir.mkdir(parents=True)
    lines = [",".join(header)] + [",".join(str(v) for v in row) for row in rows]
    (run_dir / "progress.csv").write_text("\n".join(lines) + "\n")
    if config is not None:
        (run_dir / "params.json").write_text(json.dumps(
            dict(config=config, name="x", run_ID=run_id)))
    return run_dir


def config(lr, seed, n_steps=300):
    return dict(algo_name="ppo", env=dict(id="CartPole-v1"), seed=seed,
                algo=dict(learning_rate=lr, epochs=4),
                agent=dict(model_kwargs=dict(hidden_sizes=[64, 64])),
                runner=dict(n_steps=n_steps))


@pytest.fixture
def grid(tmp_path):
    """Two settings: a finished and an unfinished run, a resumed run that repeats a row,
    a run without params.json, one lacking a column, and one without rows yet."""
    write_run(tmp_path / "lr1/run_0", [(0, 100, 10.0), (1, 200, 20.0), (2, 300, 30.0)],
              config=config(1e-3, 0), run_id=0)
    write_run(tmp_path / "lr1/run_1", [(0, 100, 11.0)], config=config(1e-3, 1), run_id=1)
    write_run(tmp_path / "lr2/run_0", [(0, 100, 5.0), (1, 200, 6.0), (1, 200, 7.0),
                                       (2, 300, 8.0)], config=config(1e-2, 0), run_id=0)
    write_run(tmp_path / "lr2/run_1", [(0, 100), (1, 300)], header=("Iteration", "CumSteps"),
              config=config(1e-2, 1), run_id=1)
    write_run(tmp_path / "bare/run_7", [(0, 100, 1.0)])
    (tmp_path / "empty/run_0").mkdir(parents=True)
    (tmp_path / "empty/run_0/progress.csv").write_text("")
    # A checkpoint folder is not a run, whatever it holds.
    write_run(tmp_path / "lr1/run_0/checkpoints/itr_2", [(0, 1, 1.0)])
    return tmp_path


def test_every_row_of_every_run_with_its_parameters(grid):
    runs = rlpyt.load_runs(grid)
    assert list(runs.columns[:len(RUN_COLUMNS)]) == list(RUN_COLUMNS)
    per_run = runs.groupby("run_dir").size()
    assert per_run.to_dict() == {str(grid / "bare/run_7"): 1, str(grid / "lr1/run_0"): 3,
                                 str(grid / "lr1/run_1"): 1, str(grid / "lr2/run_0"): 3,
                                 str(grid / "lr2/run_1"): 2}
    last = runs.groupby("run_dir").last()
    lr1 = last.loc[str(grid / "lr1/run_0")]
    assert (lr1["algo.learning_rate"], lr1["agent.model_kwargs.hidden_sizes"], lr1["seed"],
            lr1["env.id"]) == (1e-3, (64, 64), 0, "CartPole-v1")
    # Grouping by a parameter works as a researcher would write it.
    finals = last.dropna(subset=["ReturnAverage"]).groupby("algo.learning_rate")[
        "ReturnAverage"].mean()
    assert finals.to_dict() == {1e-3: (30.0 + 11.0) / 2, 1e-2: 8.0}


def test_finished_runs_are_told_from_unfinished_ones(grid):
    last = rlpyt.load_runs(grid).groupby("run_dir").last()
    assert bool(last.loc[str(grid / "lr1/run_0"), "finished"])
    assert not last.loc[str(grid / "lr1/run_1"), "finished"]  # 100 of 300 steps
    assert bool(last.loc[str(grid / "lr2/run_1"), "finished"])
    bare = rlpyt.load_runs(grid / "bare")
    assert bare["finished"].iloc[0] is None and bare["seed"].iloc[0] is None
    assert bare["run_id"].iloc[0] == 7  # from the folder's name


def test_a_resumed_runs_repeated_row_keeps_the_later_one(grid):
    resumed = rlpyt.load_runs(grid / "lr2/run_0")
    assert resumed["CumSteps"].tolist() == [100, 200, 300]
    assert resumed["ReturnAverage"].tolist() == [5.0, 7.0, 8.0]


def test_a_column_one_run_lacks_is_nan_in_its_rows(grid):
    runs = rlpyt.load_runs([grid / "lr2/run_1", grid / "lr1/run_0"])
    missing = runs[runs["run_dir"] == str(grid / "lr2/run_1")]["ReturnAverage"]
    assert len(missing) == 2 and all(math.isnan(v) for v in missing)


def test_globs_folders_and_errors(grid, tmp_path_factory):
    assert find_run_dirs(str(grid / "lr*/run_0")) == [str(grid / "lr1/run_0"),
                                                      str(grid / "lr2/run_0")]
    assert find_run_dirs([grid / "lr1", grid / "lr1/run_0"]) == [str(grid / "lr1/run_0"),
                                                                 str(grid / "lr1/run_1")]
    assert rlpyt.load_runs(grid / "empty").empty  # a run without rows adds none
    nowhere = tmp_path_factory.mktemp("nothing")
    with pytest.raises(FileNotFoundError, match="no progress.csv at or below"):
        rlpyt.load_runs(nowhere)
    assert "algo.learning_rate" not in rlpyt.load_runs(grid / "lr1", params=False)


def test_flat_params_names_nested_keys_with_dots():
    assert flat_params(dict(a=1, b=dict(c=[1, 2], d=dict(e=None)))) == {
        "a": 1, "b.c": (1, 2), "b.d.e": None}


def test_a_line_the_writer_has_not_finished_is_left_out(tmp_path):
    """A run still being written: ``progress.csv`` read between the writer's bytes."""
    run = write_run(tmp_path / "live/run_0", [(0, 100, 1.0), (1, 200, 2.0)])
    with open(run / "progress.csv", "a") as f:
        f.write("2,30")  # "2,300,3.0" cut short: CumSteps would read 30
    table = rlpyt.load_runs(run, params=False)
    assert table["CumSteps"].tolist() == [100, 200]
    (run / "progress.csv").write_text("Iteration,CumSt")  # not even a whole header yet
    assert rlpyt.load_runs(tmp_path / "live", params=False).empty
