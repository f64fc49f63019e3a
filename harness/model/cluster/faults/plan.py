"""The fault plan of a run: which RPC fails, which report is lost, how slow a node is and when
nodes crash. The one place both engines' node sides ask, for every RPC and report (one check
when no entry concerns them).

It asks each entry's kind (`FaultKind`: where it strikes, what it does, what it counts), never
its name. Random faults draw from a stream of their own, so a plan changes no other draw of
the run. Every injected fault is counted in `counts`, for the summary and for tests to compare
with what the scheduler saw.
"""

from __future__ import annotations

import random
from collections.abc import Iterable

from harness.model.cluster.faults.fault_keys import FaultSpec
from harness.model.cluster.faults.fault_kind import FaultKind
from harness.model.cluster.faults.kinds import COUNTS, FAULT_KINDS
from harness.model.cluster.heartbeat import Report
from harness.model.cluster.node import Node, Outcome
from harness.model.workload.request import Shape

Struck = list[tuple[FaultSpec, type[FaultKind]]]
"""Entries that may strike one place, each with its kind."""


class SlowNodes:
    """Extra latency of RPCs to slow nodes: deterministic, so the scheduler's side (which sends)
    and the node's side (which answers) both compute it."""

    __slots__ = ("slow",)

    def __init__(self, faults: Iterable[FaultSpec]) -> None:
        self.slow: dict[int, list[FaultSpec]] = {}
        for f in faults:
            if FAULT_KINDS.resolve(f.kind).slows and f.node is not None:
                self.slow.setdefault(f.node, []).append(f)

    def extra_leg(self, node_id: int, now: float) -> float:
        """Extra seconds on each leg of an RPC to this node (half of each active slow_node's
        round trip; overlapping entries add up)."""
        entries = self.slow.get(node_id)
        if not entries:
            return 0.0
        return sum(f.settings.latency_ms / 2000.0 for f in entries if f.active(node_id, now))

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
        self.counts: dict[str, int] = dict.fromkeys(COUNTS, 0)
        """Injected faults by summary column; a counter that is not one is a KeyError."""
        kinds = [(f, FAULT_KINDS.resolve(f.kind)) for f in self.plan]
        self.create_faults: Struck = [(f, k) for f, k in kinds if k.strikes(f, "create")]
        self.kill_faults: Struck = [(f, k) for f, k in kinds if k.strikes(f, "kill")]
        self.report_faults: Struck = [(f, k) for f, k in kinds if k.strikes(f, "report")]
        self.windows: dict[int, list[tuple[float, float]]] = {}
        """The windows each node is held down in, by node."""
        for f, k in kinds:
            spans = k.down_windows(f)
            if spans:
                assert f.node is not None, f"a {f.kind} needs a target node"
                self.windows.setdefault(f.node, []).extend(spans)

    def crash_events(self) -> list[tuple[float, int, bool]]:
        """(time, node, down) of every crash and comeback, in time order. A node is down over
        the union of its crash windows: windows that overlap or touch are one stretch, so the
        end of one never brings back a node that another still holds down."""
        events = []
        for node, spans in self.windows.items():
            for at, until in _union(spans):
                events.append((at, node, True))
                if until != float("inf"):
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

    def _draw(
        self, faults: Struck, node_id: int, now: float
    ) -> tuple[FaultSpec, type[FaultKind]] | None:
        for f, kind in faults:
            if f.active(node_id, now) and self.random() < f.settings.fraction:
                return f, kind
        return None

    def create(self, node: Node, sandbox_id: int, shape: Shape, now: float) -> Outcome:
        """The create RPC as the node's side answers it, faults included."""
        if node.down:  # the node refuses (see Node.create); counted here
            self.counts["fault_down_creates"] += 1
            return node.create(sandbox_id, shape)
        if not self.create_faults:
            return node.create(sandbox_id, shape)
        struck = self._draw(self.create_faults, node.node_id, now)
        if struck is None:
            return node.create(sandbox_id, shape)
        fault, kind = struck
        return kind.on_rpc(fault, node, sandbox_id, shape, self.counts)

    def kill(self, node: Node, sandbox_id: int, now: float) -> Outcome:
        """The kill RPC as the node's side answers it, faults included."""
        if node.down:
            self.counts["fault_down_kills"] += 1
            return node.kill(sandbox_id)
        if not self.kill_faults:
            return node.kill(sandbox_id)
        struck = self._draw(self.kill_faults, node.node_id, now)
        if struck is None:
            return node.kill(sandbox_id)
        fault, kind = struck
        return kind.on_rpc(fault, node, sandbox_id, None, self.counts)

    def report(self, node: Node, now: float, with_ids: bool) -> Report | None:
        """The node's heartbeat, or None when it is down or this report is lost (a down node
        draws nothing)."""
        if self.report_faults and not node.down:
            struck = self._draw(self.report_faults, node.node_id, now)
            if struck is not None:
                fault, kind = struck
                kind.on_report(fault, self.counts)
                return None
        return node.beat(now, with_ids)
