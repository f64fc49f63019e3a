"""`timeout`: a share of create RPCs get no answer; the node acts all the same."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.model.cluster.faults.fault_kind import Counter, FaultKind, Where
from harness.model.cluster.faults.fault_window import Drawn
from harness.model.cluster.node import Node, Outcome

if TYPE_CHECKING:
    from harness.model.cluster.faults.fault_window import FaultWindow
    from harness.model.workload.request import Shape


class Timeout(FaultKind):
    name = "timeout"
    Settings = Drawn
    what = "a fraction of create RPCs get no answer; the node acts all the same"
    counters = (
        Counter("fault_timeouts", Where.RPC, "Create RPCs left unanswered by a `timeout` fault."),
    )

    @staticmethod
    def strikes(spec: FaultWindow, where: str) -> bool:
        return where == "create"

    @staticmethod
    def on_rpc(
        spec: FaultWindow,
        node: Node,
        sandbox_id: int,
        shape: Shape | None,
        counts: dict[str, int],
    ) -> Outcome:
        """TIMEOUT: the node acted (or not) but its answer never arrives; the scheduler gives
        up later."""
        assert shape is not None, "a timeout strikes create RPCs only"
        counts["fault_timeouts"] += 1
        node.create(sandbox_id, shape)
        return Outcome.TIMEOUT
