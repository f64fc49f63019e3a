"""Reading a trace to replay (arrival `trace`): a CSV or Parquet file in the harness's format,
one row per create, read in record batches so that a trace of any length streams through in
bounded memory, every row checked on the way. The model gets plain tuples
(`harness.model.workload.templates.TraceRow`); Arrow stays here. A trace of another format
(`workload.trace_format`) is imported into this one first (`harness.config.traces`), and the
import replayed.

Columns, by name, in any order (only `time_s` is required; any other name is refused):

- `time_s`: when the create is issued, seconds from the start; rows in time order;
- `template`: the ID of a template (`workload.templates[].template`, or `workload.template`);
  empty: the [workload] keys;
- `vcpu`, `memory_mib`: override the template's; empty: the template's;
- `memory_share`: instead of `memory_mib`, the fraction of a node's memory, in [0, 1], of
  the largest node's `memory_mib` (as a trace that normalises memory to its largest machine);
- `lifetime_s`: seconds before the kill (0: killed at once), `inf` for never; empty: drawn
  from the template's lifetime distribution;
- `usage`: the fraction of its vCPUs the sandbox keeps busy, >= 0 (above 1: more than it
  asked for; a node counts at most its own vCPUs for it); empty: the template's;
- `tag`: text carried to the create's row of requests.parquet (a job and task, say).

A bad row is a `TraceError` (a `ConfigError` of `workload.trace`) naming the file, the row
(1 = the first row after a CSV's header) and the column."""

from __future__ import annotations

import csv
import functools
import math
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import islice, repeat
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

from harness.config import Config, ConfigError
from harness.config.traces import TRACE_FORMATS, cache
from harness.config.traces.trace_format import SPREAD_KEY
from harness.model.workload.arrivals import ARRIVALS
from harness.model.workload.templates import TraceRow
from harness.results.seed_rows import streamed

COLUMNS = (
    "time_s", "template", "vcpu", "memory_mib", "memory_share", "lifetime_s", "usage", "tag"
)  # fmt: skip
"""The columns a trace may have."""
NUMBERS = frozenset({"time_s", "vcpu", "memory_mib", "memory_share", "lifetime_s", "usage"})
ROW = ("time_s", "template", "vcpu", "memory_mib", "lifetime_s", "usage", "tag")
"""The columns of a `TraceRow`, in its order; its memory is `memory_mib`, or `memory_share`
of the largest node's."""
BATCH_ROWS = 65_536
"""Rows per Parquet record batch; a CSV is read in blocks of `CSV_BLOCK_BYTES`."""
CSV_BLOCK_BYTES = 1 << 20
CROWDED = 100
"""Creates at one instant from which a run without a spread is warned: more than that at
once is a timestamp's rounding more often than a burst, and each of them is placed on the
same reports."""


class TraceError(ConfigError):
    """A trace that cannot be read, or a row of it that is not a create."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__("workload.trace", f"{path}: {reason}")


def rows(path: str, templates: frozenset[str], node_memory_mib: float = 0.0) -> Iterator[TraceRow]:
    """Every row of the trace at `path`, checked, in order; `templates`: the IDs a row may
    name; `node_memory_mib`: what a `memory_share` of 1 is. A batch's rows are checked at
    once, column by column; what exactly is wrong is worked out only for a row that fails."""
    previous, number = 0.0, 0
    for arrays, lists in _batches(path, node_memory_mib):
        bad = _first_bad(arrays, previous, templates)
        if bad is not None:  # the rows before it go on first, as a row-by-row reader's would
            yield from islice(zip(*lists, strict=False), bad)
            row = tuple(None if isinstance(c, repeat) else c[bad] for c in lists)
            before = previous if bad == 0 else arrays["time_s"][bad - 1].as_py()
            fault = _fault(row, before, templates)  # type: ignore[arg-type]
            raise TraceError(path, f"row {number + bad + 1}, {fault}")
        n = len(arrays["time_s"])
        if n:
            previous = arrays["time_s"][n - 1].as_py()
        number += n
        yield from zip(*lists, strict=False)  # absent columns are endless repeat(None)


def _first_bad(
    arrays: dict[str, pa.Array], previous: float, templates: frozenset[str]
) -> int | None:
    """The first row of a batch that is not a create (`_fault` says why), or None."""
    t = arrays["time_s"]
    times = t.to_numpy(zero_copy_only=False)
    ordered = np.concatenate([[previous], times])
    bad = ~t.is_valid().to_numpy(zero_copy_only=False) | ~(
        (ordered[:-1] <= times) & (times < math.inf)
    )
    for name, low, strict in (("vcpu", 0, True), ("memory_mib", 0, False), ("usage", 0, False)):
        column = arrays.get(name)
        if column is not None:
            values = column.to_numpy(zero_copy_only=False)
            inside = ((values > low) if strict else (values >= low)) & (values < math.inf)
            bad |= column.is_valid().to_numpy(zero_copy_only=False) & ~inside
    life = arrays.get("lifetime_s")
    if life is not None:
        bad |= life.is_valid().to_numpy(zero_copy_only=False) & ~(
            life.to_numpy(zero_copy_only=False) >= 0
        )
    template = arrays.get("template")
    if template is not None:
        named = pc.fill_null(pc.not_equal(template, ""), False)
        known = pc.is_in(template, value_set=pa.array(sorted(templates), pa.string()))
        bad |= pc.and_(named, pc.invert(known)).to_numpy(zero_copy_only=False)
    found = np.flatnonzero(bad)
    return int(found[0]) if found.size else None


def _fault(row: TraceRow, previous: float, templates: frozenset[str]) -> str:
    """What is wrong with a row that failed the check, as "column NAME: reason"."""
    t, template, vcpu, memory, life, usage, _ = row
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
    if life is not None and not life >= 0:
        return f"column lifetime_s: must be >= 0 (0: killed at once, inf: never), got {life!r}"
    return f"column usage: must be a finite number >= 0, got {usage!r}"


def _batches(path: str, node_memory_mib: float) -> Iterator[tuple[dict[str, pa.Array], list]]:
    """The trace in record batches, each as its columns (`_as_lists`)."""
    suffix = Path(path).suffix.lower()
    if suffix not in (".csv", ".parquet", ".pq"):
        raise TraceError(path, "must be a .csv or .parquet file")
    try:
        if suffix == ".csv":
            yield from _csv_batches(path, node_memory_mib)
        else:
            yield from _parquet_batches(path, node_memory_mib)
    except OSError as e:
        raise TraceError(path, f"cannot be read: {e.strerror or e}") from None


def _columns(path: str, names: list[str]) -> None:
    """Refuses a header without `time_s`, with a name that is not a trace column, with a
    name twice, or with both kinds of memory."""
    for i, name in enumerate(names):
        if name not in COLUMNS:
            raise TraceError(path, f"unknown column {name!r}; known: {', '.join(COLUMNS)}")
        if name in names[:i]:
            raise TraceError(path, f"column {name!r} appears twice")
    if "time_s" not in names:
        raise TraceError(path, "has no column time_s (when each create is issued)")
    if "memory_mib" in names and "memory_share" in names:
        raise TraceError(path, "has memory_mib and memory_share: a trace gives one of them")


def _as_lists(
    path: str, batch: pa.RecordBatch, first: int, node_memory_mib: float
) -> tuple[dict[str, pa.Array], list]:
    """Each column of `ROW` the batch has, as an Arrow array (numbers as floats, a memory
    share as MiB of `node_memory_mib`) and as a Python list (one a batch lacks: None
    forever). A value that is not a number is named by its row (`first`: the number of the
    batch's first row)."""
    arrays: dict[str, pa.Array] = {}
    out: list = []
    for name in ROW:
        if name == "memory_mib" and "memory_share" in batch.schema.names:
            share = _floats(path, "memory_share", batch.column("memory_share"), first)
            _check_shares(path, share, first)
            column = pc.multiply(share, node_memory_mib)
        elif name not in batch.schema.names:
            out.append(repeat(None))
            continue
        else:
            column = batch.column(name)
            if name in NUMBERS:
                column = _floats(path, name, column, first)
            elif not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
                column = _text(path, name, column)
        arrays[name] = column
        out.append(column.to_pylist())
    return arrays, out


def _check_shares(path: str, share: pa.Array, first: int) -> None:
    """Refuses a memory share that is not a number in [0, 1], naming its row."""
    inside = pc.and_(pc.greater_equal(share, 0), pc.less_equal(share, 1))
    bad = pc.invert(pc.fill_null(inside, True))
    if pc.any(bad).as_py():
        i = pc.index(bad, True).as_py()
        raise TraceError(
            path,
            f"row {first + i}, column memory_share: must be a number in [0, 1] (of a node's "
            f"memory), got {share[i].as_py()!r}",
        )


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


def _parquet_batches(
    path: str, node_memory_mib: float
) -> Iterator[tuple[dict[str, pa.Array], list]]:
    try:
        trace = streamed(path)
    except (pa.ArrowInvalid, pa.ArrowIOError) as e:
        raise TraceError(path, f"is not a Parquet file ({e})") from None
    with trace:
        names = trace.schema_arrow.names
        _columns(path, names)
        first = 1
        for batch in trace.iter_batches(batch_size=BATCH_ROWS):
            yield _as_lists(path, batch, first, node_memory_mib)
            first += batch.num_rows


def _csv_batches(path: str, node_memory_mib: float) -> Iterator[tuple[dict[str, pa.Array], list]]:
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
            yield _as_lists(path, batch, first, node_memory_mib)
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


@dataclass(frozen=True)
class Scan:
    """What a run of a trace sends, read once before it runs."""

    creates: int
    """Rows before the run's end: creates sent."""
    crowd: int
    """The most rows at one instant."""
    crowd_at: float
    """The first instant with that many."""
    crowded: int
    """Instants with `CROWDED` rows or more."""
    gap: float
    """The shortest time between two instants (inf: fewer than two)."""


@functools.lru_cache(maxsize=8)
def _scan(
    path: str, stat: tuple[int, int], templates: frozenset[str], duration: float, memory: float
) -> Scan:
    """The rows before `duration` of a trace, every row checked; kept while the file is the
    same size and age (a sweep checks each cell's trace)."""
    creates = crowd = crowded = run = 0
    crowd_at, gap, at = 0.0, math.inf, math.nan
    for row in rows(path, templates, memory):
        t = row[0]
        if t >= duration:
            continue
        creates += 1
        if t == at:
            run += 1
        else:
            gap = min(gap, t - at) if creates > 1 else gap
            at, run = t, 1
        crowded += run == CROWDED
        if run > crowd:
            crowd, crowd_at = run, at
    return Scan(creates, crowd, crowd_at, crowded, gap)


def node_memory_mib(config: Config) -> float:
    """What a trace's `memory_share` of 1 is: the largest node's memory (a trace normalises
    memory to its largest machine, as Alibaba's does)."""
    return max(pool.memory_mib for pool in config.cluster.node_pools())


def replayed(config: Config, say: Callable[[str], None] | None = None) -> str:
    """The file in the harness's format that `config`'s run replays: `workload.trace` itself,
    or, for a trace of another format, its import for the run's window (imported now unless
    it was before; `say` hears about an import)."""
    w = config.workload
    fmt = TRACE_FORMATS[w.trace_format]
    if not fmt.imports:
        return w.trace
    span = config.run.duration_s
    return str(cache.imported(fmt, w.trace, w.trace_start_s, span, say))


def spread(config: Config, path: str) -> float:
    """Seconds over which the replay spreads the rows of one instant of the trace at `path`:
    `workload.trace_spread_s`, else what its importer recorded of its times' resolution, else
    0."""
    given = config.workload.trace_spread_s
    if given is not None:
        return given
    if Path(path).suffix.lower() == ".csv":
        return 0.0
    meta = pq.read_schema(path).metadata or {}
    return float(meta.get(SPREAD_KEY, b"0"))


def check(config: Config, say: Callable[[str], None] | None = None) -> int:
    """Checks every row of `config`'s trace before anything runs (exit 2 for a bad one),
    importing it first where its format asks, and returns how many creates it sends; 0 for
    other arrival kinds. `say` hears about an import, and a warning when many creates share
    one instant and nothing spreads them."""
    w = config.workload
    if not ARRIVALS[w.arrival].replay:
        return 0
    path = replayed(config, say)
    memory = node_memory_mib(config)
    scan = _scan(path, _stat(path), w.template_ids(), config.run.duration_s, memory)
    if not scan.creates:
        raise TraceError(
            path,
            f"no row before run.duration_s {config.run.duration_s:g}: the run would send nothing",
        )
    seconds = spread(config, path)
    if seconds > scan.gap:
        raise ConfigError(
            "workload.trace_spread_s",
            f"{seconds:g} s is wider than the {scan.gap:g} s between two instants of {path}: "
            "the spread of one would reach the next",
        )
    if say and not seconds and scan.crowded:
        say(
            f"warning: workload.trace: {scan.crowd:,} creates share the instant "
            f"{scan.crowd_at:g} s ({scan.crowded:,} instants have {CROWDED} or more): "
            "workload.trace_spread_s = S sends each instant's creates at uniform times over "
            "the S seconds after it (1 for a trace recorded to the second)"
        )
    return scan.creates
