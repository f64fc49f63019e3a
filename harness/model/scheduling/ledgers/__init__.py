"""Ledger strategies by name. One module per strategy, registered here."""

from __future__ import annotations

from typing import Protocol

from harness.model.registry import Registry
from harness.model.scheduling.ledger import Ledger
from harness.model.scheduling.ledgers.in_progress import InProgressLedger
from harness.model.scheduling.ledgers.optimistic import OptimisticLedger
from harness.model.scheduling.ledgers.optimistic_add_only import OptimisticAddOnlyLedger
from harness.model.scheduling.ledgers.optimistic_pre_rpc import OptimisticPreRpcLedger
from harness.model.scheduling.ledgers.reconcile import ReconcileLedger
from harness.model.scheduling.ledgers.stale import StaleLedger
from harness.model.scheduling.ledgers.sync_response import SyncResponseLedger
from harness.model.scheduling.ledgers.ttl import TtlLedger
from harness.model.tunables import PluginSettings

LEDGERS = Registry(
    "strategies",
    "strategy",
    Ledger,
    (
        StaleLedger,
        InProgressLedger,
        OptimisticLedger,
        OptimisticAddOnlyLedger,
        OptimisticPreRpcLedger,
        TtlLedger,
        SyncResponseLedger,
        ReconcileLedger,
    ),
)
"""Ledger strategies: built in, installed (entry points `herd_harness.strategies`), or
"module:Class"."""


class Rules(Protocol):
    """What `make_ledger` asks of the rules (a `PlacementSpec`, which names the strategies and
    so is not imported here)."""

    def settings_of(self, plugin: type) -> PluginSettings: ...


def make_ledger(name: str, cpu_counts: list[int], rules: Rules | None = None) -> Ledger:
    """The strategy `name` over nodes of `cpu_counts`, with its settings as `rules` give them
    (`PlacementSpec.settings_of`; none: its defaults)."""
    cls = LEDGERS.resolve(name)
    return cls(cpu_counts, None if rules is None else rules.settings_of(cls))
