"""Time, as one explicit abstraction: the model takes `now` as an argument, engines own a clock.

`VirtualClock` is a discrete-event environment for the protocol's messages: they are delivered
in time order, and messages due at the same instant in the order they were scheduled, which is
what makes a seeded run repeatable to the bit. `WallClock` maps model time onto real time for
the Ray engine, whose hosts keep their own agenda of messages and wake on it.
"""

from __future__ import annotations

import heapq
import itertools
import time
from collections.abc import Callable, Sequence
from typing import Any

Deliver = Callable[[int, Any, float], None]
"""deliver(key, payload, now): what a message of one kind is handed to."""
Emit = Callable[[float, int, int, Any], None]
"""emit(at, kind, key, payload): where a party sends a message (see `harness.protocol`)."""


NEAR_S = 1.0
"""Messages due within this many model seconds wait on a small heap of their own, later ones
(a lifetime's kill, a node's next beat) on a large one. Most messages are RPC legs due in
milliseconds, and each push or pop costs comparisons in proportion to the log of its heap's
size. The order is the same with any split: the next message is the earlier of the two heads."""

Message = tuple[float, int, int, int, Any]
"""(at, sequence number, kind, key, payload) on the queue."""


class VirtualClock:
    """Simulated time that jumps from one scheduled message to the next."""

    __slots__ = ("_far", "_near", "_seq", "events", "time")

    def __init__(self) -> None:
        self.time = 0.0
        """The current time (what `now()` returns), readable without a call on hot paths."""
        self._near: list[Message] = []
        self._far: list[Message] = []
        self._seq = itertools.count()
        self.events = 0

    def now(self) -> float:
        return self.time

    def at(self, t: float, kind: int, key: int, payload: Any) -> None:
        """Schedule a message (`kind`, `key`, `payload`) for time `t`."""
        queue = self._near if t < self.time + NEAR_S else self._far
        heapq.heappush(queue, (t, next(self._seq), kind, key, payload))

    def sink(self, route: Sequence[Deliver], waits: Sequence[bool]) -> Emit:
        """`emit(at, kind, key, payload)` for the parties: a message due now is delivered to
        `route[kind]` at once unless `waits[kind]` (a timer, which always takes its turn on the
        queue); any other is scheduled. (A closure: it runs for every message.)"""
        near, far, seq, push = self._near, self._far, self._seq, heapq.heappush

        def emit(at: float, kind: int, key: int, payload: Any) -> None:
            now = self.time
            if at <= now and not waits[kind]:
                route[kind](key, payload, at)
            else:
                push(near if at < now + NEAR_S else far, (at, next(seq), kind, key, payload))

        return emit

    def run(
        self,
        route: Sequence[Deliver],
        progress: Callable[[float], None] | None = None,
        every: int = 8192,
    ) -> None:
        """Deliver every message, each to `route[kind]`, until none is left; `progress(now)` is
        called every `every` messages."""
        near, far = self._near, self._far
        pop = heapq.heappop
        n = 0
        while True:
            if near:
                t, _, kind, key, payload = pop(far if far and far[0] < near[0] else near)
            elif far:
                t, _, kind, key, payload = pop(far)
            else:
                break
            self.time = t
            route[kind](key, payload, t)
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
