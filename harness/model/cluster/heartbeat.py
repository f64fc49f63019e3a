"""Heartbeats: the metrics report a node sends, and when it sends them.

The report is the real ServiceInfo's aggregates; the plan says when each node reports (all
together or each at its own phase, the first report of all at t = 0) and how late a report
reaches each scheduler replica. Both engines and the HTML report take beat times from here.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

from harness.model.cluster.heartbeat_wheel import BeatWheel
from harness.model.cluster.phases import PHASES
from harness.model.cluster.phases.phase import BeatGroup
from harness.model.tunables import key


class Report(NamedTuple):
    """Aggregates only, as in the real ServiceInfo: applying one overwrites the scheduler's view.

    Immutable, and a tuple because ten thousand nodes send one every interval: it is the
    cheapest immutable record Python builds (and `NodeView.overwrite` unpacks it in field order:
    a new field goes last).

    `seq` grows by one per report of a node, so a strategy can drop reports that arrive out of
    order; `sandbox_ids` is filled only for strategies that reconcile by ID.
    """

    node_id: int
    seq: int
    taken_at: float
    cpu_count: int
    cpu_allocated: float
    cpu_percent: float
    memory_total_mib: float
    memory_allocated_mib: float
    memory_used_mib: float
    sandboxes_running: int
    sandbox_ids: frozenset[int] | None = None


@dataclass(frozen=True)
class HeartbeatSpec:
    interval_s: float = key(20.0, "Seconds between two reports of a node.", gt=0)
    phase: str = key(
        "aligned",
        "aligned: all nodes report together; staggered: random phase.",
        choices=PHASES,
    )
    delay_ms: float = key(0.0, "Delivery delay between taking a report and applying it.", ge=0)
    jitter_ms: float = key(
        0.0,
        "Extra delivery delay drawn uniformly from [0, jitter_ms] per report and replica; "
        "above the interval, reports of a node arrive out of order.",
        ge=0,
    )
    quiet_nodes: str = key(
        "auto",
        "Where the strategy ignores a report that changes nothing, nodes may skip those: "
        "auto (when cheaper: fewer creates and kills a second than reports), on (wherever "
        "allowed), off (every beat). The run is the same; only its speed differs.",
        choices=("auto", "on", "off"),
    )


STEPPED_BEATS = 1_000_000
"""Beats `HeartbeatPlan.most_beats` counts one by one, as the wheel steps them; more are
divided."""


class HeartbeatPlan:
    """When reports are taken (the pre-run sync at t = 0, then every interval until the run's
    end) and how long each takes to reach a replica."""

    __slots__ = ("delay", "duration", "fixed_delay", "interval", "jitter", "phase")

    def __init__(self, spec: HeartbeatSpec, duration: float) -> None:
        self.interval = spec.interval_s
        self.phase = PHASES.resolve(spec.phase)
        self.delay = spec.delay_ms / 1000.0
        self.jitter = spec.jitter_ms / 1000.0
        self.duration = duration
        self.fixed_delay = None if self.jitter > 0 else self.delay
        """The delivery delay when every report takes the same (no jitter); None otherwise."""

    def groups(self, node_ids: list[int], rng: random.Random) -> list[BeatGroup]:
        """The beat groups of these nodes, with `rng` the run's heartbeat-phase stream."""
        return self.phase.groups(node_ids, self.interval, rng)

    def wheel(self, planned: list[float]) -> BeatWheel:
        """One timer for the beats of groups whose next beats are `planned`."""
        return BeatWheel(planned, self.interval, self.duration)

    def first_at_or_after(self, first: float, now: float) -> float:
        """The first beat of a group (first beat `first`) not before `now`: a node back from
        a crash of its process reports from its next beat on, without a burst of missed ones."""
        return first + max(0, math.ceil((now - first) / self.interval)) * self.interval

    def delivery_delay(self, rng: random.Random) -> float:
        """How long one report takes to reach one replica (the pre-run sync takes none)."""
        if self.jitter > 0:
            return self.delay + rng.uniform(0.0, self.jitter)
        return self.delay

    def applied_at(self) -> list[float] | None:
        """When every replica applies each aligned round of reports (the pre-run sync at 0,
        then each beat plus the delivery delay, jitter aside); None for staggered phases,
        whose beats belong to each node."""
        if not self.phase.together:
            return None
        return [0.0, *(t + self.delay for t in self.beat_times(self.phase.earliest(self.interval)))]

    def beat_times(self, first: float) -> Iterator[float]:
        """The beats of a group whose first beat is `first`: each the previous plus the
        interval, while before the run's end, as `BeatWheel` steps them (a run whose length is
        a multiple of the interval takes no beat at its end)."""
        t = first
        while t < self.duration:
            yield t
            t += self.interval

    def most_beats(self) -> int:
        """The most beats one node takes in a run, the pre-run sync aside: those of a group
        whose first beat is the earliest its phase allows. The one count of beats: what
        estimates a run's reports (the cost check) asks here. Stepped as the wheel steps them,
        up to `STEPPED_BEATS`; beyond, divided (a typo's interval of a nanosecond would take
        hours to step, and the wheel's rounding moves a count that large by a few at most)."""
        first = self.phase.earliest(self.interval)
        if first >= self.duration:
            return 0
        divided = math.ceil((self.duration - first) / self.interval)
        if divided > STEPPED_BEATS:
            return divided
        return sum(1 for _ in self.beat_times(first))
