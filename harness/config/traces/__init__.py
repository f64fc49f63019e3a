"""Trace formats by name (`TRACE_FORMATS`): where a replayed trace comes from, one file per
format, each a `TraceFormat`. The harness's own format is replayed as it is; another is
imported into it first (`harness.config.traces.cache` keeps the import). A format that reads
with Arrow is named by import path, so naming it costs nothing until a run reads it; a package
adds one under the entry-point group `herd_harness.trace_formats`."""

from __future__ import annotations

from harness.config.traces.harness_trace import HarnessTrace
from harness.config.traces.trace_format import Imported, TraceFormat
from harness.model.registry import Registry

TRACE_FORMATS = Registry(
    "trace_formats",
    "trace",
    TraceFormat,
    (HarnessTrace,),
    lazy={"alibaba-2018": "harness.config.traces.alibaba_2018:Alibaba2018"},
)
"""Trace formats by name (`workload.trace_format`)."""

__all__ = ["TRACE_FORMATS", "Imported", "TraceFormat"]
