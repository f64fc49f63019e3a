"""Which of upstream's eligibility rules a placement breaks: the create's `excluded` nodes, its
labels, its CPU family and the memory over-commit limit. The rules are the placement filters
themselves (`ELIGIBLE`, plus `excluded`), asked about the chosen node: an in-process pipeline
holds to them by construction (the run's `placements_keep_rules` invariant says it did), an
external scheduler's answer is checked against them (`external.on_violation`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from harness.model.scheduling.placement.algorithms import ELIGIBLE
from harness.model.scheduling.placement.plugin import Filter
from harness.model.scheduling.placement.registries import FILTERS, resolve

if TYPE_CHECKING:
    from harness.model.scheduling.placement.placement_keys import PlacementSpec
    from harness.model.scheduling.replica_state import ReplicaState
    from harness.model.workload.request import CreateRequest

RULES: Final = tuple(
    (FILTERS.resolve(f).rule or f) for f in ("excluded", *ELIGIBLE)
)  # `Filter.rule`: the summary's `violations_<rule>` columns
"""The rules a placement is checked against, in the order a violation names them."""


class Eligibility:
    """The eligibility filters under one replica's rules (a filter that can never reject a node
    under them, `memory_overcommit` with M = 0, is left out, as a pipeline leaves it out)."""

    __slots__ = ("checks",)

    def __init__(self, rules: PlacementSpec) -> None:
        self.checks: list[tuple[str, Filter]] = []
        for name in ("excluded", *ELIGIBLE):
            check: Filter = resolve("filters", name)(rules)
            if check.needed():
                self.checks.append((check.rule or name, check))

    def broken(self, replica: ReplicaState, node: int, req: CreateRequest, now: float) -> str:
        """The rules placing `req` on `node` breaks, joined by "+" ("" when none), judged on the
        replica's view at `now` as its filters judge a candidate."""
        broken = ""
        for rule, check in self.checks:
            if check.applies(replica, req) and not check.passes(replica, node, req, now):
                broken = rule if not broken else broken + "+" + rule
        return broken

    def why(self, replica: ReplicaState, node: int, req: CreateRequest, broken: str) -> str:
        """What each of the `broken` rules (as `broken` gives them) asked of `node` for `req`,
        and what the node has (`Filter.why_not`)."""
        checks = dict(self.checks)
        return "; ".join(checks[rule].why_not(replica, node, req) for rule in broken.split("+"))
