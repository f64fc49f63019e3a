"""The scheduler's belief of each node's load, and the interface every ledger strategy implements.

A strategy decides what the scheduler believes between two reports: nothing new (`stale`),
pending creates (`in_progress`), its own successful calls (`optimistic`), and so on. The
scheduler asks it two questions when it scores a node (`believed_cpu`, `counts_in_progress`)
and tells it everything that happens (reports, creates, kills), so a new strategy is one new
class and no engine changes."""

from __future__ import annotations

from typing import Any, ClassVar, Final

from mypy_extensions import mypyc_attr

from harness.model.cluster.heartbeat import Report
from harness.model.cluster.node import Outcome
from harness.model.tunables import PluginSettings
from harness.model.workload.request import CreateRequest

NO_IDS: Final[frozenset[int]] = frozenset()


class NodeView:
    """What the scheduler last heard from one node, plus whatever its strategy adds."""

    __slots__ = (
        "cpu_allocated",
        "cpu_count",
        "cpu_percent",
        "memory_allocated_mib",
        "memory_total_mib",
        "sandbox_ids",
        "seq",
        "taken_at",
    )

    def __init__(self, cpu_count: int) -> None:
        self.cpu_count = cpu_count
        self.cpu_allocated = 0.0
        self.cpu_percent = 0.0
        self.memory_allocated_mib = 0.0
        self.memory_total_mib = 0.0
        """0 until a report says: upstream's memory filter is off for a node that has not
        reported its total."""
        self.seq = 0
        self.taken_at = float("-inf")
        self.sandbox_ids = NO_IDS

    def overwrite(self, report: Report) -> None:
        # One unpacking in `Report`'s field order rather than a read per field: every replica
        # applies every report, so this runs more often than a create.
        (
            _,
            self.seq,
            self.taken_at,
            self.cpu_count,
            self.cpu_allocated,
            self.cpu_percent,
            self.memory_total_mib,
            self.memory_allocated_mib,
            _,
            _,
            ids,
        ) = report
        self.sandbox_ids = ids or NO_IDS


@mypyc_attr(allow_interpreted_subclasses=True)
class Strategy:
    """Base strategy: the view is the last report applied, blindly overwritten as upstream does.

    Subclasses override the hooks they care about. Every hook gets the time as an argument; a
    ledger never reads a clock."""

    name: ClassVar[str] = ""
    counts_in_progress: ClassVar[bool] = True
    """Whether vCPUs of creates still in flight count as taken
    (`harness.model.scheduling.replica_state.ReplicaState.reserved`)."""
    wants_sandbox_ids: ClassVar[bool] = False
    """Whether reports must list the node's sandbox IDs for this strategy."""
    wants_response_report: ClassVar[bool] = False
    """Whether create and kill answers must carry the node's fresh report (`response`)."""
    drops_old_reports: ClassVar[bool] = False
    """Whether a report not newer (by `seq`) than the view is dropped; upstream applies it."""
    exact_when_drained: ClassVar[bool] = False
    """Whether the view is the truth once the run has drained and every live node has sent one
    last report: the end-of-run checks then hold the strategy to it
    (`harness.results.invariants`)."""
    view_is_last_report: ClassVar[bool] = False
    """Whether a node's view is the last report applied and nothing else: the strategy adds
    nothing to it, or keeps what it adds apart (as `ttl` does)."""

    Settings: ClassVar[type[PluginSettings]] = PluginSettings
    """Its own settings, written under `[placement.<name>]` as a placement plugin's
    (`harness.model.scheduling.placement.plugin.Plugin.Settings`); the base has none."""

    def __init__(self, cpu_counts: list[int], settings: PluginSettings | None = None) -> None:
        self.views = [NodeView(c) for c in cpu_counts]
        self.settings: Any = type(self).Settings() if settings is None else settings
        """Its `Settings` as the config gives them (`PlacementSpec.settings_of`)."""
        self.hears_reports = type(self).report_applied is not Strategy.report_applied
        """Whether the strategy has a `report_applied`: every replica applies every report, the
        most frequent message of a large run, so a hook left empty is not called."""
        self.checks_seq = self.drops_old_reports
        """`drops_old_reports`, read once: compiled, a class attribute is a lookup on the type
        for every report."""

    @classmethod
    def ignores_unchanged_reports(cls) -> bool:
        """Whether a report that says what the last one applied said (but for `seq` and
        `taken_at`) leaves this strategy as it was: then nodes need not send it
        (`harness.wiring.scenario.quiet_nodes`)."""
        return (
            cls.view_is_last_report
            and not cls.drops_old_reports
            and cls.report_applied is Strategy.report_applied
        )

    def believed_cpu(self, node: int, now: float) -> float:
        """Allocated vCPUs this scheduler believes the node has at `now`, excluding
        in-progress creates."""
        return self.views[node].cpu_allocated

    def apply_report(self, report: Report, now: float) -> None:
        view = self.views[report[0]]  # node_id: compiled, a field by name is a lookup
        if self.checks_seq and report.seq <= view.seq:
            return
        view.overwrite(report)
        if self.hears_reports:
            self.report_applied(report, now)

    def report_applied(self, report: Report, now: float) -> None:
        """Called after a report has overwritten the view (not for a dropped one)."""

    def create_started(self, req: CreateRequest, now: float) -> None:
        """Called after `req.node` is chosen, before the create RPC is sent."""

    def create_finished(
        self, req: CreateRequest, outcome: Outcome, now: float, response: Report | None
    ) -> None:
        """Called when the create RPC's answer reaches the scheduler; `response` is the node's
        report at the time it answered, when `wants_response_report`."""

    def kill_finished(
        self, req: CreateRequest, outcome: Outcome, now: float, response: Report | None
    ) -> None:
        """Called when the kill RPC's answer reaches the scheduler."""
