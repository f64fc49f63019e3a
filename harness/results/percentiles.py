"""Percentiles of figures measured in many places (actors, seeds), kept in bounded memory and
merged exactly: DDSketch (Masson, Rim and Lee, VLDB 2019; the `ddsketch` package of Datadog).

A sketch counts values in logarithmic buckets, so its size grows with the log of the range of
values rather than with their number, and two sketches merge by adding counts: the merge of
per-actor or per-seed sketches is the sketch of all their values, with the same accuracy.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from ddsketch import DDSketch
from ddsketch.ddsketch import BaseDDSketch
from ddsketch.pb.proto import DDSketchProto, pb

RELATIVE_ACCURACY = 0.01
"""Every quantile a sketch returns is within 1% of the value of that rank among the values
added (relative error, for any distribution and any number of values); values from 0 to
100 s in ms need some 1,200 buckets of 8 bytes at most."""


def new() -> DDSketch:
    return DDSketch(RELATIVE_ACCURACY)


def merged(sketches: Iterable[BaseDDSketch | None]) -> BaseDDSketch:
    """One sketch of every value of `sketches` (None ones skipped)."""
    total = new()
    for sketch in sketches:
        if sketch is not None:
            total.merge(sketch)
    return total


def quantiles(sketch: BaseDDSketch, qs: Sequence[float]) -> list[float]:
    """The values at quantiles `qs` (0.5 is the median); NaN for an empty sketch."""
    if sketch.count == 0:
        return [math.nan] * len(qs)
    return [float(sketch.get_quantile_value(q)) for q in qs]


def to_bytes(sketch: BaseDDSketch) -> bytes:
    """The sketch as DDSketch's protobuf message (readable by its Java and Go versions too)."""
    return DDSketchProto.to_proto(sketch).SerializeToString()


def from_bytes(data: bytes) -> BaseDDSketch:
    return DDSketchProto.from_proto(pb.DDSketch.FromString(data))
