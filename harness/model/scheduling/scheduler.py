"""The scheduler (the API): chooses a node for each create and keeps its in-progress map.

Both engines call the same four steps: `start_create` (choose + StartPlacing), `finish_create`
(the RPC answer: Success, Skip or Fail), `start_kill` and `finish_kill`, plus `apply_report`.
Between a start and its finish the engine delivers the RPC; that gap is where the races live.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from enum import StrEnum

from librt.vecs import vec
from mypy_extensions import i64

from harness.model.cluster.heartbeat import Report
from harness.model.cluster.node import NodeInfo, Outcome
from harness.model.scheduling.ledger import Ledger
from harness.model.scheduling.placement import Pipeline
from harness.model.scheduling.placement.placement_keys import PlacementSpec
from harness.model.workload.request import CreateRequest

__all__ = ["PlacementSpec", "Scheduler", "Step"]


class Step(StrEnum):
    """What the engine does next with a create after the RPC answer."""

    PLACED = "placed"
    RETRY = "retry"
    FAILED = "failed"


class Scheduler:
    """One scheduler replica: the nodes' static facts it learned when they registered
    (`nodes`), its ledger (view), in-progress map and random stream."""

    def __init__(
        self, nodes: Sequence[NodeInfo], rules: PlacementSpec, ledger: Ledger, rng: random.Random
    ) -> None:
        self.rules = rules
        self.nodes = nodes
        self.ledger = ledger
        self.random = rng.random
        self.n = len(nodes)
        # The in-progress map, node by node: how many creates are in progress and their
        # vCPUs. Counts and sums in native vectors rather than a dict of sandbox IDs per node:
        # each create's own ID is its request's, so the map only ever needs these two, and a
        # vector is read without visiting an object per node (the most frequent reads of a
        # placement, at 10,000 nodes mostly waits on memory).
        self.starting = vec[i64]([0] * self.n)
        self.pending_cpu = vec[float]([0.0] * self.n)
        # Kills sent and not answered yet, per node: the accounting error's other bound.
        self.killing = vec[i64]([0] * self.n)
        self.killing_cpu = vec[float]([0.0] * self.n)
        # While every node has at least this many vCPUs, no request needs a CPU filter.
        self.min_cpu_count = min((info.cpu_count for info in nodes), default=0)
        self.reserved = self._reserved_of(ledger)
        self.retry_refused = rules.retry_refused
        self.pipeline = Pipeline(rules)
        self.placed_hooks = self.pipeline.placed_hooks

    def _reserved_of(self, ledger: Ledger) -> Callable[[int, float], float]:
        """`reserved(node, now)`, the score's `reserved`: the believed allocation, plus the
        vCPUs of creates in progress on the node when the strategy counts them. Built once:
        choose calls it for every candidate."""
        believed, pending = ledger.believed_cpu, self.pending_cpu
        if not ledger.counts_in_progress:
            return believed

        def reserved(node: int, now: float) -> float:
            return believed(node, now) + pending[node]

        return reserved

    def choose(self, req: CreateRequest, now: float) -> int | None:
        """The node the placement pipeline picks for `req`; None: no candidate."""
        return self.pipeline.choose(self, req, now)

    def start_create(self, req: CreateRequest, now: float) -> int | None:
        """Choose a node and StartPlacing on it; None means "failed to place"."""
        node = self.pipeline.choose(self, req, now)
        if node is None:
            req.failure = "no_candidate"
            return None
        self.starting[node] += 1
        self.pending_cpu[node] += req.vcpu
        req.node = node
        req.rpcs += 1
        self.ledger.create_started(req, now)
        return node

    def finish_create(
        self, req: CreateRequest, outcome: Outcome, now: float, response: Report | None = None
    ) -> Step:
        node = req.node
        _leave(self.starting, self.pending_cpu, req, "create")
        self.ledger.create_finished(req, outcome, now, response)
        if outcome is Outcome.OK:
            req.attempts += 1
            if self.placed_hooks:
                for placed in self.placed_hooks:
                    placed(self, req, now)
            return Step.PLACED
        if outcome is Outcome.RESOURCE_EXHAUSTED:
            req.skips += 1
            if not self.retry_refused:
                req.failure = "refused"
                return Step.FAILED
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
        self.killing[req.node] += 1
        self.killing_cpu[req.node] += req.vcpu

    def finish_kill(
        self, req: CreateRequest, outcome: Outcome, now: float, response: Report | None = None
    ) -> None:
        _leave(self.killing, self.killing_cpu, req, "kill")
        self.ledger.kill_finished(req, outcome, now, response)


def _leave(counts: vec[i64], vcpus: vec[float], req: CreateRequest, what: str) -> None:
    """`req`'s create or kill (`what`) is no longer in progress on its node: one less in the
    node's count, its vCPUs out of the node's sum, which is exactly 0 once the count is (no
    float residue). A count below zero is the harness's bug, not a run's outcome."""
    node = req.node
    left = counts[node] - 1
    if left < 0:
        raise ValueError(f"sandbox {req.sandbox_id}: no {what} in progress on node {node}")
    counts[node] = left
    vcpus[node] = vcpus[node] - req.vcpu if left else 0.0
