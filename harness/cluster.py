"""Builds the simulated cluster a run starts from: nodes with their pre-existing load."""

from __future__ import annotations

import random

from harness.config import Config
from harness.node import Node


def build_nodes(config: Config, rng: random.Random) -> list[Node]:
    """Nodes 0..n-1 with the initial allocated load the config asks for."""
    c = config.cluster
    if c.initial_cpu_per_node:
        loads = [float(v) for v in c.initial_cpu_per_node]
    else:
        lo, hi = c.initial_cpu_allocated
        loads = [float(rng.randint(lo, hi)) for _ in range(c.nodes)]
    return [
        Node(i, c.cpu_count, c.memory_mib, config.placement.r, load) for i, load in enumerate(loads)
    ]
