"""What one scheduler replica knows, as placement plugins read it: the nodes' static facts, its
strategy (its view of the nodes), its in-progress map, its random stream, and
`in_progress_cpu` and `reserved`, the one rule for how much of a node's CPU it counts as taken.

Apart from `harness.model.scheduling.scheduler` (the steps that change it) so the placement
plugins, which the scheduler runs, can name the state they read without importing the
scheduler.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from librt.vecs import vec
from mypy_extensions import i64

from harness.model.cluster.node import NodeInfo
from harness.model.scheduling.strategy import Strategy


class ReplicaState:
    """One scheduler replica's state: the nodes' static facts it learned when they registered
    (`nodes`), its strategy (`strategy.views`), in-progress map and random stream."""

    def __init__(self, nodes: Sequence[NodeInfo], strategy: Strategy, rng: random.Random) -> None:
        self.nodes = nodes
        self.strategy = strategy
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
        self.counts_in_progress: bool = strategy.counts_in_progress
        """The strategy's `Strategy.counts_in_progress`, read once: compiled, a class attribute
        is a lookup on the type, and `reserved` runs for every candidate."""

    @property
    def ledger(self) -> Strategy:
        """Deprecated: `strategy`, the name this axis has everywhere (`harness.api` version 1
        keeps it working; see docs/reference/api.md)."""
        return self.strategy

    def in_progress_cpu(self, node: int) -> float:
        """The vCPUs of this replica's creates in progress on `node` that it counts as taken:
        all of them when the strategy counts them (`Strategy.counts_in_progress`), none
        otherwise. The one rule for creates in flight: `reserved` and every plugin that adds
        them to a node's load (`cpu_usage`) ask here, never `pending_cpu` itself."""
        return self.pending_cpu[node] if self.counts_in_progress else 0.0

    def reserved(self, node: int, now: float) -> float:
        """The vCPUs this replica counts as taken on `node` at `now`: its strategy's believed
        allocation plus `in_progress_cpu`. Every plugin that weighs a node's load against its
        size asks here (`reference`, `fits`, `bin_pack`)."""
        return self.strategy.believed_cpu(node, now) + self.in_progress_cpu(node)
