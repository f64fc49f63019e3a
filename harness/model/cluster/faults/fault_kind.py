"""What a fault kind is (`FaultKind`): its own keys (`Settings`), where it strikes, what it does
there and what it counts. The fault plan (`harness.model.cluster.faults.plan.Faults`) asks the
kinds, never their names, so a new kind is one file (and its registration in `kinds`)."""

from __future__ import annotations

from enum import IntEnum
from typing import TYPE_CHECKING, ClassVar, NamedTuple

from harness.model.cluster.node import Node, Outcome
from harness.model.tunables import PluginSettings

if TYPE_CHECKING:
    from harness.model.cluster.faults.fault_window import FaultWindow
    from harness.model.workload.request import Shape


class Where(IntEnum):
    """Where a fault strikes; a kind's counters are summary columns, grouped in this order."""

    RPC = 0
    """A create or kill RPC's answer."""
    REPORT = 1
    """A heartbeat report."""
    NODE = 2
    """A node's life (crashes)."""


class Counter(NamedTuple):
    """A counter a fault kind keeps: a summary column of its own (`name`), where the fault
    strikes, and what the column means (the result reference prints it)."""

    name: str
    where: Where
    meaning: str


class FaultKind:
    """One kind of `[[faults]]` entry; registered by name in
    `harness.model.cluster.faults.kinds.FAULT_KINDS`. Hooks are static: a kind keeps no state,
    the plan's counters (`counts`) are handed in."""

    name: ClassVar[str] = ""
    Settings: ClassVar[type[PluginSettings]] = PluginSettings
    """The kind's own keys: a frozen dataclass deriving `PluginSettings` (`Drawn` for a kind
    that draws with a `fraction`), written flat in its `[[faults]]` entry beside the common
    keys (`fault_keys.COMMON`); any other key is refused. The hooks read them as
    `spec.settings`."""
    needs_node: ClassVar[bool] = False
    """Whether an entry must name its target node."""
    what: ClassVar[str] = ""
    counters: ClassVar[tuple[Counter, ...]] = ()
    """The summary columns this kind counts, each with where it strikes: every one is a column
    of the summary (`harness.model.cluster.faults.kinds.COUNTS`), and counting any other is an
    error."""
    slows: ClassVar[bool] = False
    """Whether an entry adds latency to RPCs to its node (its setting `latency_ms`,
    `SlowNodes`)."""

    @staticmethod
    def strikes(spec: FaultWindow, where: str) -> bool:
        """Whether the entry `spec` may strike "create" RPCs, "kill" RPCs or "report"s (drawn
        with its `fraction`, `spec.settings.fraction`, while active: its `Settings` derive
        from `Drawn`)."""
        return False

    @staticmethod
    def on_rpc(
        spec: FaultWindow,
        node: Node,
        sandbox_id: int,
        shape: Shape | None,
        counts: dict[str, int],
    ) -> Outcome:
        """The answer of a create (`shape` given) or kill RPC the entry struck."""
        raise NotImplementedError

    @staticmethod
    def on_report(spec: FaultWindow, counts: dict[str, int]) -> None:
        """A report the entry struck: it never arrives."""
        raise NotImplementedError

    @staticmethod
    def down_windows(spec: FaultWindow) -> list[tuple[float, float]]:
        """The [at, until) windows the entry holds its node down in (`Faults.crash_events`)."""
        return []
