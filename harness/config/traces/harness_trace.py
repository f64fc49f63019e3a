"""`harness`: the harness's own trace format, a CSV or Parquet file replayed as it is."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from harness.config.traces.trace_format import TraceFormat
from harness.model.tunables import ConfigError

if TYPE_CHECKING:
    from harness.model.workload.workload_keys import WorkloadSpec


class HarnessTrace(TraceFormat):
    """A CSV or Parquet file of creates, one per row, in the columns
    `harness.config.trace_file` reads; what every other format is imported into."""

    name = "harness"
    imports = False

    @classmethod
    def check(cls, spec: WorkloadSpec) -> None:
        if not spec.trace:
            raise ConfigError(
                "workload.trace", "arrival trace needs a file: a .csv or .parquet path"
            )
        if spec.trace_start_s:
            raise ConfigError(
                "workload.trace_start_s",
                "a file of the harness's format is replayed from its start: write the "
                "window you want into it, or import a trace of another format",
            )

    @classmethod
    def files(cls, source: str, key: str = "workload.trace") -> list[Path]:
        return [Path(source)]
