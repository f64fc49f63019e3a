"""What a fault kind reads of its `[[faults]]` entry (`FaultWindow`: when and where it strikes,
and its own keys) and the setting of every kind that draws what it strikes (`Drawn`).

Apart from the entry's `kind` (`fault_keys.FaultSpec`), which names the kinds' registry: the
kinds import this module, never the registry's."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.model.tunables import PluginSettings, key


@dataclass(frozen=True)
class FaultWindow:
    """The keys of a `[[faults]]` entry that its kind reads: its window, its target node and
    its own keys (`settings`)."""

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

    def active(self, node_id: int, now: float) -> bool:
        return (
            (self.node is None or self.node == node_id)
            and now >= self.at_s
            and (self.until_s is None or now < self.until_s)
        )


@dataclass(frozen=True)
class Drawn(PluginSettings):
    """The setting of a kind that strikes a share of what it may strike (`FaultKind.strikes`),
    drawn per RPC or report: its `Settings` are these or derive from them."""

    fraction: float = key(
        1.0, "Share of the RPCs (or reports) in the window that fail, drawn per RPC.", ge=0, le=1
    )
