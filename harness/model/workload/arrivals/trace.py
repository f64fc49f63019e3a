"""`trace`: replay the creates of a file."""

from __future__ import annotations

from mypy_extensions import mypyc_attr

from harness.model.workload.arrivals.arrival_kind import ArrivalKind


@mypyc_attr(allow_interpreted_subclasses=True)
class Trace(ArrivalKind):
    """One create per row of the trace `workload.trace`, at the row's time;
    `workload.trace_format` says where it comes from, and checks what that format needs.

    The config layer reads the file (`harness.config.trace_file`) and hands the client side
    plain rows."""

    name = "trace"
    replay = True
    rate_key = "workload.trace"
