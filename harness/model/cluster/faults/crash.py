"""`crash`: the node dies (sandboxes lost, RPCs refused, no reports) and comes back empty."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from harness.model.cluster.faults.fault_kind import Counter, FaultKind, Where

if TYPE_CHECKING:
    from harness.model.cluster.faults.fault_window import FaultWindow


class Crash(FaultKind):
    name = "crash"
    needs_node = True
    what = "the node dies (sandboxes lost, RPCs fail, no reports); back empty at until_s"
    counters = (
        Counter("fault_down_creates", Where.RPC, "Create RPCs sent to a node that was down."),
        Counter("fault_down_kills", Where.RPC, "Kill RPCs sent to a node that was down."),
        Counter(
            "fault_crashes",
            Where.NODE,
            "Node crashes (a `crash` stretch, or on Ray a node group's process dying).",
        ),
    )
    """Creates and kills a down node refused, and nodes crashed (also by their process dying,
    on engines with processes)."""

    @staticmethod
    def down_windows(spec: FaultWindow) -> list[tuple[float, float]]:
        return [(spec.at_s, math.inf if spec.until_s is None else spec.until_s)]
