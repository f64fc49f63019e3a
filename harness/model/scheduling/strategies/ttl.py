"""`ttl`: optimistic entries that expire, on top of a base that reports overwrite.

A successful create adds a +vCPU entry, a successful kill a -vCPU entry; each counts for `ttl_s`
(`[placement.ttl]`) and then expires. A report replaces only the base: reports carry aggregates, so
the scheduler cannot tell whether one already includes an entry, and an entry the report already
counts is counted twice until it expires (the 10-20 s overlap windows of the reference).
"""

from __future__ import annotations

from collections import deque

from mypy_extensions import mypyc_attr

from harness.model.cluster.heartbeat import Report
from harness.model.cluster.node import Outcome
from harness.model.scheduling.plugin_settings import TtlSettings
from harness.model.scheduling.strategy import Strategy
from harness.model.tunables import PluginSettings
from harness.model.workload.request import CreateRequest


@mypyc_attr(allow_interpreted_subclasses=True)
class TtlStrategy(Strategy):
    name = "ttl"
    counts_in_progress = True
    view_is_last_report = True
    Settings = TtlSettings

    def __init__(self, cpu_counts: list[int], settings: PluginSettings | None = None) -> None:
        super().__init__(cpu_counts, settings)
        self.ttl_s: float = self.settings.ttl_s
        """`[placement.ttl] ttl_s`, read once: this runs for every create and kill."""
        # Per node, (expires_at, vCPU) in insertion order: one TTL, so also in expiry order.
        self.entries: list[deque[tuple[float, float]]] = [deque() for _ in cpu_counts]
        self.extra = [0.0] * len(cpu_counts)

    def _expire(self, node: int, now: float) -> None:
        entries = self.entries[node]
        while entries and entries[0][0] <= now:
            self.extra[node] -= entries.popleft()[1]
        if not entries:
            self.extra[node] = 0.0  # no float residue once nothing is left

    def _enter(self, node: int, vcpu: float, now: float) -> None:
        self._expire(node, now)
        self.entries[node].append((now + self.ttl_s, vcpu))
        self.extra[node] += vcpu

    def believed_cpu(self, node: int, now: float) -> float:
        self._expire(node, now)
        return self.views[node].cpu_allocated + self.extra[node]

    def create_finished(
        self, req: CreateRequest, outcome: Outcome, now: float, response: Report | None
    ) -> None:
        if outcome is Outcome.OK:
            self._enter(req.node, req.vcpu, now)

    def kill_finished(
        self, req: CreateRequest, outcome: Outcome, now: float, response: Report | None
    ) -> None:
        if outcome is Outcome.OK:
            self._enter(req.node, -req.vcpu, now)
