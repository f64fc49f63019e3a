"""Ledger strategies by name. One module per strategy; each registers itself here."""

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

LEDGERS: dict[str, type[Ledger]] = {
    cls.name: cls
    for cls in (
        StaleLedger,
        InProgressLedger,
        OptimisticLedger,
        OptimisticAddOnlyLedger,
        OptimisticPreRpcLedger,
        TtlLedger,
        SyncResponseLedger,
        ReconcileLedger,
    )
}


def make_ledger(
    name: str, cpu_counts: list[int], options: LedgerOptions = DEFAULT_OPTIONS
) -> Ledger:
    try:
        cls = LEDGERS[name]
    except KeyError:
        raise ValueError(f"unknown strategy {name!r}; known: {', '.join(LEDGERS)}") from None
    return cls(cpu_counts, options)
