"""`NativeClock`: `VirtualClock` written for the compiled path (see docs, "Compiled hot path").

The same discrete-event environment, in the same order: messages by time, and at one instant
in the order they were scheduled. Only its queue differs. `VirtualClock` keeps tuples on
`heapq`, the fastest queue interpreted Python has; compiled, every comparison of two tuples is
a generic call, and they are most of the queue's cost. Here the heap is two native vectors:
each message's time and slot. A message's sequence number, kind, key and payload stay in its
slot, which the heap never moves (the sequence number is read only when two times tie), so
keeping order compares and moves plain numbers and never touches a message's objects (at
10,000 nodes a heap of objects spent most of its time waiting for them to come from memory).
Interpreted Python would run this many times slower: the virtual engine takes this clock only
when the model is compiled (`harness.COMPILED`). Both clocks keep messages due soon on a small
heap of their own (`harness.model.event_queue.NEAR_S`); `tests/test_compiled.py` checks both paths
write the same bytes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final, final

from librt.vecs import append, pop, vec
from mypy_extensions import i64

from harness.model.event_queue import NEAR_S, Recipient, Sink

_NEAR: Final = NEAR_S


@final
class _Heap:
    """Slots ordered by (time, sequence number), as `heapq` would order the tuples: the times
    and slots are parallel vectors, and `seq` (the clock's, by slot) breaks a tie."""

    __slots__ = ("at", "slot")

    def __init__(self) -> None:
        self.at = vec[float]()
        self.slot = vec[i64]()

    def before(self, other: _Heap, seq: vec[i64]) -> bool:
        """Whether this heap's first message is due before `other`'s (both non-empty)."""
        t, u = self.at[0], other.at[0]
        return t < u or (t == u and seq[self.slot[0]] < seq[other.slot[0]])

    def push(self, t: float, slot: i64, seq: vec[i64]) -> None:
        at = self.at = append(self.at, t)
        slots = self.slot = append(self.slot, slot)
        _sift_up(at, slots, seq, len(at) - 1, t, slot)

    def pop(self, seq: vec[i64]) -> i64:
        """The first message's slot, taken off the heap. As `heapq.heappop`: the hole left at
        the top goes down to a leaf along the earlier child, and the last entry comes up into
        it from there."""
        top = self.slot[0]
        at, t = pop(self.at)
        slots, slot = pop(self.slot)
        self.at, self.slot = at, slots
        n = len(at)
        if n == 0:
            return top
        pos: i64 = 0
        child: i64 = 1
        while child < n:
            right = child + 1
            if right < n:
                a, b = at[right], at[child]
                if a < b or (a == b and seq[slots[right]] < seq[slots[child]]):
                    child = right
            at[pos] = at[child]
            slots[pos] = slots[child]
            pos = child
            child = 2 * pos + 1
        _sift_up(at, slots, seq, pos, t, slot)
        return top


def _sift_up(at: vec[float], slots: vec[i64], seq: vec[i64], pos: i64, t: float, slot: i64) -> None:
    """(t, slot) into the hole at `pos`, moved up past every parent due after it."""
    s = seq[slot]
    while pos > 0:
        up = (pos - 1) >> 1
        u = at[up]
        if t < u or (t == u and s < seq[slots[up]]):
            at[pos] = u
            slots[pos] = slots[up]
            pos = up
        else:
            break
    at[pos] = t
    slots[pos] = slot


class NativeClock(Sink):
    """`harness.model.event_queue.VirtualClock`'s interface and order, on native heaps."""

    def __init__(self, waits: Sequence[bool] = ()) -> None:
        self.time = 0.0
        """The current time (what `now()` returns)."""
        self._near = _Heap()
        self._far = _Heap()
        self._seq: i64 = 0
        self.waits = list(waits)
        self.recipients: list[Recipient] = []
        self._kind = vec[i64]()
        self._key = vec[i64]()
        self._seqs = vec[i64]()
        """Each slot's sequence number."""
        self._payload: list[Any] = []
        """Each slot's payload (with `_kind`, `_key` and `_seqs`, its message); a slot is used
        again once its message is delivered."""
        self._free = vec[i64]()
        """Slots free for `at`."""
        self.events = 0

    def now(self) -> float:
        return self.time

    def at(self, t: float, kind: int, key: int, payload: Any) -> None:
        """Schedule a message (`kind`, `key`, `payload`) for time `t`."""
        self._seq += 1
        if len(self._free):
            self._free, slot = pop(self._free)
            self._kind[slot] = kind
            self._key[slot] = key
            self._seqs[slot] = self._seq
            self._payload[slot] = payload
        else:
            slot = len(self._kind)
            self._kind = append(self._kind, kind)
            self._key = append(self._key, key)
            self._seqs = append(self._seqs, self._seq)
            self._payload.append(payload)
        (self._near if t < self.time + _NEAR else self._far).push(t, slot, self._seqs)

    def emit(self, at: float, kind: int, key: int, payload: Any) -> None:
        if at <= self.time and not self.waits[kind]:
            self.recipients[kind].deliver(kind, key, payload, at)
        else:
            self.at(at, kind, key, payload)

    def run(self, progress: Callable[[float], None] | None = None, every: int = 8192) -> None:
        """Deliver every message, each to `recipients[kind]`, until none is left;
        `progress(now)` is called every `every` messages."""
        near, far, recipients, payloads = self._near, self._far, self.recipients, self._payload
        n = 0
        while True:
            if len(near.at):
                heap = far if len(far.at) and far.before(near, self._seqs) else near
            elif len(far.at):
                heap = far
            else:
                break
            t = heap.at[0]
            slot = heap.pop(self._seqs)
            self.time = t
            kind = self._kind[slot]
            payload = payloads[slot]
            payloads[slot] = None
            self._free = append(self._free, slot)
            recipients[kind].deliver(kind, self._key[slot], payload, t)
            n += 1
            if progress is not None and n % every == 0:
                progress(t)
        self.events += n
