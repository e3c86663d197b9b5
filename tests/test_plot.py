"""``rlpyt plot``: several runs and seeds as mean and spread, any logged column."""

from __future__ import annotations

import csv

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlpyt.cli import main
from rlpyt.cli.plot import aggregate, find_runs, load_curve, resolve_column

PNG = b"\x89PNG\r\n\x1a\n"


def _write_run(path, steps, returns, losses):
    path.mkdir(parents=True)
    with open(path / "progress.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["Iteration", "CumSteps", "ReturnAverage", "LossAverage"])
        for i, (s, r, loss) in enumerate(zip(steps, returns, losses)):
            writer.writerow([i, s, r, loss])


@pytest.fixture
def two_settings(tmp_path):
    steps = [100, 200, 300, 400]
    for seed in range(3):
        _write_run(tmp_path / "ppo" / f"run_{seed}", steps, [seed, 2 + seed, 4, 6 + seed],
                   [1.0, 0.5, 0.2, "nan"])
        _write_run(tmp_path / "a2c" / f"run_{seed}", steps, [0, 1, 2, 3], [2.0, 1.0, 0.5, 0.3])
    return tmp_path


def test_runs_of_a_setting_group_together(two_settings):
    groups = find_runs([str(two_settings / "ppo"), str(two_settings / "a2c")])
    assert sorted(len(runs) for runs in groups.values()) == [3, 3]
    xs, ys, key = load_curve(groups[str(two_settings / "ppo")][0], "LossAverage")
    assert key == "LossAverage" and xs == [100, 200, 300] and ys == [1.0, 0.5, 0.2]  # NaN row out


def _reference(curves, spread):
    """Plain loops: interpolate each run on the union grid, then mean and band per point."""
    grid = sorted({x for xs, _ in curves for x in xs})
    means, lows, highs = [], [], []
    for g in grid:
        values = []
        for xs, ys in curves:
            if xs[0] <= g <= xs[-1]:
                values.append(float(np.interp(g, xs, ys)))
        mean = sum(values) / len(values)
        if spread == "minmax":
            low, high = min(values), max(values)
        else:
            std = (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5
            width = std if spread == "std" else std / len(values) ** 0.5
            low, high = mean - width, mean + width
        means.append(mean)
        lows.append(low)
        highs.append(high)
    return grid, means, lows, highs


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.lists(st.tuples(st.integers(0, 50), st.floats(-100, 100)), min_size=1, max_size=8,
                 unique_by=lambda p: p[0]),
        min_size=1, max_size=4),
    st.sampled_from(["minmax", "std", "sem"]),
)
def test_aggregate_matches_a_plain_loop(runs, spread):
    curves = []
    for points in runs:
        points = sorted(points)
        curves.append(([float(x) for x, _ in points], [y for _, y in points]))
    grid, mean, low, high = aggregate(curves, spread)
    ref = _reference(curves, spread)
    np.testing.assert_allclose(grid, ref[0])
    for got, want in zip((mean, low, high), ref[1:]):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)


def test_aggregate_smooths_each_run():
    grid, mean, _, _ = aggregate([([0, 1, 2, 3], [0.0, 2.0, 4.0, 6.0])], "none", smooth=2)
    np.testing.assert_allclose(mean, [0.0, 1.0, 3.0, 5.0])
    with pytest.raises(ValueError, match="spread='iqr'"):
        aggregate([([0], [1.0])], "iqr")


def test_cli_overlays_settings_with_any_column(two_settings, capsys):
    out = two_settings / "curves.png"
    code = main(["plot", str(two_settings / "ppo"), str(two_settings / "a2c"), "--y",
                 "ReturnAverage", "LossAverage", "--spread", "std", "--smooth", "2",
                 "--labels", "PPO", "A2C", "--title", "test", "--out", str(out)])
    assert code == 0
    assert out.read_bytes()[:8] == PNG
    assert str(out) in capsys.readouterr().out


def test_cli_errors_name_the_problem(two_settings, capsys):
    assert main(["plot", str(two_settings / "ppo"), "--y", "Bogus"]) == 2
    message = capsys.readouterr().out
    assert "'Bogus'" in message and "LossAverage" in message  # lists the valid columns
    assert main(["plot", str(two_settings / "ppo"), "--labels", "a", "b"]) == 2
    assert "2 labels for 1 settings" in capsys.readouterr().out
    assert main(["plot", str(two_settings / "ppo"), "--smooth", "0"]) == 2
    # A missing run is one line of error (rlpyt --debug shows the traceback).
    assert main(["plot", str(two_settings / "nothing_here")]) == 2
    assert "no progress.csv" in capsys.readouterr().err


def test_plot_reads_old_camelcase_columns_and_suggests_the_nearest(two_settings, capsys):
    """Runs logged before columns were all PascalCase have ``lossAverage``: asking for
    ``LossAverage`` (or the old name for a new run) still finds it; a typo gets a hint."""
    run = str(two_settings / "ppo" / "run_0")
    assert resolve_column("lossaverage", ["CumSteps", "LossAverage"], run) == "LossAverage"
    assert resolve_column("LossAverage", ["CumSteps", "lossAverage"], run) == "lossAverage"
    assert main(["plot", str(two_settings / "ppo"), "--y", "LosAverage"]) == 2
    assert "did you mean 'LossAverage'?" in capsys.readouterr().out
