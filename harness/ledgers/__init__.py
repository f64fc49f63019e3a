"""Ledger strategies by name. One module per strategy; each registers itself here."""

from __future__ import annotations

from harness.ledger import Ledger
from harness.ledgers.in_progress import InProgressLedger
from harness.ledgers.optimistic import OptimisticLedger
from harness.ledgers.stale import StaleLedger

LEDGERS: dict[str, type[Ledger]] = {
    cls.name: cls for cls in (StaleLedger, InProgressLedger, OptimisticLedger)
}


def make_ledger(name: str, cpu_counts: list[int]) -> Ledger:
    try:
        cls = LEDGERS[name]
    except KeyError:
        raise ValueError(f"unknown strategy {name!r}; known: {', '.join(LEDGERS)}") from None
    return cls(cpu_counts)
