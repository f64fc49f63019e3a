"""How many beats a node takes in a run is counted in one place (`HeartbeatPlan.most_beats`),
the way the beat wheel steps them: a run whose length is a multiple of the interval takes no
beat at its end, which a count of floor(duration / interval) + 1 beats gets wrong."""

from __future__ import annotations

import pytest

from harness.model.cluster.heartbeat import HeartbeatPlan, HeartbeatSpec
from harness.model.cluster.heartbeat_wheel import BeatWheel


def wheel_beats(first: float, interval: float, duration: float) -> int:
    """The beats one group whose first beat is `first` takes, as the wheel gives them."""
    wheel = BeatWheel([first], interval, duration)
    t, turn, count = wheel.first(), 0, 0
    while t is not None:
        _, turn, t = wheel.turn(turn, t)
        count += 1
    return count


@pytest.mark.parametrize("phase", ["aligned", "staggered"])
@pytest.mark.parametrize(
    ("interval", "duration"), [(1.0, 10.0), (1.0, 10.5), (0.1, 3.0), (0.3, 0.9), (5.0, 4.0)]
)
def test_most_beats_is_what_the_wheel_steps(phase, interval, duration):
    plan = HeartbeatPlan(HeartbeatSpec(interval_s=interval, phase=phase), duration)
    first = plan.phase.earliest(interval)
    assert plan.most_beats() == wheel_beats(first, interval, duration)
    assert plan.most_beats() == len(list(plan.beat_times(first)))


def test_a_run_a_whole_number_of_intervals_long_takes_no_beat_at_its_end():
    aligned = HeartbeatPlan(HeartbeatSpec(interval_s=1.0, phase="aligned"), 10.0)
    staggered = HeartbeatPlan(HeartbeatSpec(interval_s=1.0, phase="staggered"), 10.0)
    assert aligned.most_beats() == 9  # at 1, 2, ..., 9 s: none at 10 s, the run's end
    assert staggered.most_beats() == 10  # a node at phase 0: 0, 1, ..., 9 s
    assert aligned.applied_at() == [0.0, *(float(t) for t in range(1, 10))]


def test_beats_too_many_to_step_are_divided_at_once():
    """A typo's interval of a nanosecond over an hour: 3.6e12 beats, which stepping would
    take hours to count, are counted at once (the cost check refuses the run on them)."""
    plan = HeartbeatPlan(HeartbeatSpec(interval_s=1e-9, phase="staggered"), 3600.0)
    assert plan.most_beats() == pytest.approx(3.6e12, rel=1e-9)
    assert HeartbeatPlan(HeartbeatSpec(interval_s=20.0), 10.0).most_beats() == 0
