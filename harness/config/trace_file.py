"""Reading a trace to replay (arrival `trace`): a CSV or Parquet file, one row per create, read
in record batches so that a trace of any length streams through in bounded memory, every row
checked on the way. The model gets plain tuples (`harness.model.workload.templates.TraceRow`);
Arrow stays here.

Columns, by name, in any order (only `time_s` is required; any other name is refused):

- `time_s`: when the create is issued, seconds from the start; rows in time order;
- `template`: the ID of a template (`workload.templates[].template`, or `workload.template`);
  empty: the [workload] keys;
- `vcpu`, `memory_mib`: override the template's; empty: the template's;
- `lifetime_s`: seconds before the kill, `inf` for never; empty: drawn from the template's
  lifetime distribution;
- `usage`: the fraction of its vCPUs the sandbox keeps busy, in [0, 1]; empty: the template's.

A bad row is a `TraceError` (a `ConfigError` of `workload.trace`) naming the file, the row
(1 = the first row after a CSV's header) and the column."""

from __future__ import annotations

import csv
import functools
import math
import os
from collections.abc import Iterator
from itertools import repeat
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

from harness.config import Config, ConfigError
from harness.model.workload.arrivals import ARRIVALS
from harness.model.workload.templates import TraceRow

COLUMNS = ("time_s", "template", "vcpu", "memory_mib", "lifetime_s", "usage")
"""The columns a trace may have, in the order of a `TraceRow`."""
NUMBERS = frozenset({"time_s", "vcpu", "memory_mib", "lifetime_s", "usage"})
BATCH_ROWS = 65_536
"""Rows per Parquet record batch; a CSV is read in blocks of `CSV_BLOCK_BYTES`."""
CSV_BLOCK_BYTES = 1 << 20


class TraceError(ConfigError):
    """A trace that cannot be read, or a row of it that is not a create."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__("workload.trace", f"{path}: {reason}")


def rows(path: str, templates: frozenset[str]) -> Iterator[TraceRow]:
    """Every row of the trace at `path`, checked, in order; `templates`: the IDs a row may
    name. A row is checked in the loop itself (the common case costs a few comparisons); what
    exactly is wrong is worked out only for a row that fails."""
    previous, number = 0.0, 0
    for batch in _batches(path):
        for row in zip(*batch, strict=False):  # absent columns are endless repeat(None)
            number += 1
            t, template, vcpu, memory, life, usage = row
            if (
                t is None
                or not previous <= t < math.inf
                or (template and template not in templates)
                or (vcpu is not None and not 0 < vcpu < math.inf)
                or (memory is not None and not 0 <= memory < math.inf)
                or (life is not None and not life > 0)
                or (usage is not None and not 0 <= usage <= 1)
            ):
                raise TraceError(path, f"row {number}, {_fault(row, previous, templates)}")
            previous = t
            yield row


def _fault(row: TraceRow, previous: float, templates: frozenset[str]) -> str:
    """What is wrong with a row that failed the check, as "column NAME: reason"."""
    t, template, vcpu, memory, life, usage = row
    if t is None:
        return "column time_s: needs a value"
    if not 0 <= t < math.inf:
        return f"column time_s: must be a finite number >= 0, got {t!r}"
    if t < previous:
        return f"column time_s: {t!r} is before the row above ({previous!r}): rows go in time order"
    if template and template not in templates:
        known = ", ".join(sorted(templates)) or "none (no template has an ID)"
        return f"column template: unknown template {template!r}; known: {known}"
    if vcpu is not None and not 0 < vcpu < math.inf:
        return f"column vcpu: must be a finite number > 0, got {vcpu!r}"
    if memory is not None and not 0 <= memory < math.inf:
        return f"column memory_mib: must be a finite number >= 0, got {memory!r}"
    if life is not None and not life > 0:
        return f"column lifetime_s: must be > 0 (inf: never killed), got {life!r}"
    return f"column usage: must be a number in [0, 1], got {usage!r}"


def _batches(path: str) -> Iterator[list]:
    """The trace in record batches, each as one list per column of `COLUMNS` (a column the
    file lacks is all None)."""
    suffix = Path(path).suffix.lower()
    if suffix not in (".csv", ".parquet", ".pq"):
        raise TraceError(path, "must be a .csv or .parquet file")
    try:
        if suffix == ".csv":
            yield from _csv_batches(path)
        else:
            yield from _parquet_batches(path)
    except OSError as e:
        raise TraceError(path, f"cannot be read: {e.strerror or e}") from None


def _columns(path: str, names: list[str]) -> None:
    """Refuses a header without `time_s`, with a name that is not a trace column, or with a
    name twice."""
    for i, name in enumerate(names):
        if name not in COLUMNS:
            raise TraceError(path, f"unknown column {name!r}; known: {', '.join(COLUMNS)}")
        if name in names[:i]:
            raise TraceError(path, f"column {name!r} appears twice")
    if "time_s" not in names:
        raise TraceError(path, "has no column time_s (when each create is issued)")


def _as_lists(path: str, batch: pa.RecordBatch, first: int) -> list:
    """One Python list per trace column; numbers as floats. A value that is not a number
    is named by its row (`first`: the number of the batch's first row)."""
    out = []
    for name in COLUMNS:
        if name not in batch.schema.names:
            out.append(repeat(None))
            continue
        column = batch.column(name)
        if name in NUMBERS:
            column = _floats(path, name, column, first)
        elif not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
            column = _text(path, name, column)
        out.append(column.to_pylist())
    return out


def _floats(path: str, name: str, column: pa.Array, first: int) -> pa.Array:
    kind = column.type
    if pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_null(kind):
        return pc.cast(column, pa.float64())
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
        raise TraceError(path, f"column {name}: must hold numbers, holds {kind}")
    try:
        return pc.cast(column, pa.float64())
    except pa.ArrowInvalid as e:  # text that is not a number: find the first such row
        for i, text in enumerate(column.to_pylist()):
            try:
                pc.cast(pa.array([text], pa.string()), pa.float64())
            except pa.ArrowInvalid:
                raise TraceError(
                    path, f"row {first + i}, column {name}: not a number: {text!r}"
                ) from None
        raise TraceError(path, f"column {name}: {e}") from None


def _text(path: str, name: str, column: pa.Array) -> pa.Array:
    if pa.types.is_dictionary(column.type) or pa.types.is_null(column.type):
        try:
            return pc.cast(column, pa.string())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass
    raise TraceError(path, f"column {name}: must hold text, holds {column.type}")


def _parquet_batches(path: str) -> Iterator[list]:
    try:
        trace = pq.ParquetFile(path)
    except (pa.ArrowInvalid, pa.ArrowIOError) as e:
        raise TraceError(path, f"is not a Parquet file ({e})") from None
    with trace:
        names = trace.schema_arrow.names
        _columns(path, names)
        first = 1
        for batch in trace.iter_batches(batch_size=BATCH_ROWS):
            yield _as_lists(path, batch, first)
            first += batch.num_rows


def _csv_batches(path: str) -> Iterator[list]:
    """The CSV read as text (so that a value that is not a number is found by its row, not
    by pyarrow's guess of a column's type); only an empty field is missing."""
    try:
        reader = pcsv.open_csv(
            path,
            read_options=pcsv.ReadOptions(block_size=CSV_BLOCK_BYTES),
            convert_options=pcsv.ConvertOptions(
                column_types=dict.fromkeys(COLUMNS, pa.string()),
                null_values=[""],  # not pyarrow's "NA", "null", "nan"...: a typo stays a typo
                strings_can_be_null=True,
            ),
        )
    except pa.ArrowInvalid as e:
        raise _csv_fault(path, e) from None
    with reader:
        _columns(path, reader.schema.names)
        first = 1
        while True:
            try:
                batch = reader.read_next_batch()
            except StopIteration:
                return
            except pa.ArrowInvalid as e:
                raise _csv_fault(path, e) from None
            yield _as_lists(path, batch, first)
            first += batch.num_rows


def _csv_fault(path: str, error: pa.ArrowInvalid) -> TraceError:
    """The row pyarrow could not parse: pyarrow's streaming reader does not say which, so the
    file is scanned again (only now, on the way to an error) for the first row whose number
    of fields differs from the header's."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            lines = csv.reader(f)
            header = next(lines, [])
            for number, fields in enumerate(lines, start=1):
                if len(fields) != len(header):
                    return TraceError(
                        path,
                        f"row {number}: has {len(fields)} fields, the header {len(header)}",
                    )
    except (UnicodeDecodeError, csv.Error) as e:
        return TraceError(path, f"is not CSV text in UTF-8 ({e})")
    return TraceError(path, f"is not a CSV file pyarrow reads: {error}")


def _stat(path: str) -> tuple[int, int]:
    try:
        st = os.stat(path)
    except OSError as e:
        raise TraceError(path, f"cannot be read: {e.strerror}") from None
    except ValueError as e:  # a NUL in the name
        raise TraceError(path, f"is not a file name: {e}") from None
    if not os.path.isfile(path):
        raise TraceError(path, "is not a file")
    return st.st_size, st.st_mtime_ns


@functools.lru_cache(maxsize=8)
def _scan(path: str, stat: tuple[int, int], templates: frozenset[str], duration: float) -> int:
    """Creates before `duration` in a trace, every row checked; kept while the file is the
    same size and age (a sweep checks each cell's trace)."""
    return sum(1 for row in rows(path, templates) if row[0] < duration)


def check(config: Config) -> int:
    """Checks every row of `config`'s trace before anything runs (exit 2 for a bad one) and
    returns how many creates it sends; 0 for other arrival kinds."""
    w = config.workload
    if not ARRIVALS[w.arrival].replay:
        return 0
    creates = _scan(w.trace, _stat(w.trace), w.template_ids(), config.run.duration_s)
    if not creates:
        raise TraceError(
            w.trace,
            f"no row before run.duration_s {config.run.duration_s:g}: the run would send nothing",
        )
    return creates
