"""The simulated cluster a run starts from: nodes, their size and pre-existing load."""

from __future__ import annotations

import random
from dataclasses import dataclass

from harness.node import Node
from harness.spec import key


@dataclass(frozen=True)
class ClusterSpec:
    nodes: int = key(10, "Number of simulated nodes.", ge=1)
    cpu_count: int = key(192, "vCPUs per node.", ge=1)
    memory_mib: float = key(524288.0, "Memory per node (MiB).", gt=0)
    initial_cpu_allocated: list[int] = key(
        [0, 0], "Pre-existing allocated vCPUs per node, drawn uniformly from [lo, hi]."
    )
    initial_cpu_per_node: list[float] = key(
        [], "Explicit pre-existing vCPUs, one per node (overrides initial_cpu_allocated)."
    )
    create_latency_ms: float = key(
        1.0, "Round trip of the create RPC; the node acts at its midpoint.", gt=0
    )
    kill_latency_ms: float = key(1.0, "Round trip of the kill RPC.", gt=0)


def build_nodes(spec: ClusterSpec, overcommit: float, rng: random.Random) -> list[Node]:
    """Nodes 0..n-1 with the initial allocated load the spec asks for; `overcommit` is the
    ratio R a node admits up to (R * cpu_count)."""
    if spec.initial_cpu_per_node:
        loads = [float(v) for v in spec.initial_cpu_per_node]
    else:
        lo, hi = spec.initial_cpu_allocated
        loads = [float(rng.randint(lo, hi)) for _ in range(spec.nodes)]
    return [
        Node(i, spec.cpu_count, spec.memory_mib, overcommit, load) for i, load in enumerate(loads)
    ]
