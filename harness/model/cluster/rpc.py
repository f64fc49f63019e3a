"""The wire between a scheduler and its nodes: how long each leg of an RPC takes, and when the
caller hears the answer.

An RPC has two legs: the node acts at the end of the first, the caller hears the answer at the
end of the second, so a report taken between the two sees a sandbox the scheduler has not yet
been told about (the races of the reference are reachable, not modelled by hand). Latencies
are configured as round trips in ms; everything here is in model seconds.
"""

from __future__ import annotations

from typing import Final

from harness.model.cluster.faults import SlowNodes
from harness.model.cluster.node import Outcome


class Rpc:
    """Which RPC (small ints: they index `RpcModel.legs`)."""

    CREATE: Final = 0
    KILL: Final = 1


class RpcModel:
    """Legs of create and kill RPCs (half their round trip, plus any slow-node delay), and the
    caller's timeout for a create whose answer never comes."""

    __slots__ = ("legs", "slow", "timeout")

    def __init__(
        self, create_ms: float, kill_ms: float, timeout_ms: float, slow: SlowNodes
    ) -> None:
        # A list: compiled, a tuple indexed by a variable is boxed again on every read.
        self.legs = [create_ms / 2000.0, kill_ms / 2000.0]
        self.timeout = timeout_ms / 1000.0
        self.slow = slow if slow.slow else None
        """The slow nodes, if any: a run without asks nothing of them (interpreted) per RPC."""

    def leg(self, rpc: int, node_id: int, now: float) -> float:
        """Seconds of one leg of `rpc` to `node_id` sent (or answered) at `now`."""
        slow = self.slow
        if slow is not None:
            return self.legs[rpc] + slow.extra_leg(node_id, now)
        return self.legs[rpc]

    def answer_delay(self, outcome: Outcome, leg: float) -> float:
        """From the node's action to the caller hearing of it: the answer's leg, or for a lost
        answer (TIMEOUT) what is left of the caller's timeout after the first leg."""
        if outcome is Outcome.TIMEOUT:
            return max(self.timeout - leg, 0.0)
        return leg
