"""`staggered`: each node at a phase of its own."""

from __future__ import annotations

import random

from harness.model.cluster.phases.phase import BeatGroup, Phase
from harness.model.random_streams import uniforms


class Staggered(Phase):
    """Each node at its own phase, drawn uniformly over one interval (in node order)."""

    name = "staggered"

    @staticmethod
    def groups(node_ids: list[int], interval: float, rng: random.Random) -> list[BeatGroup]:
        phases = uniforms(rng, 0.0, interval, len(node_ids))
        return [(t, [i]) for t, i in zip(phases, node_ids, strict=True)]

    @staticmethod
    def earliest(interval: float) -> float:
        """A phase is drawn from [0, interval)."""
        return 0.0
