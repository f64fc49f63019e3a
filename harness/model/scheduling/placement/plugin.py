"""The extension points of placement: what a sampler, a filter, a scorer and a selector are.

A plugin is constructed once per scheduler replica with the replica's `PlacementSpec` (its tunables;
its own settings in `self.settings`) and then asked, for each choice, about the request (`req`: its
vCPUs, memory, shape, excluded nodes) and the replica's state (`replica`, a `ReplicaState`: the
nodes' static facts in `replica.nodes`, its view through `replica.strategy.views` and
`replica.reserved`, its in-progress map, its random stream). It reads; it never changes the state,
and it never reads a clock: `now` is given. A plugin that learns from its own placements keeps its
own record and overrides `placed` (kube-scheduler's PostBind), as `cache_affinity` does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from mypy_extensions import mypyc_attr

from harness.model.tunables import PluginSettings

if TYPE_CHECKING:
    from harness.model.scheduling.placement.placement_keys import PlacementSpec
    from harness.model.scheduling.replica_state import ReplicaState
    from harness.model.workload.request import CreateRequest

Eligible = Callable[[int], bool]
"""Whether a node passes every filter that applies to the request being placed."""


@mypyc_attr(allow_interpreted_subclasses=True)
class Plugin:
    name: ClassVar[str] = ""
    aliases: ClassVar[tuple[str, ...]] = ()
    """Other names the plugin answers to in a config (`harness.model.registry.Registry`)."""
    reads_report_times: ClassVar[bool] = False
    """Whether the plugin reads when a node's view was reported (`NodeView.seq`,
    `taken_at`). One that does must say so: otherwise nodes whose state has not changed may skip
    their reports (`harness.wiring.scenario.quiet_nodes`), and those two fields then tell the last
    report that changed something."""

    Settings: ClassVar[type[PluginSettings]] = PluginSettings
    """Its own settings (`harness.model.tunables.PluginSettings`), written under
    `[placement.<name>]` (`PlacementSpec.table_of`); the base has none."""

    def __init__(self, rules: PlacementSpec) -> None:
        self.rules = rules
        self.settings: Any = rules.settings_of(type(self))
        """Its `Settings` as the config gives them, defaults for the rest."""

    def placed(self, replica: ReplicaState, req: CreateRequest, now: float) -> None:
        """After a create this replica placed on `req.node` succeeded. A pipeline calls only
        the plugins that override it, so the others cost nothing."""


@mypyc_attr(allow_interpreted_subclasses=True)
class Sampler(Plugin):
    """Which nodes are candidates, in the order that breaks ties."""

    uniform: ClassVar[bool] = False
    """Whether its candidates are drawn uniformly at random without replacement, `candidates`
    of them: only then do the static-score shares C(n-i, K-1)/C(n, K) describe its herd (the
    report's theory curve)."""

    def candidates(self, n_nodes: int) -> int | None:
        """How many candidates it draws for a placement among `n_nodes` eligible nodes: its
        effective K, which a run records (summary `k`, run.json `plugins`) rather than the
        `placement.k` it may ignore. None: it does not say."""
        return None

    def sample(self, replica: ReplicaState, eligible: Eligible | None) -> list[int]:
        raise NotImplementedError


@mypyc_attr(allow_interpreted_subclasses=True)
class Filter(Plugin):
    """A predicate every candidate must pass."""

    rule: ClassVar[str] = ""
    """The eligibility rule it checks, where it is one, as the summary's `violations_<rule>`
    column names it (`harness.model.scheduling.placement.eligibility`); empty: its name."""
    per_shape: ClassVar[bool] = False
    """Whether `applies` depends on the request's shape alone: a pipeline then asks once per
    shape (a workload shares one `Shape` per template), not for every create."""

    def needed(self) -> bool:
        """Whether the filter can ever reject a node under these rules; a pipeline drops one
        that cannot (say `memory_overcommit` with M = 0)."""
        return True

    def applies(self, replica: ReplicaState, req: CreateRequest) -> bool:
        """Whether this request can fail the filter at all; False spares it per node."""
        return True

    def passes(self, replica: ReplicaState, node: int, req: CreateRequest, now: float) -> bool:
        raise NotImplementedError

    def why_not(self, replica: ReplicaState, node: int, req: CreateRequest) -> str:
        """What it asked of `node` for `req`, and what the node has: a placement that broke it,
        explained (an external scheduler's answer, `external.on_violation`)."""
        return f"node {node} fails the {self.name} filter"


@mypyc_attr(allow_interpreted_subclasses=True)
class Scorer(Plugin):
    """Lower is better; a pipeline adds the scorers' weighted scores."""

    def scores(
        self, replica: ReplicaState, candidates: list[int], req: CreateRequest, now: float
    ) -> list[float]:
        raise NotImplementedError


@mypyc_attr(allow_interpreted_subclasses=True)
class Selector(Plugin):
    """Which scored candidate wins; None when there is none."""

    def select(
        self, replica: ReplicaState, candidates: list[int], scores: list[float]
    ) -> int | None:
        raise NotImplementedError
