"""The keys of a `[[faults]]` entry (`FaultSpec`): those every kind takes (`COMMON`: kind, its
window and target node), and the kind's own, declared by the kind as its `Settings` (a
`PluginSettings` dataclass, as a placement plugin's) and written flat beside the common ones.
A kind that draws what it strikes takes `fraction` (`fault_window.Drawn`).

The kinds read their entry as a `FaultWindow` (`fault_window`), so `kind` names their registry
by import and no module of the package imports one that imports it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, fields
from typing import Any

from harness.model.cluster.faults.fault_window import FaultWindow
from harness.model.cluster.faults.kinds import FAULT_KINDS
from harness.model.tunables import key


@dataclass(frozen=True)
class FaultSpec(FaultWindow):
    """One `[[faults]]` entry: its kind, then what the kind reads (`FaultWindow`)."""

    kind: str = key(
        "crash",
        "crash, rpc_error, timeout (create RPCs), lost_reports or slow_node.",
        choices=FAULT_KINDS,
    )

    def __post_init__(self) -> None:
        if self.settings is None:
            object.__setattr__(self, "settings", FAULT_KINDS.resolve(self.kind).Settings())


COMMON = tuple(f.name for f in fields(FaultSpec) if not f.metadata.get("plugin_tables"))
"""The keys every entry takes, whatever its kind."""


def keys_of(kind: Any) -> tuple[str, ...]:
    """The keys an entry of `kind` (a `FaultKind` class) takes: the common ones, then its own."""
    return COMMON + tuple(f.name for f in fields(kind.Settings))


def record(faults: Iterable[FaultSpec]) -> list[dict[str, object]]:
    """The run's `[[faults]]` entries as run.json keeps them (`plugins.faults`), in order: each
    kind with where it comes from (`Registry.source`), so a kind from another package is seen
    to be in use, and the `settings` it ran with where it has any."""
    found: list[dict[str, object]] = []
    for f in faults:
        entry: dict[str, object] = {"kind": FAULT_KINDS.one, "name": f.kind}
        entry["from"] = FAULT_KINDS.source(f.kind)
        if fields(f.settings):
            entry["settings"] = asdict(f.settings)
        found.append(entry)
    return found
