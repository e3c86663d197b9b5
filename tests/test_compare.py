"""``rlpyt compare`` and its statistics (``rlpyt.experiments.group_stats``), each against a
plain-loop reference; bench/rliable/rliable_check.py compares them with rliable itself."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlpyt.cli import main
from rlpyt.experiments.group_stats import (
    GroupScores,
    bootstrap_indices,
    compare,
    iqm,
    probability_of_improvement,
    resample,
    score_distribution,
)

scores_lists = st.lists(st.integers(-5, 5).map(float), min_size=1, max_size=9)


def reference_iqm(values):
    ordered = sorted(values)
    cut = int(0.25 * len(ordered))  # scipy's trim_mean cuts int(0.25 n) from each end
    kept = ordered[cut:len(ordered) - cut]
    return sum(kept) / len(kept)


def reference_improvement(x, y):
    pairs = [(a > b) + 0.5 * (a == b) for a in x for b in y]
    return sum(pairs) / len(pairs)


@settings(max_examples=60, deadline=None)
@given(x=scores_lists, y=scores_lists)
def test_iqm_and_probability_of_improvement_match_plain_loops(x, y):
    assert iqm(np.array(x)) == pytest.approx(reference_iqm(x))
    p = probability_of_improvement(np.array(x)[:, None], np.array(y)[:, None])
    assert p == pytest.approx(reference_improvement(x, y))
    q = probability_of_improvement(np.array(y)[:, None], np.array(x)[:, None])
    assert p + q == pytest.approx(1.0)


def test_probability_of_improvement_averages_over_tasks():
    x = np.array([[1.0, 0.0], [3.0, 0.0]])
    y = np.array([[2.0, 1.0], [2.0, 1.0], [2.0, 1.0]])
    assert probability_of_improvement(x, y) == pytest.approx((0.5 + 0.0) / 2)


def test_resampling_draws_runs_within_each_task():
    scores = np.array([[1.0, 10.0], [2.0, 20.0], [3.0, 30.0]])
    index = bootstrap_indices(np.random.default_rng(0), 3, 2, reps=4)
    got = resample(scores, index)
    for r, run, task in itertools.product(range(4), range(3), range(2)):
        assert got[r, run, task] == scores[index[r, run, task], task]


def test_two_runs_give_the_exact_bootstrap_interval_of_their_mean():
    """With runs a < b the resampled mean is a, (a+b)/2 or b with probability 1/4, 1/2,
    1/4: the 2.5 and 97.5 percentiles are a and b."""
    result = compare([GroupScores("g", np.array([1.0, 3.0]), [])], reps=4000, seed=1)
    assert result.estimates["g"]["mean"] == (2.0, 1.0, 3.0)
    assert result.estimates["g"]["iqm"][0] == 2.0  # 2 runs: nothing is cut


def test_compare_points_are_the_plain_statistics_and_intervals_hold_them():
    rng = np.random.default_rng(3)
    a, b = rng.normal(0, 1, 8), rng.normal(1, 1, 6)
    result = compare([GroupScores("a", a, []), GroupScores("b", b, [])], reps=5000)
    for name, values in (("a", a), ("b", b)):
        mean, lo, hi = result.estimates[name]["mean"]
        assert mean == pytest.approx(values.mean()) and lo <= mean <= hi
        # The bootstrap's spread of a mean is about its standard error.
        assert hi - lo == pytest.approx(2 * 1.96 * values.std() / np.sqrt(len(values)),
                                        rel=0.3)
        assert result.estimates[name]["iqm"][0] == pytest.approx(reference_iqm(values))
    p, lo, hi = result.improvement[("b", "a")]
    assert p == pytest.approx(reference_improvement(b, a)) and lo <= p <= hi
    assert result.improvement[("a", "b")][0] == pytest.approx(1 - p)
    again = compare([GroupScores("a", a, []), GroupScores("b", b, [])], reps=5000)
    assert again.estimates == result.estimates  # the seed fixes the samples


def test_a_comparison_across_tasks_is_refused():
    with pytest.raises(ValueError, match="several tasks .*Acrobot-v1, CartPole-v1"):
        compare([GroupScores("a", np.ones(2), [], env_ids={"CartPole-v1"}),
                 GroupScores("b", np.ones(2), [], env_ids={"Acrobot-v1"})])


def test_score_distribution_is_the_fraction_above_each_threshold():
    taus = np.array([0.0, 1.5, 5.0])
    assert score_distribution(np.array([1.0, 2.0, 3.0, 4.0]), taus).tolist() == [1, 0.75, 0]


def _run(folder, steps_and_returns, env="CartPole-v1", seed=0):
    folder.mkdir(parents=True)
    rows = ["CumSteps,ReturnAverage"] + [f"{s},{r}" for s, r in steps_and_returns]
    (folder / "progress.csv").write_text("\n".join(rows) + "\n")
    (folder / "params.json").write_text(json.dumps(dict(config=dict(
        env=dict(id=env), seed=seed, runner=dict(n_steps=steps_and_returns[-1][0])))))


def test_rlpyt_compare_prints_the_table_and_draws_the_profiles(tmp_path, capsys):
    for seed, final in enumerate([100.0, 120.0, 90.0]):
        _run(tmp_path / "low" / f"run_{seed}", [(1000, 10.0), (2000, final)], seed=seed)
    for seed, final in enumerate([300.0, 280.0, 320.0]):
        _run(tmp_path / "high" / f"run_{seed}", [(1000, 20.0), (2000, final)], seed=seed)
    _run(tmp_path / "high" / "run_3", [(1000, 5.0)], seed=3)  # short of the budget
    out = tmp_path / "profiles.png"
    code = main(["compare", str(tmp_path / "low"), str(tmp_path / "high"), "--at", "2000",
                 "--reps", "2000", "--out", str(out)])
    text = capsys.readouterr().out
    assert code == 0, text
    assert "ReturnAverage at 2000 env steps" in text
    assert "low                         3  103.3 [" in text
    assert f"left out, short of the budget: {tmp_path / 'high' / 'run_3'}" in text
    assert "P(high > low) = 1.00" in text and "P(low > high) = 0.00" in text
    assert out.stat().st_size > 10_000


@pytest.mark.parametrize("argv, message", [
    (["--column", "ReturnAvg"], "column 'ReturnAvg' is in no run of a; did you mean "
                                "ReturnAverage"),
    (["--labels", "x"], "1 labels for 2 groups"),
    (["--reps", "10"], "--reps must be >= 100"),
])
def test_rlpyt_compare_errors_are_one_line(tmp_path, capsys, argv, message):
    _run(tmp_path / "a" / "run_0", [(1000, 1.0)])
    _run(tmp_path / "b" / "run_0", [(1000, 2.0)])
    code = main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--out", "none", *argv])
    out = capsys.readouterr().out
    assert code == 2 and message in out and len(out.strip().splitlines()) == 1, out
