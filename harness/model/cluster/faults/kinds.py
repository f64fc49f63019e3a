"""Fault kinds by name (`FAULT_KINDS`, the key `faults[].kind`) and the summary columns their
counters make (`COUNTERS`, their names `COUNTS`), derived from the kinds so a new kind's counters
reach the summary (`harness.results.summary_columns`) without another list."""

from __future__ import annotations

from harness.model.cluster.faults.crash import Crash
from harness.model.cluster.faults.fault_kind import Counter, FaultKind, Where
from harness.model.cluster.faults.lost_reports import LostReports
from harness.model.cluster.faults.rpc_error import RpcError
from harness.model.cluster.faults.slow_node import SlowNode
from harness.model.cluster.faults.timeout import Timeout
from harness.model.registry import Registry

FAULT_KINDS = Registry(
    "faults", "fault", FaultKind, (RpcError, Timeout, Crash, LostReports, SlowNode)
)
"""Fault kinds by name: built in, or installed (entry points `herd_harness.faults`)."""


def ordered(kinds: list[type[FaultKind]]) -> tuple[Counter, ...]:
    """The counters of `kinds`, each once: grouped by where they strike (`Where`), then in the
    kinds' order."""
    found = {c.name: c for kind in kinds for c in kind.counters}
    return tuple(c for where in Where for c in found.values() if c.where is where)


def counters(kinds: list[type[FaultKind]]) -> tuple[str, ...]:
    """The names of `ordered(kinds)`: the summary columns they make."""
    return tuple(c.name for c in ordered(kinds))


COUNTERS = ordered(list(FAULT_KINDS.builtins.values()))
"""The built-in kinds' counters: the summary columns of injected faults (see `Faults.counts`)."""
COUNTS = tuple(c.name for c in COUNTERS)
"""Their names."""
