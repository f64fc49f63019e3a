"""The simulated cluster a run starts from: its node pools, each node's size, labels and CPU
family, and its pre-existing load.

A cluster is one pool (the keys `nodes`, `cpu_count`, `memory_mib`, `initial_cpu_*`) or a list
of `[[cluster.pools]]`; nodes are numbered pool after pool, in the order of the list.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from harness.model.cluster.node import Node, NodeInfo, nodes_alike
from harness.model.random_streams import randints
from harness.model.tunables import key


@dataclass(frozen=True)
class PoolSpec:
    """One `[[cluster.pools]]` entry: `count` alike nodes."""

    count: int = key(1, "Nodes in the pool.", ge=1)
    cpu_count: int = key(192, "vCPUs per node.", ge=1)
    memory_mib: float = key(524288.0, "Memory per node (MiB).", gt=0)
    labels: list[str] = key([], "Labels every node of the pool carries.")
    cpu_family: str = key("", "The nodes' CPU family; empty: none named.")
    initial_cpu_allocated: list[int] = key(
        [0, 0], "Pre-existing allocated vCPUs per node, drawn uniformly from [lo, hi]."
    )
    initial_cpu_per_node: list[float] = key(
        [], "Explicit pre-existing vCPUs, one per node (overrides the [lo, hi] draw)."
    )

    def info(self) -> NodeInfo:
        return NodeInfo(self.cpu_count, self.memory_mib, frozenset(self.labels), self.cpu_family)


NODE_METRICS = ("own", "bench_double_count")
"""What a node's metrics are (`cluster.node_metrics`)."""
SINGLE_POOL_KEYS = (
    "nodes",
    "cpu_count",
    "memory_mib",
    "initial_cpu_allocated",
    "initial_cpu_per_node",
)
"""The keys that describe a cluster of one pool; `pools` replaces them."""


@dataclass(frozen=True)
class ClusterSpec:
    nodes: int = key(10, "Number of simulated nodes.", ge=1)
    cpu_count: int = key(192, "vCPUs per node.", ge=1)
    memory_mib: float = key(524288.0, "Memory per node (MiB).", gt=0)
    initial_cpu_allocated: list[int] = key(
        [0, 0], "Pre-existing allocated vCPUs per node, drawn uniformly from [lo, hi]."
    )
    initial_cpu_per_node: list[float] = key(
        [], "Explicit pre-existing vCPUs, one per node (overrides the [lo, hi] draw)."
    )
    pools: tuple[PoolSpec, ...] = key(
        (),
        "Node pools ([[cluster.pools]], keys below), numbered in order; they replace nodes, "
        "cpu_count, memory_mib and initial_cpu_*. Empty: one pool of those keys.",
    )
    create_latency_ms: float = key(
        1.0, "Round trip of the create RPC; the node acts at its midpoint.", ge=0
    )
    kill_latency_ms: float = key(1.0, "Round trip of the kill RPC.", ge=0)
    create_cold_ms: float = key(
        0.0,
        "Node-side time of a create whose template the node has not cached, between acting "
        "and answering (added to the round trip).",
        ge=0,
    )
    create_warm_ms: float = key(
        0.0, "Node-side time of a create whose template the node has cached.", ge=0
    )
    node_metrics: str = key(
        "own",
        "own: a node admits and reports on its own sandboxes. Or bench_double_count: a "
        "model of the in-process shortcut of upstream's second benchmark, not of production: "
        "the node's metrics are the scheduler's optimistically raised view, so a create is "
        "added twice (the scheduler's add, then the node's own), admission reads the doubled "
        "value, a kill subtracts once.",
        choices=NODE_METRICS,
    )
    template_cache: int = key(
        16,
        "Templates a node keeps cached: those of its most recent creates (an LRU); 0: none.",
        ge=0,
    )

    def node_pools(self) -> list[PoolSpec]:
        """The pools, or the one pool the single-pool keys describe."""
        if self.pools:
            return list(self.pools)
        return [
            PoolSpec(
                self.nodes,
                self.cpu_count,
                self.memory_mib,
                initial_cpu_allocated=self.initial_cpu_allocated,
                initial_cpu_per_node=self.initial_cpu_per_node,
            )
        ]

    @property
    def node_count(self) -> int:
        """Nodes in the cluster, every pool's."""
        return sum(p.count for p in self.pools) if self.pools else self.nodes


def registrations(spec: ClusterSpec) -> list[NodeInfo]:
    """Each node's static facts, node by node: what every scheduler replica learns when the
    nodes register at start-up. One shared object per pool."""
    return [info for pool in spec.node_pools() for info in [pool.info()] * pool.count]


def build_nodes(spec: ClusterSpec, overcommit: float, rng: random.Random) -> list[Node]:
    """Nodes 0..n-1, pool after pool, with the initial allocated load the spec asks for (drawn
    pool by pool, node by node, from `rng`); `overcommit` is the ratio R a node admits up to
    (R * cpu_count)."""
    nodes: list[Node] = []
    for pool in spec.node_pools():
        if pool.initial_cpu_per_node:
            loads = [float(v) for v in pool.initial_cpu_per_node]
        else:
            lo, hi = pool.initial_cpu_allocated
            loads = [float(v) for v in randints(rng, lo, hi, pool.count)]
        nodes += nodes_alike(
            len(nodes),
            pool.cpu_count,
            pool.memory_mib,
            overcommit,
            loads,
            spec.template_cache,
            spec.node_metrics == "bench_double_count",
        )
    return nodes
