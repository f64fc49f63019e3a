"""What a heartbeat phase kind is (`Phase`): when in each interval each node reports."""

from __future__ import annotations

import random
from typing import ClassVar

BeatGroup = tuple[float, list[int]]
"""(first beat time, node IDs): nodes that report together, every interval from then on."""


class Phase:
    """How nodes' beats are spread over an interval (`heartbeat.phase`); registered by name in
    `harness.model.cluster.phases.PHASES`."""

    name: ClassVar[str] = ""
    together: ClassVar[bool] = False
    """Whether every node reports at the same instants: rounds of reports that every replica
    applies at once, which the HTML report marks (`HeartbeatPlan.applied_at`)."""

    @staticmethod
    def groups(node_ids: list[int], interval: float, rng: random.Random) -> list[BeatGroup]:
        """The beat groups of these nodes, with `rng` the run's heartbeat-phase stream."""
        raise NotImplementedError

    @staticmethod
    def earliest(interval: float) -> float:
        """The earliest first beat a group may have: the node that beats most often in a run
        starts there (`HeartbeatPlan.most_beats`)."""
        raise NotImplementedError
