"""`trace`: replay the creates of a file."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mypy_extensions import mypyc_attr

from harness.model.tunables import ConfigError
from harness.model.workload.arrivals.arrival_kind import ArrivalKind

if TYPE_CHECKING:
    from harness.model.workload.workload_keys import WorkloadSpec


@mypyc_attr(allow_interpreted_subclasses=True)
class Trace(ArrivalKind):
    """One create per row of the file `trace`, at the row's time (`harness.config.trace_file`
    reads it and hands the client side plain rows)."""

    name = "trace"
    replay = True
    rate_key = "workload.trace"

    @classmethod
    def check(cls, spec: WorkloadSpec, duration: float) -> None:
        if not spec.trace:
            raise ConfigError(
                "workload.trace", "arrival trace needs a file: a .csv or .parquet path"
            )
