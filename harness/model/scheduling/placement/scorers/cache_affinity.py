"""`cache_affinity`: upstream's build-ID cache affinity. Nodes this replica recently placed the
sandbox's template on get a bounded bonus among the K sampled, so creates tend to land where
the node still has the template cached (and start faster).

As upstream does it (`placement/affinity`), the scheduler keeps its own record, fed by its
successful creates, not by the nodes' reports: per template, the placements on each node,
capped at `max_hits`, for at most `top_nodes` nodes (those with the most; the fewest, then the
lowest node ID, make way), forgotten `ttl_s` after the template's last placement (its settings,
`[placement.cache_affinity]`). Upstream keeps it in Redis, shared by every API replica; here
each replica keeps its own (the same with one replica)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mypy_extensions import mypyc_attr

from harness.model.scheduling.placement.plugin import Scorer
from harness.model.scheduling.plugin_settings import CacheAffinitySettings

if TYPE_CHECKING:
    from harness.model.scheduling.placement.placement_keys import PlacementSpec
    from harness.model.scheduling.replica_state import ReplicaState
    from harness.model.workload.request import CreateRequest


@mypyc_attr(allow_interpreted_subclasses=True)
class CacheAffinity(Scorer):
    """-min(placements, max_hits) / max_hits: from 0 (never placed there) to -1, so its weight
    in `placement.scorers` is the largest bonus (upstream's MaxBonus; its default, 0.02, with
    10 hits of 0.002 each, is `cache_affinity=0.02`)."""

    name = "cache_affinity"
    Settings = CacheAffinitySettings

    def __init__(self, rules: PlacementSpec) -> None:
        super().__init__(rules)
        self.record: dict[str, tuple[float, dict[int, int]]] = {}
        """Template -> (time of its last placement, placements per node)."""

    def hits(self, template: str, now: float) -> dict[int, int]:
        """Placements per node of `template` that still count at `now`."""
        entry = self.record.get(template)
        if entry is None or now - entry[0] >= self.settings.ttl_s:
            return {}
        return entry[1]

    def placed(self, replica: ReplicaState, req: CreateRequest, now: float) -> None:
        template, node = req.shape.template, req.node
        hits = self.hits(template, now)
        hits[node] = hits.get(node, 0) + 1
        if len(hits) > self.settings.top_nodes:
            del hits[min(hits, key=lambda n: (hits[n], n))]
        self.record[template] = (now, hits)

    def scores(
        self, replica: ReplicaState, candidates: list[int], req: CreateRequest, now: float
    ) -> list[float]:
        hits = self.hits(req.shape.template, now)
        cap = self.settings.max_hits
        return [-min(hits.get(node, 0), cap) / cap for node in candidates]
