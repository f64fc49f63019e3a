"""When a run's timeline samples fall and when the run is over: one rule, asked by both engines.

The virtual engine schedules each sample as a message of its own and stops when nothing is
left to deliver, and then checks that the rule agrees; the Ray driver polls its actors and asks
the rule at every poll. Neither decides it for itself.
"""

from __future__ import annotations

from typing import final


@final
class Lifecycle:
    """A run's length and sampling period, and what follows from them."""

    __slots__ = ("duration", "interval")

    def __init__(self, duration: float, sample_interval: float) -> None:
        self.duration = duration
        self.interval = sample_interval
        """Seconds between two timeline samples; 0 turns the timeline off."""

    def first_sample(self) -> float | None:
        """The first timeline sample, at 0; None when sampling is off."""
        return 0.0 if self.interval > 0 else None

    def sample_after(self, t: float) -> float | None:
        """The timeline sample after the one at `t`; None past the end or when sampling is
        off."""
        if self.interval <= 0:
            return None
        nxt = t + self.interval
        return nxt if nxt <= self.duration else None

    def over(self, now: float, clients_done: bool, next_sample: float | None) -> bool:
        """Whether the run has ended: every client is done (nothing waits for an answer, no
        timer of theirs is pending), the duration has passed and no sample is still due."""
        return clients_done and now >= self.duration and next_sample is None
