"""Ledger strategies by name. One module per strategy, registered here."""

from __future__ import annotations

from harness.ledger import DEFAULT_OPTIONS, Ledger, LedgerOptions
from harness.ledgers.in_progress import InProgressLedger
from harness.ledgers.optimistic import OptimisticLedger
from harness.ledgers.optimistic_add_only import OptimisticAddOnlyLedger
from harness.ledgers.optimistic_pre_rpc import OptimisticPreRpcLedger
from harness.ledgers.reconcile import ReconcileLedger
from harness.ledgers.stale import StaleLedger
from harness.ledgers.sync_response import SyncResponseLedger
from harness.ledgers.ttl import TtlLedger
from harness.registry import Registry

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
