"""The fault plan of a run, applied on the nodes' side: the one place both engines ask which
RPC fails, which report is lost, how slow a node is and when nodes crash.

Engines only schedule: they call `create`, `kill` and `report` instead of the node's own
methods, and `crash`/`restart` at the times `crash_events` gives. Random faults draw from a
stream of their own, so a plan changes no other draw of the run. Every injected fault is
counted in `counts`, for the summary and for tests to compare with what the scheduler saw.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable

from harness.config import FaultConfig
from harness.node import Node, Outcome
from harness.report import Report

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


def _active(fault: FaultConfig, node_id: int, now: float) -> bool:
    return (
        (fault.node is None or fault.node == node_id)
        and now >= fault.at_s
        and (fault.until_s is None or now < fault.until_s)
    )


class Faults:
    """The `[[faults]]` entries of a config for the nodes `node_ids` (all, or one group's)."""

    def __init__(
        self, faults: Iterable[FaultConfig], rng: random.Random, node_ids: Iterable[int]
    ) -> None:
        ids = set(node_ids)
        self.plan = [f for f in faults if f.node is None or f.node in ids]
        self.random = rng.random
        self.counts: Counter[str] = Counter(dict.fromkeys(COUNTS, 0))
        self.slow = {f.node: f for f in self.plan if f.kind == "slow_node"}
        self.create_faults = [
            f
            for f in self.plan
            if f.kind == "timeout" or (f.kind == "rpc_error" and f.rpc == "create")
        ]
        self.kill_faults = [f for f in self.plan if f.kind == "rpc_error" and f.rpc == "kill"]
        self.report_faults = [f for f in self.plan if f.kind == "lost_reports"]

    def crash_events(self) -> list[tuple[float, int, bool]]:
        """(time, node, down) of every crash and comeback, in time order."""
        events = []
        for f in self.plan:
            if f.kind == "crash":
                events.append((f.at_s, f.node, True))
                if f.until_s is not None:
                    events.append((f.until_s, f.node, False))
        return sorted(events)

    def crash(self, node: Node, down: bool) -> None:
        """Apply one crash event to the node."""
        if down and not node.down:
            node.crash()
            self.counts["fault_crashes"] += 1
        elif not down:
            node.restart()

    def extra_leg(self, node_id: int, now: float) -> float:
        """Extra seconds on each leg of an RPC to this node (half a slow node's round trip)."""
        f = self.slow.get(node_id)
        return f.latency_ms / 2000.0 if f is not None and _active(f, node_id, now) else 0.0

    def _draw(self, faults: list[FaultConfig], node_id: int, now: float) -> FaultConfig | None:
        for f in faults:
            if _active(f, node_id, now) and self.random() < f.fraction:
                return f
        return None

    def create(
        self, node: Node, sandbox_id: int, vcpu: float, memory_mib: float, usage: float, now: float
    ) -> Outcome:
        """The create RPC as the node's side answers it, faults included. TIMEOUT means the
        node acted (or not) but its answer never arrives: the scheduler gives up later."""
        if node.down:  # the node refuses (see Node.create); counted here
            self.counts["fault_down_creates"] += 1
            return node.create(sandbox_id, vcpu, memory_mib, usage)
        fault = self._draw(self.create_faults, node.node_id, now) if self.create_faults else None
        if fault is None:
            return node.create(sandbox_id, vcpu, memory_mib, usage)
        if fault.kind == "timeout":
            self.counts["fault_timeouts"] += 1
            node.create(sandbox_id, vcpu, memory_mib, usage)
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

    def _error(self, fault: FaultConfig) -> Outcome:
        if fault.error == "resource_exhausted":
            self.counts["fault_rpc_exhausted"] += 1
            return Outcome.RESOURCE_EXHAUSTED
        self.counts["fault_rpc_failed"] += 1
        return Outcome.FAILED

    def report(self, node: Node, now: float, with_ids: bool) -> Report | None:
        """The node's heartbeat, or None when it is down or this report is lost."""
        if node.down:
            return None
        if self.report_faults and self._draw(self.report_faults, node.node_id, now) is not None:
            self.counts["fault_lost_reports"] += 1
            return None
        return node.report(now, with_ids)
