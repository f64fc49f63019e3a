"""The scheduler (the API): chooses a node for each create and keeps its in-progress map.

Both engines call the same four steps: `start_create` (choose + StartPlacing), `finish_create`
(the RPC answer: Success, Skip or Fail), `start_kill` and `finish_kill`, plus `apply_report`.
Between a start and its finish the engine delivers the RPC; that gap is where the races live.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from enum import StrEnum

from harness.ledger import Ledger
from harness.node import Outcome
from harness.placement import best, sample, score
from harness.report import Report
from harness.request import CreateRequest


@dataclass(frozen=True, slots=True)
class PlacementRules:
    k: int = 3
    r: float = 4.0
    alpha: float = 0.5
    too_many_starting: bool = False
    max_starting: int = 3
    max_attempts: int = 3
    deadline_s: float = 30.0


class Step(StrEnum):
    """What the engine does next with a create after the RPC answer."""

    PLACED = "placed"
    RETRY = "retry"
    FAILED = "failed"


class Scheduler:
    """One scheduler replica: its ledger (view), in-progress map and random stream."""

    def __init__(
        self, cpu_counts: list[int], rules: PlacementRules, ledger: Ledger, rng: random.Random
    ) -> None:
        self.rules = rules
        self.ledger = ledger
        self.random = rng.random
        self.n = len(cpu_counts)
        self.in_progress: list[dict[int, float]] = [{} for _ in cpu_counts]
        self.pending_cpu = [0.0] * self.n
        # Kills sent and not answered yet, per node: the accounting error's other bound.
        self.killing: list[dict[int, float]] = [{} for _ in cpu_counts]
        self.killing_cpu = [0.0] * self.n
        # While every node has at least this many vCPUs, no request needs a CPU filter.
        self.min_cpu_count = min(cpu_counts, default=0)

    def reserved(self, node: int, now: float) -> float:
        """`reserved` of the score: the believed allocation, plus pending vCPUs if counted."""
        believed = self.ledger.believed_cpu(node, now)
        if self.ledger.counts_in_progress:
            return believed + self.pending_cpu[node]
        return believed

    def choose(self, vcpu: float, excluded: set[int] | None, now: float) -> int | None:
        rules = self.rules
        views = self.ledger.views
        in_progress = self.in_progress
        believed = self.ledger.believed_cpu
        pending = self.pending_cpu if self.ledger.counts_in_progress else None
        eligible = None
        if excluded is not None or rules.too_many_starting or vcpu > self.min_cpu_count:

            def eligible(node: int) -> bool:
                if excluded is not None and node in excluded:
                    return False
                if rules.too_many_starting and len(in_progress[node]) > rules.max_starting:
                    return False
                return views[node].cpu_count >= vcpu

        def score_of(node: int) -> float:
            view = views[node]
            reserved = (
                believed(node, now) if pending is None else believed(node, now) + pending[node]
            )
            return score(vcpu, reserved, view.cpu_percent, view.cpu_count, rules.r, rules.alpha)

        return best(sample(self.random, self.n, rules.k, eligible), score_of)

    def start_create(self, req: CreateRequest, now: float) -> int | None:
        """Choose a node and StartPlacing on it; None means "failed to place"."""
        node = self.choose(req.vcpu, req.excluded, now)
        if node is None:
            req.failure = "no_candidate"
            return None
        self.in_progress[node][req.sandbox_id] = req.vcpu
        self.pending_cpu[node] += req.vcpu
        req.node = node
        req.rpcs += 1
        self.ledger.create_started(req, now)
        return node

    def finish_create(
        self, req: CreateRequest, outcome: Outcome, now: float, response: Report | None = None
    ) -> Step:
        node = req.node
        vcpu = self.in_progress[node].pop(req.sandbox_id)
        self.pending_cpu[node] -= vcpu
        if not self.in_progress[node]:
            self.pending_cpu[node] = 0.0  # no float residue once the node has nothing pending
        self.ledger.create_finished(req, outcome, now, response)
        if outcome is Outcome.OK:
            req.attempts += 1
            return Step.PLACED
        if outcome is Outcome.RESOURCE_EXHAUSTED:
            req.skips += 1
        else:
            req.attempts += 1
            if req.excluded is None:
                req.excluded = set()
            req.excluded.add(node)
            if req.attempts >= self.rules.max_attempts:
                req.failure = "attempts_exhausted"
                return Step.FAILED
        if now >= req.deadline:
            req.failure = "deadline"
            return Step.FAILED
        return Step.RETRY

    def start_kill(self, req: CreateRequest, now: float) -> None:
        """Called when the kill RPC for `req` (placed on `req.node`) is sent."""
        self.killing[req.node][req.sandbox_id] = req.vcpu
        self.killing_cpu[req.node] += req.vcpu

    def finish_kill(
        self, req: CreateRequest, outcome: Outcome, now: float, response: Report | None = None
    ) -> None:
        node = req.node
        self.killing_cpu[node] -= self.killing[node].pop(req.sandbox_id)
        if not self.killing[node]:
            self.killing_cpu[node] = 0.0
        self.ledger.kill_finished(req, outcome, now, response)

    def apply_report(self, report: Report, now: float) -> None:
        self.min_cpu_count = min(self.min_cpu_count, report.cpu_count)
        self.ledger.apply_report(report, now)
