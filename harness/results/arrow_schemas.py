"""The Arrow schemas of a run's four tables, and how column lists become tables of them.

Engines build the tables without `run_id`; the run's folder stamps it on as each table is
written (`stamped`), so `TABLES` holds the schemas as stored."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from harness.model.recording import NODE_FIELDS, REQUEST_FIELDS, TIMELINE_FIELDS, Coded
from harness.results.summary_columns import SUMMARY_COLUMNS

WIDTHS = {
    "i32": pa.int32(),
    "i64": pa.int64(),
    "f64": pa.float64(),
    "bool": pa.bool_(),
    "str": pa.string(),
    "code": pa.string(),
    "bin": pa.binary(),
}
"""The Arrow type of each width the model declares its columns with (`harness.model.recording`),
and the summary's (`harness.results.summary_columns`)."""


def _recorded(fields: tuple[tuple[str, str], ...]) -> pa.Schema:
    """The schema of a table the model records: the strategy and seed, then its columns as the
    model declares them."""
    return pa.schema(
        [("strategy", pa.string()), ("seed", pa.int64())]
        + [(name, WIDTHS[width]) for name, width in fields]
    )


REQUESTS = _recorded(REQUEST_FIELDS)
TIMELINE = _recorded(TIMELINE_FIELDS)
NODES = _recorded(NODE_FIELDS)
SUMMARY = pa.schema([(c.name, WIDTHS[c.width]) for c in SUMMARY_COLUMNS])
"""The summary table, from its one declaration (`harness.results.summary_columns`)."""
RUN_ID = pa.field("run_id", pa.string())
"""The first column of every stored table: which run (or sweep) wrote the row, to join on."""
TABLES = {
    name: schema.insert(0, RUN_ID)
    for name, schema in (
        ("summary", SUMMARY),
        ("nodes", NODES),
        ("requests", REQUESTS),
        ("timeline", TIMELINE),
    )
}
"""The tables of a run as stored, by name."""


def stamped(part: pa.Table, run_id: str) -> pa.Table:
    """`part` with the run's id as its first column, as stored."""
    return part.add_column(0, RUN_ID, repeated(run_id, pa.string(), part.num_rows))


def repeated(value: Any, type_: pa.DataType, n: int) -> pa.Array:
    """`value` `n` times, a string (strategy, run_id) or a number (seed). A string column is
    laid out directly, its offsets a range, and a number's filled by numpy: a list, or
    `pa.repeat` for a string, takes a fifth of a second per million rows, and `pa.repeat` or
    `take` as long the first time a process uses Arrow's compute functions."""
    if type_ != pa.string():
        return pa.array(np.full(n, value, type_.to_pandas_dtype()), type_)
    data = value.encode()
    if n * len(data) >= 2**31:  # beyond a string array's offsets
        return pa.array([value] * n, type_)
    offsets = np.arange(n + 1, dtype=np.int32) * np.int32(len(data))
    return pa.Array.from_buffers(type_, n, [None, pa.py_buffer(offsets), pa.py_buffer(data * n)])


def table(schema: pa.Schema, strategy: str, seed: int, columns: dict[str, Any]) -> pa.Table:
    """An Arrow table of `schema` from columns (lists, arrays, buffers of numbers of the
    field's width, or `Coded` strings), with the strategy and seed filled in. Each list is
    converted to its field's type first: `from_pydict` converts lists at half that speed."""
    n = len(next(iter(columns.values()))) if columns else 0
    recorded = schema.names[2:]
    if columns and sorted(columns) != sorted(recorded):
        missing, extra = set(recorded) - set(columns), set(columns) - set(recorded)
        raise ValueError(f"columns {sorted(extra)} not in the schema, {sorted(missing)} missing")
    arrays = {
        "strategy": repeated(strategy, pa.string(), n),
        "seed": repeated(seed, pa.int64(), n),
    }
    for name, values in columns.items():
        type_ = schema.field(name).type
        if isinstance(values, list | tuple):
            arrays[name] = pa.array(values, type_)
        elif isinstance(values, pa.Array | pa.ChunkedArray | np.ndarray):
            arrays[name] = values
        elif isinstance(values, Coded):  # each row's label, taken at once
            codes = pa.array(np.frombuffer(values.codes, np.uint8))
            arrays[name] = pa.array(values.labels, type_).take(codes)
        else:  # numbers in a buffer (the model's `librt.vecs` columns): read, not visited
            arrays[name] = pa.array(_numbers(name, values, type_), type_)
    return pa.Table.from_pydict(arrays, schema=schema)


def _numbers(name: str, values: Any, type_: pa.DataType) -> np.ndarray:
    """A buffer of numbers as `type_`'s array; one of another width is an error, not numbers
    read at the wrong width."""
    dtype = np.dtype(type_.to_pandas_dtype())
    view = memoryview(values)
    if view.itemsize != dtype.itemsize or np.dtype(view.format).kind != dtype.kind:
        raise TypeError(
            f"column {name!r}: a buffer of {view.format!r} items ({view.itemsize} bytes) "
            f"for a {type_} column"
        )
    return np.frombuffer(values, dtype)


def summary_table(summaries: list[dict[str, Any]]) -> pa.Table:
    """Summary rows (one dict per (strategy, seed)) as a table of the SUMMARY schema. A figure
    without a column is an error: Arrow would drop it without a word."""
    columns = set(SUMMARY.names)
    for row in summaries:
        extra = sorted(set(row) - columns)
        if extra:
            raise ValueError(f"summary figures without a column in SUMMARY: {', '.join(extra)}")
    return pa.Table.from_pylist(summaries, schema=SUMMARY)
