"""`aligned`: every node reports at the same instants."""

from __future__ import annotations

import random

from harness.model.cluster.phases.phase import BeatGroup, Phase


class Aligned(Phase):
    """Every node reports at the same instants: one group."""

    name = "aligned"
    together = True

    @staticmethod
    def groups(node_ids: list[int], interval: float, rng: random.Random) -> list[BeatGroup]:
        return [(Aligned.earliest(interval), list(node_ids))]

    @staticmethod
    def earliest(interval: float) -> float:
        """One interval after the pre-run sync."""
        return interval
