"""Model time in real time: the Ray hosts' clock. The model takes `now` as an argument and
reads no clock; an engine whose parties run concurrently keeps the time here, and its carrier
(`actors.carrier`) hands every message due by then to the one event queue."""

from __future__ import annotations

import time
from collections.abc import Callable


class WallClock:
    """Model time in real time, for engines whose actors run concurrently.

    `epoch` is a `time.time()` value chosen by the driver, so actors in other processes (and on
    other hosts with synchronised clocks) agree on t = 0. `scale` is wall seconds per model
    second: 0.2 plays a 25 s scenario in 5 s, so every rate is five times higher. `source` reads
    the wall time (a test hands in its own).
    """

    __slots__ = ("epoch", "scale", "source")

    def __init__(
        self, epoch: float, scale: float = 1.0, source: Callable[[], float] = time.time
    ) -> None:
        self.epoch = epoch
        self.scale = scale
        self.source = source

    def now(self) -> float:
        return (self.source() - self.epoch) / self.scale
