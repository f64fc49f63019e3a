"""Ledger strategies by name. One module per strategy, registered here."""

from __future__ import annotations

from harness.model.registry import Registry
from harness.model.scheduling.ledger import DEFAULT_OPTIONS, Ledger, LedgerOptions
from harness.model.scheduling.ledgers.in_progress import InProgressLedger
from harness.model.scheduling.ledgers.optimistic import OptimisticLedger
from harness.model.scheduling.ledgers.optimistic_add_only import OptimisticAddOnlyLedger
from harness.model.scheduling.ledgers.optimistic_pre_rpc import OptimisticPreRpcLedger
from harness.model.scheduling.ledgers.reconcile import ReconcileLedger
from harness.model.scheduling.ledgers.stale import StaleLedger
from harness.model.scheduling.ledgers.sync_response import SyncResponseLedger
from harness.model.scheduling.ledgers.ttl import TtlLedger

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


def make_ledger(
    name: str, cpu_counts: list[int], options: LedgerOptions = DEFAULT_OPTIONS
) -> Ledger:
    return LEDGERS.resolve(name)(cpu_counts, options)
