"""`NativeClock`: `VirtualClock` written for the compiled path (see README, "Compiled hot path").

The same discrete-event environment, in the same order: messages by time, and at one instant
in the order they were scheduled. Only its queue differs. `VirtualClock` keeps tuples on
`heapq`, the fastest queue interpreted Python has; compiled, every comparison of two tuples is
a generic call, and they are most of the queue's cost. Here a message is a typed object and
the heap compares its two fields directly, which interpreted Python would run many times
slower: the virtual engine takes this clock only when the model is compiled
(`harness.COMPILED`). A delivered message's object is kept and used again for the next one
scheduled. Both clocks keep messages due soon on a small heap of their own
(`harness.clock.NEAR_S`); `tests/test_compiled.py` checks both paths write the same bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final, final

from harness.clock import NEAR_S, Recipient, Sink

_NEAR: Final = NEAR_S


@final
class Message:
    """One scheduled message; `seq` numbers them in the order they were scheduled."""

    __slots__ = ("at", "key", "kind", "payload", "seq")

    def __init__(self, at: float, seq: int, kind: int, key: int, payload: Any) -> None:
        self.at = at
        self.seq = seq
        self.kind = kind
        self.key = key
        self.payload = payload


def _before(a: Message, b: Message) -> bool:
    """Whether `a` is due before `b`: by time, then in the order they were scheduled."""
    return a.at < b.at or (a.at == b.at and a.seq < b.seq)


def _sift_up(heap: list[Message], pos: int, item: Message) -> None:
    """`item` into the hole at `pos`, moved up past every parent due after it."""
    while pos > 0:
        up = (pos - 1) >> 1
        parent = heap[up]
        if _before(item, parent):
            heap[pos] = parent
            pos = up
        else:
            break
    heap[pos] = item


def _push(heap: list[Message], item: Message) -> None:
    """`heapq.heappush` on (at, seq)."""
    heap.append(item)
    _sift_up(heap, len(heap) - 1, item)


def _pop(heap: list[Message]) -> Message:
    """`heapq.heappop` on (at, seq): the hole left at the top goes down to a leaf along the
    earlier child, and the last message comes up into it from there."""
    last = heap.pop()
    n = len(heap)
    if n == 0:
        return last
    top = heap[0]
    pos = 0
    child = 1
    while child < n:
        right = child + 1
        if right < n and _before(heap[right], heap[child]):
            child = right
        heap[pos] = heap[child]
        pos = child
        child = 2 * pos + 1
    _sift_up(heap, pos, last)
    return top


class NativeClock(Sink):
    """`harness.clock.VirtualClock`'s interface and order, on a queue of typed messages."""

    def __init__(self, waits: Sequence[bool] = ()) -> None:
        self.time = 0.0
        """The current time (what `now()` returns)."""
        self._near: list[Message] = []
        self._far: list[Message] = []
        self._seq = 0
        self.waits = list(waits)
        self.recipients: list[Recipient] = []
        self._spare: list[Message] = []
        """Delivered messages, for `at` to use again."""
        self.events = 0

    def now(self) -> float:
        return self.time

    def at(self, t: float, kind: int, key: int, payload: Any) -> None:
        """Schedule a message (`kind`, `key`, `payload`) for time `t`."""
        self._seq += 1
        spare = self._spare
        if spare:  # a delivered message's object again: no allocation, and warm in the cache
            message = spare.pop()
            message.at = t
            message.seq = self._seq
            message.kind = kind
            message.key = key
            message.payload = payload
        else:
            message = Message(t, self._seq, kind, key, payload)
        _push(self._near if t < self.time + _NEAR else self._far, message)

    def emit(self, at: float, kind: int, key: int, payload: Any) -> None:
        if at <= self.time and not self.waits[kind]:
            self.recipients[kind].deliver(kind, key, payload, at)
        else:
            self.at(at, kind, key, payload)

    def run(self, progress: Callable[[float], None] | None = None, every: int = 8192) -> None:
        """Deliver every message, each to `recipients[kind]`, until none is left;
        `progress(now)` is called every `every` messages."""
        near, far, recipients, spare = self._near, self._far, self.recipients, self._spare
        n = 0
        while True:
            if near:
                heap = far if far and _before(far[0], near[0]) else near
            elif far:
                heap = far
            else:
                break
            message = _pop(heap)
            t = message.at
            self.time = t
            kind, key, payload = message.kind, message.key, message.payload
            message.payload = None
            spare.append(message)
            recipients[kind].deliver(kind, key, payload, t)
            n += 1
            if progress is not None and n % every == 0:
                progress(t)
        self.events += n
