"""Strategies (what a replica believes of each node between reports) by name. One module per
strategy, registered here."""

from __future__ import annotations

from typing import Protocol

from harness.model.registry import Registry
from harness.model.scheduling.strategies.in_progress import InProgressStrategy
from harness.model.scheduling.strategies.optimistic import OptimisticStrategy
from harness.model.scheduling.strategies.optimistic_add_only import OptimisticAddOnlyStrategy
from harness.model.scheduling.strategies.optimistic_pre_rpc import OptimisticPreRpcStrategy
from harness.model.scheduling.strategies.reconcile import ReconcileStrategy
from harness.model.scheduling.strategies.stale import StaleStrategy
from harness.model.scheduling.strategies.sync_response import SyncResponseStrategy
from harness.model.scheduling.strategies.ttl import TtlStrategy
from harness.model.scheduling.strategy import Strategy
from harness.model.tunables import PluginSettings

STRATEGIES = Registry(
    "strategies",
    "strategy",
    Strategy,
    (
        StaleStrategy,
        InProgressStrategy,
        OptimisticStrategy,
        OptimisticAddOnlyStrategy,
        OptimisticPreRpcStrategy,
        TtlStrategy,
        SyncResponseStrategy,
        ReconcileStrategy,
    ),
)
"""Strategies: built in, installed (entry points `herd_harness.strategies`), or
"module:Class"."""


class Rules(Protocol):
    """What `make_strategy` asks of the rules (a `PlacementSpec`, which names the strategies and
    so is not imported here)."""

    def settings_of(self, plugin: type) -> PluginSettings: ...


def make_strategy(name: str, cpu_counts: list[int], rules: Rules | None = None) -> Strategy:
    """The strategy `name` over nodes of `cpu_counts`, with its settings as `rules` give them
    (`PlacementSpec.settings_of`; none: its defaults)."""
    cls = STRATEGIES.resolve(name)
    return cls(cpu_counts, None if rules is None else rules.settings_of(cls))
