"""`too_many_starting` (also `starting_cap`): not a node with more than `max_starting`
(`[placement.starting_cap]`: its name is also the `[placement]` key that adds it) creates in
progress on this replica, upstream's TooManyStarting. The least-busy designs always
apply it; any other pipeline does with `placement.too_many_starting` (upstream's older flag),
which adds it (`harness.model.scheduling.placement.pipeline.Parts`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mypy_extensions import mypyc_attr

from harness.model.scheduling.placement.plugin import Filter
from harness.model.scheduling.plugin_settings import StartingCapSettings

if TYPE_CHECKING:
    from harness.model.scheduling.placement.placement_keys import PlacementSpec
    from harness.model.scheduling.replica_state import ReplicaState
    from harness.model.workload.request import CreateRequest


@mypyc_attr(allow_interpreted_subclasses=True)
class TooManyStarting(Filter):
    """Not a node with more than `max_starting` creates in progress."""

    name = "too_many_starting"
    aliases = ("starting_cap",)
    Settings = StartingCapSettings

    def __init__(self, rules: PlacementSpec) -> None:
        super().__init__(rules)
        self.max_starting: int = self.settings.max_starting
        """Read once: this runs for every candidate."""

    def passes(self, replica: ReplicaState, node: int, req: CreateRequest, now: float) -> bool:
        return replica.starting[node] <= self.max_starting
