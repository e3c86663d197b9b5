"""The end-of-run rule of the learning tests (``helpers.EndOfRun``)."""

import pytest
from helpers import EndOfRun


def history(*returns):
    return [(1000 * (i + 1), float(r)) for i, r in enumerate(returns)]


def test_run_ends_two_evaluations_after_the_first_crossing():
    rule = EndOfRun(475)
    assert not rule.should_stop(history(100, 300, 480))
    assert not rule.should_stop(history(100, 480, 200))
    assert rule.should_stop(history(100, 480, 200, 500))
    assert not rule.should_stop(history(100, 300, 470, 474))


@pytest.mark.parametrize("returns, passed", [
    ((100, 480, 500, 450), True),      # held: mean 475 of the last two
    ((100, 480, 500, 300), False),     # solved, then collapsed: mean 400 < 427.5
    ((100, 480, 430, 425), True),      # mean 427.5, exactly the bar
    ((100, 400, 420, 470), False),     # never reached 475, whatever the end
    ((100, 200, 480), False),          # budget ended right after the crossing: mean 340
])
def test_a_seed_passes_only_if_it_reached_the_threshold_and_held_the_bar(returns, passed):
    verdict = EndOfRun(475).judge(history(*returns))
    assert verdict["passed"] is passed
    assert verdict["final"] == pytest.approx(sum(returns[-2:]) / 2)
    assert verdict["best"] == max(returns)


def test_negative_thresholds_allow_ten_percent_below():
    rule = EndOfRun(-250)
    assert rule.bar == pytest.approx(-275)
    assert rule.judge(history(-900, -240, -260, -280))["passed"]  # mean -270
    assert not rule.judge(history(-900, -240, -300, -280))["passed"]  # mean -290
    assert EndOfRun(3.5).bar == pytest.approx(3.15)
