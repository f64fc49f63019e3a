"""The keys of a `[[faults]]` entry (`FaultSpec`): those every kind takes (`COMMON`: kind, its
window and target node), and the kind's own, declared by the kind as its `Settings` (a
`PluginSettings` dataclass, as a placement plugin's) and written flat beside the common ones.
`Drawn` declares the setting of every kind that draws what it strikes (`fraction`).

Apart from the kinds, which read it, and naming their registry by path, so neither imports
the other."""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field, fields
from typing import Any

from harness.model.tunables import PluginSettings, key


@dataclass(frozen=True)
class FaultSpec:
    kind: str = key(
        "crash",
        "crash, rpc_error, timeout (create RPCs), lost_reports or slow_node.",
        choices="harness.model.cluster.faults.kinds:FAULT_KINDS",
    )
    at_s: float = key(0.0, "When the fault starts (model seconds).", ge=0)
    until_s: float | None = key(
        None, 'When it ends; a crashed node comes back empty then; "none": never.', ge=0
    )
    node: int | None = key(
        None, 'Target node (required for crash and slow_node); "none": every node.', ge=0
    )
    settings: Any = field(default=None, metadata={"plugin_tables": True})
    """The kind's own keys (an instance of its `Settings`); None: its defaults. Typed `Any`
    because each kind reads its own class's fields (the compiled plan reads `fraction` and
    `latency_ms`)."""

    def __post_init__(self) -> None:
        if self.settings is None:
            kinds = importlib.import_module("harness.model.cluster.faults.kinds")
            object.__setattr__(self, "settings", kinds.FAULT_KINDS.resolve(self.kind).Settings())

    def active(self, node_id: int, now: float) -> bool:
        return (
            (self.node is None or self.node == node_id)
            and now >= self.at_s
            and (self.until_s is None or now < self.until_s)
        )


COMMON = tuple(f.name for f in fields(FaultSpec) if not f.metadata.get("plugin_tables"))
"""The keys every entry takes, whatever its kind."""


@dataclass(frozen=True)
class Drawn(PluginSettings):
    """The setting of a kind that strikes a share of what it may strike (`FaultKind.strikes`),
    drawn per RPC or report: its `Settings` are these or derive from them."""

    fraction: float = key(
        1.0, "Share of the RPCs (or reports) in the window that fail, drawn per RPC.", ge=0, le=1
    )


def keys_of(kind: Any) -> tuple[str, ...]:
    """The keys an entry of `kind` (a `FaultKind` class) takes: the common ones, then its own."""
    return COMMON + tuple(f.name for f in fields(kind.Settings))
