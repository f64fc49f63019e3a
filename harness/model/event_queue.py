"""Time, as one explicit abstraction: the model takes `now` as an argument, engines own a clock.

`VirtualClock` is a discrete-event environment for the protocol's messages: they are delivered
in time order, and messages due at the same instant in the order they were scheduled, which is
what makes a seeded run repeatable to the bit. `WallClock` maps model time onto real time for
the Ray engine, whose hosts keep their own agenda of messages and wake on it.

`Sink` and `Recipient` are a message's two ends: a party sends through its engine's sink and is
handed each message as a recipient. Both clocks and the Ray hosts' carrier are sinks.
"""

from __future__ import annotations

import heapq
import itertools
import time
from collections.abc import Callable, Sequence
from typing import Any

from mypy_extensions import mypyc_attr


@mypyc_attr(allow_interpreted_subclasses=True)
class Sink:
    """Where a party sends a message: `emit(at, kind, key, payload)` (see `harness.model.protocol`).
    An engine's transport is one. A class rather than a callable: compiled, a party's call of
    `emit` is then a direct native call, with `at` and `key` unboxed, not a generic call of a
    bound method (some 5 per create)."""

    def emit(self, at: float, kind: int, key: int, payload: Any) -> None:
        raise NotImplementedError


@mypyc_attr(allow_interpreted_subclasses=True)
class Recipient:
    """What a message is delivered to: `deliver(kind, key, payload, now)`. Each party is one
    and dispatches on `kind` itself, so a transport makes one native call per message, not a
    generic call of a handler looked up in a table."""

    def deliver(self, kind: int, key: int, payload: Any, now: float) -> None:
        raise NotImplementedError


NEAR_S = 1.0
"""Messages due within this many model seconds wait on a small heap of their own, later ones
(a lifetime's kill, a node's next beat) on a large one. Most messages are RPC legs due in
milliseconds, and each push or pop costs comparisons in proportion to the log of its heap's
size. The order is the same with any split: the next message is the earlier of the two heads."""

Message = tuple[float, int, int, int, Any]
"""(at, sequence number, kind, key, payload) on the queue."""


class VirtualClock(Sink):
    """Simulated time that jumps from one scheduled message to the next.

    As the parties' sink it delivers a message due now to its recipient at once, unless
    `waits[kind]` (a timer, which always takes its turn on the queue), and schedules any other.
    `recipients[kind]` is who handles each kind of message; the engine fills it once the
    parties, which take this clock as their sink, are made."""

    __slots__ = ("_far", "_near", "_seq", "events", "recipients", "time", "waits")

    def __init__(self, waits: Sequence[bool] = ()) -> None:
        self.time = 0.0
        """The current time (what `now()` returns), readable without a call on hot paths."""
        self._near: list[Message] = []
        self._far: list[Message] = []
        self._seq = itertools.count()
        self.waits = list(waits)
        self.recipients: list[Recipient] = []
        self.events = 0

    def now(self) -> float:
        return self.time

    def at(self, t: float, kind: int, key: int, payload: Any) -> None:
        """Schedule a message (`kind`, `key`, `payload`) for time `t`."""
        queue = self._near if t < self.time + NEAR_S else self._far
        heapq.heappush(queue, (t, next(self._seq), kind, key, payload))

    def emit(self, at: float, kind: int, key: int, payload: Any) -> None:
        if at <= self.time and not self.waits[kind]:
            self.recipients[kind].deliver(kind, key, payload, at)
        else:
            self.at(at, kind, key, payload)

    def run(self, progress: Callable[[float], None] | None = None, every: int = 8192) -> None:
        """Deliver every message, each to `recipients[kind]`, until none is left;
        `progress(now)` is called every `every` messages."""
        near, far, recipients = self._near, self._far, self.recipients
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
            recipients[kind].deliver(kind, key, payload, t)
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
