"""Progress on stderr: the time left from the recent pace of model time (honest for a seed that
a storm of refusals slows), a stall said as such, the storm named once with the key that caps
it, and what a run, a sweep and a search say where stderr is not a terminal."""

from __future__ import annotations

import pytest

from harness.config import Config, ConfigError
from harness.presentation.progress import (
    PROGRESS_ENV,
    LazyProgress,
    Pace,
    SearchLine,
    SweepBar,
    every_s,
    timing,
)
from harness.running.seed_tasks import STORM, Share


def test_the_time_left_follows_the_recent_pace_not_the_quick_start():
    """A seed that went quickly until its cluster filled, then crawled (a storm of refusals):
    the mean pace since the start said 18 s left at 40 s in; the recent pace says minutes."""
    pace = Pace()
    for tenth in range(101):  # 0 to 10 s: the first 0.66 of the seed
        pace.add(tenth / 10, 0.066 * tenth / 10)
    for second in range(11, 41):  # 10 to 40 s: 0.001 a second
        pace.add(second, 0.66 + 0.001 * (second - 10))
    left = pace.left(1.0, 40.0)
    assert left == pytest.approx((1.0 - 0.69) / 0.001, rel=0.01)


def test_a_count_that_stopped_moving_has_no_time_left_and_says_so():
    pace = Pace(window_s=60)
    for second in range(31):
        pace.add(second, second / 100)
    assert pace.left(1.0, 30.0) == pytest.approx(70.0, rel=0.01)
    assert pace.left(1.0, 200.0) is None  # nothing moved in the window: not known
    said = timing(pace, 0.0, 1.0, 200.0)
    assert said == "elapsed 3:20, ETA -:--, nothing moved for 2:50"


@pytest.mark.parametrize("value", ["0", "-1", "soon", "inf", "nan"])
def test_a_progress_interval_that_is_not_seconds_is_one_line_naming_it(value, monkeypatch):
    monkeypatch.setenv(PROGRESS_ENV, value)
    with pytest.raises(ConfigError, match=PROGRESS_ENV):
        every_s()
    monkeypatch.setenv(PROGRESS_ENV, "0.25")
    assert every_s() == 0.25


def test_a_runs_line_counts_the_model_time_of_the_running_seeds(capsys):
    shown = LazyProgress("seed-herd")  # stderr is captured: not a terminal
    shown(1, 3, 0.42, None, 0)
    assert shown.line().startswith("seed-herd: 1.42 of 3 seeds, elapsed 0:00, ETA ")
    shown(3, 3, 0.0, None, 0)
    assert "3 of 3 seeds; writing the run's tables, elapsed" in shown.line()
    shown.close()
    assert capsys.readouterr().err == ""  # nothing drawn: lines come from the ticker


def test_a_storm_of_refusals_is_named_once_with_the_key_that_caps_it(capsys):
    shown = LazyProgress("seed-herd")
    shown(0, 1, 0.5, None, STORM - 1)
    assert capsys.readouterr().err == ""
    for refused in (STORM, STORM + 5):
        shown(0, 1, 0.6, None, refused)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "storm of refusals" in err and "placement.max_asks" in err
    assert f"{STORM + 5} creates refused 10+ times" in shown.line()
    shown.close()


def test_a_sweeps_and_a_searchs_lines(capsys):
    sweep = SweepBar("grid")
    sweep(3, 1, 12)
    assert sweep.line().startswith("grid: 3 of 12 cells (1 failed), elapsed 0:00, ETA ")
    sweep.close()
    search = SearchLine("worst")
    search(12, 40, 0.54321, 2.0)
    assert search.line().startswith("worst: 12 of 40 trials, best 0.5432, elapsed 0:00, ETA ")
    search.phase("shrinking trial 7 towards the base scenario")
    assert search.line().startswith("worst: shrinking trial 7 towards the base scenario, for 0:00")
    search.close()


def test_a_seeds_share_counts_the_deadline_past_its_end_once_it_stormed():
    """Stuck creates sent before the end are placed again until their deadline: the seed runs
    on past its duration, where a share of model time over the duration stays at 1 and the
    time left said 0:00 for what could be most of the run."""
    config = Config().with_values({"run.duration_s": 60.0, "placement.deadline_s": 30.0})
    share = Share(config)
    assert share(30.0, 0) == 0.5
    assert share(40.0, STORM) == pytest.approx(40 / 90)
    assert share(60.0, 0) == pytest.approx(60 / 90)  # a storm once is a storm for the seed
    assert share(200.0, 0) == 1.0
    calm = Share(config.with_value("placement.retry_refused", False))
    assert calm(40.0, STORM) == pytest.approx(40 / 60)  # refused creates fail at once
