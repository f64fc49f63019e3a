"""`lost_reports`: a share of heartbeat reports never arrive."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.model.cluster.faults.fault_kind import Counter, FaultKind, Where
from harness.model.cluster.faults.fault_window import Drawn

if TYPE_CHECKING:
    from harness.model.cluster.faults.fault_window import FaultWindow


class LostReports(FaultKind):
    name = "lost_reports"
    Settings = Drawn
    what = "a fraction of heartbeat reports never arrive"
    counters = (
        Counter(
            "fault_lost_reports",
            Where.REPORT,
            "Heartbeat reports dropped by a `lost_reports` fault.",
        ),
    )

    @staticmethod
    def strikes(spec: FaultWindow, where: str) -> bool:
        return where == "report"

    @staticmethod
    def on_report(spec: FaultWindow, counts: dict[str, int]) -> None:
        counts["fault_lost_reports"] += 1
