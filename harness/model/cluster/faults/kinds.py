"""Fault kinds by name (`FAULT_KINDS`, the key `faults[].kind`) and the summary columns their
counters make (`COUNTS`), derived from the kinds so a new kind's counters reach the summary
(`harness.results.arrow_schemas.SUMMARY`) without another list."""

from __future__ import annotations

from harness.model.cluster.faults.crash import Crash
from harness.model.cluster.faults.fault_kind import FaultKind, Where
from harness.model.cluster.faults.lost_reports import LostReports
from harness.model.cluster.faults.rpc_error import RpcError
from harness.model.cluster.faults.slow_node import SlowNode
from harness.model.cluster.faults.timeout import Timeout
from harness.model.registry import Registry

FAULT_KINDS = Registry(
    "faults", "fault", FaultKind, (RpcError, Timeout, Crash, LostReports, SlowNode)
)
"""Fault kinds by name: built in, or installed (entry points `herd_harness.faults`)."""


def counters(kinds: list[type[FaultKind]]) -> tuple[str, ...]:
    """The counters of `kinds`, each once: grouped by where they strike (`Where`), then in the
    kinds' order."""
    named = [(where, c) for kind in kinds for c, where in kind.counters]
    return tuple(dict.fromkeys(c for where in Where for w, c in named if w is where))


COUNTS = counters(list(FAULT_KINDS.builtins.values()))
"""Summary columns of injected faults (see `Faults.counts`), from the built-in kinds."""
