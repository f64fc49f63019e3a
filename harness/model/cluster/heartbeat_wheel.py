"""The beats of many groups of nodes on one timer (`BeatWheel`): its own module so that it is
compiled (docs, "Compiled hot path"), as a million nodes beat 50,000 times a second."""

from __future__ import annotations


class BeatWheel:
    """The beats of many groups on one timer, in time order: a host sets a timer for the next
    beat only, rather than one per group (a million nodes at staggered phases would keep a
    million timers waiting).

    Every group beats once per interval, so the groups take their turns in one fixed order, that
    of their next beats: each beat is `planned + interval`, and adding the same interval keeps
    that order (rounding is monotonic), ties in group order as the timers' own order would have
    them. Turn `i` is the `i`-th group in that order."""

    __slots__ = ("duration", "interval", "order", "planned")

    def __init__(self, planned: list[float], interval: float, duration: float) -> None:
        self.planned = planned
        self.interval = interval
        self.duration = duration
        self.order = sorted(
            (g for g, t in enumerate(planned) if t < duration), key=planned.__getitem__
        )
        """Groups with a beat before the run's end, by their next beat."""

    def first(self) -> float | None:
        """When the first beat is due; None: none before the run's end."""
        return self.planned[self.order[0]] if self.order else None

    def turn(self, turn: int, planned: float) -> tuple[int, int, float | None]:
        """The group whose beat, planned at `planned`, is turn `turn`, and the next turn with
        its time (None: no beat is left before the run's end)."""
        order = self.order
        group = order[turn]
        self.planned[group] = planned + self.interval
        turn += 1
        if turn == len(order):
            turn = 0
        t = self.planned[order[turn]]
        return group, turn, t if t < self.duration else None
