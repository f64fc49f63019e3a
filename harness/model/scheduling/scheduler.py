"""The scheduler (the API): chooses a node for each create and keeps its in-progress map.

Both engines call the same four steps: `start_create` (choose + StartPlacing), `finish_create`
(the RPC answer: Success, Skip or Fail), `start_kill` and `finish_kill`, plus `apply_report`.
Between a start and its finish the engine delivers the RPC; that gap is where the races live.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from enum import StrEnum
from typing import Protocol

from librt.vecs import vec
from mypy_extensions import i64

from harness.model.cluster.heartbeat import Report
from harness.model.cluster.node import NodeInfo, Outcome
from harness.model.scheduling.placement.eligibility import Eligibility
from harness.model.scheduling.placement.pipeline import Pipeline
from harness.model.scheduling.placement.placement_keys import PlacementSpec
from harness.model.scheduling.replica_state import ReplicaState
from harness.model.scheduling.strategy import Strategy
from harness.model.workload.request import CreateRequest

__all__ = ["PlacementSpec", "Scheduler", "Step"]


class Step(StrEnum):
    """What the engine does next with a create after the RPC answer."""

    PLACED = "placed"
    RETRY = "retry"
    FAILED = "failed"


class Choice(Protocol):
    """A chooser of nodes from outside the model's pipeline (`harness.external.replica`)."""

    def choose(self, scheduler: Scheduler, req: CreateRequest, now: float) -> int | None: ...

    def violated(self, scheduler: Scheduler, req: CreateRequest, node: int, rules: str) -> None:
        """Its answer `node` for `req` broke eligibility `rules` (joined by "+"): raise to stop
        the run, or return to let the placement go on, counted."""


class Scheduler(ReplicaState):
    """One scheduler replica: its state (`ReplicaState`), its placement pipeline and its rules;
    the steps that change the state."""

    def __init__(
        self,
        nodes: Sequence[NodeInfo],
        rules: PlacementSpec,
        strategy: Strategy,
        rng: random.Random,
        remote: Choice | None = None,
    ) -> None:
        super().__init__(nodes, strategy, rng)
        self.rules = rules
        self.retry_refused = rules.retry_refused
        self.max_asks = rules.max_asks
        self.pipeline = Pipeline(rules)
        self.remote = remote
        """Who chooses instead of the pipeline: an external scheduler, or None. Apart from the
        pipeline, so the pipeline stays a final compiled class (no interpreted subclass)."""
        self.placed_hooks = self.pipeline.placed_hooks if remote is None else []
        self.eligibility = Eligibility(rules)
        """Every choice is checked against upstream's eligibility rules: a pipeline's by its
        own filters already (the `placements_keep_rules` invariant), a remote one's not."""

    def choose(self, req: CreateRequest, now: float) -> int | None:
        """The node the placement pipeline (or the remote chooser) picks for `req`; None: no
        candidate."""
        remote = self.remote
        if remote is not None:
            return remote.choose(self, req, now)
        return self.pipeline.choose(self, req, now)

    def start_create(self, req: CreateRequest, now: float) -> int | None:
        """Choose a node and StartPlacing on it; None means "failed to place"."""
        node = self.choose(req, now)
        req.asks += 1
        if node is None:
            req.failure = "no_candidate"
            return None
        broken = self.eligibility.broken(self, node, req, now)
        if broken:
            self.violated(req, node, broken)
        self.starting[node] += 1
        self.pending_cpu[node] += req.vcpu
        req.node = node
        req.rpcs += 1
        self.strategy.create_started(req, now)
        return node

    def violated(self, req: CreateRequest, node: int, rules: str) -> None:
        """`req`'s placement on `node` breaks `rules`: recorded on the create (each rule once),
        and told to the remote chooser, which may stop the run."""
        for rule in rules.split("+"):
            if rule not in req.violated.split("+"):
                req.violated = rule if not req.violated else req.violated + "+" + rule
        remote = self.remote
        if remote is not None:
            remote.violated(self, req, node, rules)

    def finish_create(
        self, req: CreateRequest, outcome: Outcome, now: float, response: Report | None = None
    ) -> Step:
        node = req.node
        _leave(self.starting, self.pending_cpu, req, "create")
        self.strategy.create_finished(req, outcome, now, response)
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
        if self.max_asks and req.asks >= self.max_asks:
            req.failure = "asks_exhausted"
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
        self.strategy.kill_finished(req, outcome, now, response)


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
