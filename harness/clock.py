"""Time, as one explicit abstraction: the model takes `now` as an argument, engines own a clock.

`VirtualClock` is a discrete-event environment: callbacks run in time order, and callbacks due
at the same instant run in the order they were scheduled, which is what makes a seeded run
repeatable to the bit. `WallClock` maps model time onto real time for the Ray engine.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Callable
from typing import Any, Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the run started."""
        ...


class VirtualClock:
    __slots__ = ("_now", "_queue", "_seq", "events")

    def __init__(self) -> None:
        self._now = 0.0
        self._queue: list[tuple[float, int, Callable[[Any], None], Any]] = []
        self._seq = itertools.count()
        self.events = 0

    def now(self) -> float:
        return self._now

    def at(self, t: float, callback: Callable[[Any], None], arg: Any = None) -> None:
        if t < self._now:
            raise ValueError(f"cannot schedule at {t} before now ({self._now})")
        heapq.heappush(self._queue, (t, next(self._seq), callback, arg))

    def after(self, delay: float, callback: Callable[[Any], None], arg: Any = None) -> None:
        heapq.heappush(self._queue, (self._now + delay, next(self._seq), callback, arg))

    def run(self, progress: Callable[[float], None] | None = None, every: int = 8192) -> None:
        """Run until nothing is scheduled; `progress(now)` is called every `every` events."""
        queue = self._queue
        pop = heapq.heappop
        n = 0
        while queue:
            t, _, callback, arg = pop(queue)
            self._now = t
            callback(arg)
            n += 1
            if progress is not None and n % every == 0:
                progress(t)
        self.events += n


class WallClock:
    """Model time in real time, for engines whose actors run concurrently.

    `epoch` is a `time.time()` value chosen by the driver, so actors in other processes (and on
    other hosts with synchronised clocks) agree on t = 0. `scale` is wall seconds per model
    second: 0.2 plays a 25 s scenario in 5 s, so every rate is five times higher.
    """

    __slots__ = ("epoch", "scale")

    def __init__(self, epoch: float, scale: float = 1.0) -> None:
        self.epoch = epoch
        self.scale = scale

    def now(self) -> float:
        return (time.time() - self.epoch) / self.scale

    async def sleep(self, seconds: float) -> None:
        """Sleep `seconds` of model time."""
        await asyncio.sleep(seconds * self.scale)

    async def until(self, t: float) -> None:
        """Sleep until model time `t`; returns at once (without yielding) if it has passed."""
        delay = (t - self.now()) * self.scale
        if delay > 0:
            await asyncio.sleep(delay)
