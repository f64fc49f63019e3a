"""The fault plan of a run: which RPC fails, which report is lost, how slow a node is and when
nodes crash. The one place both engines' node sides ask.

Each fault kind is declared once in `FAULT_KINDS` (its keys, whether it needs a target node);
the config layer validates `[[faults]]` entries from that registry. Random faults draw from a
stream of their own, so a plan changes no other draw of the run. Every injected fault is
counted in `counts`, for the summary and for tests to compare with what the scheduler saw.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from harness.model.cluster.heartbeat import Report
from harness.model.cluster.node import Node, Outcome
from harness.model.tunables import key
from harness.model.workload.request import Shape


@dataclass(frozen=True, slots=True)
class FaultKind:
    name: str
    keys: tuple[str, ...]
    """The keys an entry of this kind takes besides `kind`; any other is refused."""
    needs_node: bool = False
    what: str = ""


FAULT_KINDS = {
    k.name: k
    for k in (
        FaultKind(
            "crash",
            ("node", "at_s", "until_s"),
            needs_node=True,
            what="the node dies (sandboxes lost, RPCs fail, no reports); back empty at until_s",
        ),
        FaultKind(
            "rpc_error",
            ("rpc", "error", "fraction", "node", "at_s", "until_s"),
            what="a fraction of create or kill RPCs fail without the node acting",
        ),
        FaultKind(
            "timeout",
            ("fraction", "node", "at_s", "until_s"),
            what="a fraction of create RPCs get no answer; the node acts all the same",
        ),
        FaultKind(
            "lost_reports",
            ("fraction", "node", "at_s", "until_s"),
            what="a fraction of heartbeat reports never arrive",
        ),
        FaultKind(
            "slow_node",
            ("node", "latency_ms", "at_s", "until_s"),
            needs_node=True,
            what="every RPC to the node takes latency_ms longer",
        ),
    )
}
"""Fault kinds by name."""


@dataclass(frozen=True)
class FaultSpec:
    kind: str = key(
        "crash",
        "crash, rpc_error, timeout (create RPCs), lost_reports or slow_node.",
        choices=FAULT_KINDS,
    )
    at_s: float = key(0.0, "When the fault starts (model seconds).", ge=0)
    until_s: float | None = key(
        None, 'When it ends; a crashed node comes back empty then; "none": never.', ge=0
    )
    node: int | None = key(
        None, 'Target node (required for crash and slow_node); "none": every node.', ge=0
    )
    rpc: str = key(
        "create", "rpc_error: which RPC fails, create or kill.", choices=("create", "kill")
    )
    error: str = key(
        "failed",
        "rpc_error: failed (transient: exclude, attempt + 1) or resource_exhausted (skip).",
        choices=("failed", "resource_exhausted"),
    )
    fraction: float = key(
        1.0, "Share of the RPCs (or reports) in the window that fail, drawn per RPC.", ge=0, le=1
    )
    latency_ms: float = key(10.0, "slow_node: extra round trip of every RPC to it.", gt=0)

    def active(self, node_id: int, now: float) -> bool:
        return (
            (self.node is None or self.node == node_id)
            and now >= self.at_s
            and (self.until_s is None or now < self.until_s)
        )


COUNTS = (
    "fault_rpc_failed",
    "fault_rpc_exhausted",
    "fault_timeouts",
    "fault_down_creates",
    "fault_down_kills",
    "fault_lost_reports",
    "fault_crashes",
)
"""Summary columns of injected faults (see `Faults.counts`)."""


class SlowNodes:
    """Extra latency of RPCs to slow nodes: deterministic, so the scheduler's side (which sends)
    and the node's side (which answers) both compute it."""

    __slots__ = ("slow",)

    def __init__(self, faults: Iterable[FaultSpec]) -> None:
        self.slow: dict[int, list[FaultSpec]] = {}
        for f in faults:
            if f.kind == "slow_node":
                self.slow.setdefault(f.node, []).append(f)

    def extra_leg(self, node_id: int, now: float) -> float:
        """Extra seconds on each leg of an RPC to this node (half of each active slow_node's
        round trip; overlapping entries add up)."""
        entries = self.slow.get(node_id)
        if not entries:
            return 0.0
        return sum(f.latency_ms / 2000.0 for f in entries if f.active(node_id, now))

    def slowest_ms(self) -> float:
        """The largest extra round trip (ms) any node ever has: overlapping entries add up,
        so the sum is largest at the start of one of them."""
        return max(
            (2000.0 * self.extra_leg(node, f.at_s) for node, fs in self.slow.items() for f in fs),
            default=0.0,
        )


def _union(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The half-open windows [at, until) merged where they overlap or touch, in time order."""
    merged: list[tuple[float, float]] = []
    for at, until in sorted(spans):
        if merged and at <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], until))
        else:
            merged.append((at, until))
    return merged


class Faults:
    """The `[[faults]]` entries of a config for the nodes `node_ids` (all, or one group's)."""

    def __init__(self, faults: Iterable[FaultSpec], rng: random.Random, node_ids: range) -> None:
        self.plan = [f for f in faults if f.node is None or f.node in node_ids]
        self.random = rng.random
        self.counts: Counter[str] = Counter(dict.fromkeys(COUNTS, 0))
        self.create_faults = [
            f
            for f in self.plan
            if f.kind == "timeout" or (f.kind == "rpc_error" and f.rpc == "create")
        ]
        self.kill_faults = [f for f in self.plan if f.kind == "rpc_error" and f.rpc == "kill"]
        self.report_faults = [f for f in self.plan if f.kind == "lost_reports"]

    def crash_events(self) -> list[tuple[float, int, bool]]:
        """(time, node, down) of every crash and comeback, in time order. A node is down over
        the union of its crash windows: windows that overlap or touch are one stretch, so the
        end of one never brings back a node that another still holds down."""
        windows: dict[int, list[tuple[float, float]]] = {}
        for f in self.plan:
            if f.kind == "crash":
                until = math.inf if f.until_s is None else f.until_s
                windows.setdefault(f.node, []).append((f.at_s, until))
        events = []
        for node, spans in windows.items():
            for at, until in _union(spans):
                events.append((at, node, True))
                if until != math.inf:
                    events.append((until, node, False))
        return sorted(events)

    def down_at(self, now: float) -> set[int]:
        """The nodes the plan has down at `now`: crashed at or before it, not back since."""
        down: set[int] = set()
        for t, node_id, is_down in self.crash_events():
            if t <= now:
                (down.add if is_down else down.discard)(node_id)
        return down

    def process_died(self, nodes: int, deaths: int) -> None:
        """The process holding `nodes` nodes died `deaths` times (engines with processes):
        each death crashed every one of them."""
        self.counts["fault_crashes"] += nodes * deaths

    def crash(self, node: Node, down: bool) -> None:
        """Apply one crash event to the node."""
        if down and not node.down:
            node.crash()
            self.counts["fault_crashes"] += 1
        elif not down:
            node.restart()

    def _draw(self, faults: list[FaultSpec], node_id: int, now: float) -> FaultSpec | None:
        for f in faults:
            if f.active(node_id, now) and self.random() < f.fraction:
                return f
        return None

    def create(self, node: Node, sandbox_id: int, shape: Shape, now: float) -> Outcome:
        """The create RPC as the node's side answers it, faults included. TIMEOUT means the
        node acted (or not) but its answer never arrives: the scheduler gives up later."""
        if node.down:  # the node refuses (see Node.create); counted here
            self.counts["fault_down_creates"] += 1
            return node.create(sandbox_id, shape)
        fault = self._draw(self.create_faults, node.node_id, now) if self.create_faults else None
        if fault is None:
            return node.create(sandbox_id, shape)
        if fault.kind == "timeout":
            self.counts["fault_timeouts"] += 1
            node.create(sandbox_id, shape)
            return Outcome.TIMEOUT
        return self._error(fault)

    def kill(self, node: Node, sandbox_id: int, now: float) -> Outcome:
        """The kill RPC as the node's side answers it, faults included."""
        if node.down:
            self.counts["fault_down_kills"] += 1
            return node.kill(sandbox_id)
        fault = self._draw(self.kill_faults, node.node_id, now) if self.kill_faults else None
        if fault is None:
            return node.kill(sandbox_id)
        return self._error(fault)

    def _error(self, fault: FaultSpec) -> Outcome:
        if fault.error == "resource_exhausted":
            self.counts["fault_rpc_exhausted"] += 1
            return Outcome.RESOURCE_EXHAUSTED
        self.counts["fault_rpc_failed"] += 1
        return Outcome.FAILED

    def report(self, node: Node, now: float, with_ids: bool) -> Report | None:
        """The node's heartbeat, or None when it is down or this report is lost (a down node
        draws nothing)."""
        if (
            self.report_faults
            and not node.down
            and self._draw(self.report_faults, node.node_id, now) is not None
        ):
            self.counts["fault_lost_reports"] += 1
            return None
        return node.beat(now, with_ids)
