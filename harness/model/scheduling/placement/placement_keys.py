"""The `[placement]` keys: a replica's placement rules and strategy (`PlacementSpec`).

Declared apart from `harness.model.scheduling.scheduler`, which reads them, so the scheduler can
be compiled (see README, "Compiled hot path") while the config layer still reads this
dataclass's type hints as written. Algorithms are named here, not built: this module imports no
plugin.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from harness.model.scheduling.placement.algorithms import ALGORITHMS
from harness.model.scheduling.strategies import STRATEGIES
from harness.model.tunables import PluginSettings, key


@dataclass(frozen=True)
class PlacementSpec:
    strategy: str = key(
        "stale",
        "The strategy (what a replica believes of the nodes between reports): a name "
        '(`harness plugins`) or "module:Class".',
        registry=STRATEGIES,
    )
    algorithm: str = key(
        "best_of_k",
        'Placement pipeline: a name (`harness plugins`) or "module:Class"; sampler, filters, '
        "scorers, selector override its parts.",
        registry=ALGORITHMS,
    )
    sampler: str = key("", 'Candidate sampler (a name or "module:Class"); empty: the algorithm\'s.')
    filters: list[str] = key([], "Filters a candidate must pass; empty: the algorithm's.")
    scorers: list[str] = key(
        [], 'Scorers as "name" or "name=weight", added up; empty: the algorithm\'s.'
    )
    selector: str = key("", "Which scored candidate wins; empty: the algorithm's.")
    k: int = key(3, "Candidates sampled per placement (Best-of-K).", ge=1)
    r: float = key(4.0, "CPU over-commit ratio.", gt=0)
    alpha: float = key(0.5, "Weight of actual CPU usage in the score.", ge=0)
    too_many_starting: bool = key(
        False,
        "Skip nodes with more than max_starting in progress (any algorithm): adds the "
        "too_many_starting filter, whose own settings are in the table starting_cap.",
    )
    max_attempts: int = key(
        3, "Failed create RPCs (other than ResourceExhausted) per request.", ge=1
    )
    max_asks: int = key(
        0,
        "Times a create may be placed (asked of the replica) before it fails (reason "
        "asks_exhausted); 0: no cap, as upstream, where a node that refuses for lack of room is "
        "neither excluded nor counted and only the deadline ends the loop. A departure from "
        "upstream: it ends a storm of refusals early.",
        ge=0,
    )
    retry_refused: bool = key(
        True,
        "A create a node refuses as full (ResourceExhausted) is placed again, as upstream's "
        "placement flow does; false: it fails at once (reason refused), as in upstream's "
        "benchmarks, where the node refuses after placement has returned.",
    )
    deadline_s: float = key(30.0, "A create still unplaced this long after issue fails.", gt=0)
    rpc_timeout_ms: float = key(
        1000.0, "The scheduler gives up on an unanswered create RPC after this long.", gt=0
    )
    replicas: int = key(1, "Scheduler replicas, each with its own view and in-progress map.", ge=1)
    settings: dict[str, PluginSettings] = field(
        default_factory=dict, metadata={"plugin_tables": True}
    )
    """Plugins' own settings by table (`table_of`), as `[placement.<table>]` gives them;
    not a key itself: the config layer reads the tables (`harness.config.validation`)."""

    @staticmethod
    def table_of(plugin: type) -> str:
        """The `[placement.<table>]` a plugin's settings are written under: its name, or, where
        its name is a `[placement]` key itself (`too_many_starting`), its first alias."""
        if plugin.name in KEYS and plugin.aliases:
            return plugin.aliases[0]
        return plugin.name

    def settings_of(self, plugin: type) -> PluginSettings:
        """`plugin`'s settings (its `Settings`): as the config gives them, else its defaults."""
        given = self.settings.get(self.table_of(plugin))
        return given if isinstance(given, plugin.Settings) else plugin.Settings()


KEYS = frozenset(f.name for f in fields(PlacementSpec) if not f.metadata.get("plugin_tables"))
"""The `[placement]` keys themselves: a plugin's table must not take one's name."""
