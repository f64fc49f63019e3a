"""What a trace format is (`TraceFormat`) and what an import of one tells (`Imported`).

A format names where a replayed trace's rows come from. The harness's own (`harness`) is
replayed as it is; any other is imported first: its source (a published trace, in its own
schema) is read in a window and written as one Parquet trace in the harness's format, which is
what every run replays (`harness.config.traces.cache` keeps it). A format keeps no state: the
rest of the harness asks its class attributes and class methods."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from harness.model.tunables import ConfigError

if TYPE_CHECKING:
    from harness.model.workload.workload_keys import WorkloadSpec

SPREAD_KEY = b"harness.spread_s"
"""The Parquet metadata key an importer records its times' resolution under: the default of
`workload.trace_spread_s` for the file."""


@dataclass(frozen=True)
class Imported:
    """What an import wrote, said by `harness trace import` and when a run imports."""

    creates: int
    """Rows written: one create each."""
    skipped: dict[str, int] = field(default_factory=dict)
    """Rows of the window not written, by reason."""
    peak_vcpu: float = 0.0
    """The most vCPUs that the written creates ask for at once, each counted from its time for
    its lifetime: what a cluster replaying the window holds at its busiest."""
    peak_at_s: float = 0.0
    """When that peak is, seconds from the window's start."""
    machines: dict[int, int] = field(default_factory=dict)
    """The source's machines by vCPUs (vCPUs -> machines), where its schema lists them."""

    def lines(self) -> list[str]:
        """The import in a few lines: what was written, what was not and why, the peak, and
        the machines."""
        out = [f"{self.creates:,} creates"]
        if self.skipped:
            why = ", ".join(f"{n:,} {reason}" for reason, n in self.skipped.items())
            out.append(f"skipped: {why}")
        if self.creates:
            out.append(
                f"at most {self.peak_vcpu:,.0f} vCPUs asked for at once "
                f"({self.peak_at_s:g} s into the window)"
            )
        if self.machines:
            kinds = ", ".join(f"{n:,} of {cpus} vCPUs" for cpus, n in sorted(self.machines.items()))
            out.append(f"machines: {kinds}")
        return out


class TraceFormat:
    """Where a replayed trace comes from (`workload.trace_format`): a class per format,
    registered by name (`harness.config.traces.TRACE_FORMATS`)."""

    name: ClassVar[str] = ""
    imports: ClassVar[bool] = True
    """Whether its source is imported into the harness's own format first (and the import
    cached); False: the file `workload.trace` is replayed as it is."""
    spread_s: ClassVar[float] = 0.0
    """The resolution of its times: creates it records at one instant are spread over this
    many seconds after it unless `workload.trace_spread_s` says otherwise (an importer records
    it in the file it writes, under `SPREAD_KEY`)."""
    version: ClassVar[int] = 1
    """Of its importer's output: a change to what an import writes raises it, so that imports
    cached before are not replayed."""

    @classmethod
    def check(cls, spec: WorkloadSpec) -> None:
        """Refuse (`ConfigError`, naming the key) a workload this format cannot replay; the
        config layer calls it when a config with `arrival = "trace"` loads."""

    @classmethod
    def files(cls, source: str, key: str = "workload.trace") -> list[Path]:
        """The files `source` names (empty: the copy that comes with an installed package,
        where the format has one), every one there; else a `ConfigError` of `key` saying how
        to get them. What an import reads, and whose size and age key its cache."""
        raise NotImplementedError

    @classmethod
    def describe(cls, source: str) -> str:
        """`source` as messages name it."""
        return source

    @classmethod
    def convert(cls, files: list[Path], start: float, span: float, out: Path) -> Imported:
        """Write the creates of `files` from second `start` for `span` seconds (`inf`: to the
        end) to `out`, a Parquet trace in the harness's format, times from the window's
        start."""
        raise NotImplementedError


def check_window(start: float, span: float, start_key: str, span_key: str) -> None:
    """Refuses a window that cannot be imported, naming the key (or flag) that sets it."""
    if not 0 <= start < float("inf"):
        raise ConfigError(start_key, f"must be a finite number of seconds >= 0, got {start!r}")
    if not span > 0:
        raise ConfigError(span_key, f"must be a number of seconds > 0, got {span!r}")
