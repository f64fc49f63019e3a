"""Writing files so that a reader never sees half of one, and Parquet files that stay small."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from harness.results.failures import WriteFailed

ENCODINGS = {pa.types.is_floating: "BYTE_STREAM_SPLIT", pa.types.is_integer: "DELTA_BINARY_PACKED"}
"""Parquet encodings by column type; every other column (names, outcomes, run ids, flags) is
dictionary-encoded."""


def parquet_options(schema: pa.Schema) -> dict[str, Any]:
    """How every results table is written: zstd over encodings that leave it something to
    compress. Floats (model times, latencies) byte-stream-split, so their exponent bytes sit
    together; integers (sandbox and client IDs counting up) delta-encoded; the rest
    dictionary-encoded: the tables are mostly runs of such columns, which pyarrow's default
    encodings leave zstd little to find in."""
    encodings = {
        f.name: encoding for f in schema for test, encoding in ENCODINGS.items() if test(f.type)
    }
    dictionary = [name for name in schema.names if name not in encodings]
    return {"compression": "zstd", "use_dictionary": dictionary, "column_encoding": encodings}


ROW_GROUP_ROWS = 1 << 16
"""Rows per row group, and so what a gather holds at once: a row group's statistics cost
footer bytes, so not many; but a larger row group is held whole while it is written, and
every run shorter than it would then hold less than a longer one, so a run's peak would
grow with its length up to this many rows."""


def failed(error: OSError, path: Path) -> WriteFailed:
    """`error` as a WriteFailed naming the file it names (else `path`) and its reason: the
    system's words for its errno (Arrow wraps them in a longer text of its own)."""
    reason = os.strerror(error.errno) if error.errno else str(error)
    return WriteFailed(error.filename or path, reason)


def temporary(path: Path) -> Path:
    """Where `path` is written before it is renamed into place: a dot name, which dataset
    readers skip, in the same folder (a rename is atomic within one file system only)."""
    return path.with_name(f".{path.name}.tmp")


def replace_atomically(path: Path, write: Callable[[Path], None]) -> None:
    """`write(tmp)` next to `path`, then rename it over `path`: a reader sees the old file or
    the new one, never half of one. However the write ends (an OSError as WriteFailed, a
    signal) the temporary file is removed."""
    replace_together({path: write})


def replace_together(writes: dict[Path, Callable[[Path], None]]) -> None:
    """Each `write(tmp)` of `writes`, then every temporary renamed into place, only once all
    are written: a failure before leaves every file as it was and no temporary behind."""
    done: list[Path] = []
    try:
        for path, write in writes.items():
            done.append(temporary(path))
            write(done[-1])
        for path in writes:
            temporary(path).replace(path)
    except OSError as e:
        raise failed(e, done[-1] if done else next(iter(writes))) from None
    finally:
        for tmp in done:
            tmp.unlink(missing_ok=True)


def write_json(path: Path, data: Any) -> None:
    """`data` as indented JSON at `path`, atomically; values JSON lacks are written as text."""
    text = json.dumps(data, indent=2, default=str)
    replace_atomically(path, lambda tmp: tmp.write_text(text))


def write_text(path: Path, text: str) -> None:
    """`text` as UTF-8 at `path`, atomically."""
    replace_atomically(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def write_parquet(path: Path, schema: pa.Schema, parts: Iterable[pa.Table]) -> None:
    """`parts`, in order, as one compact Parquet file at `path`, atomically (see
    `parquet_writer`)."""
    replace_atomically(path, parquet_writer(schema, parts))


def parquet_writer(schema: pa.Schema, parts: Iterable[pa.Table]) -> Callable[[Path], None]:
    """What writes `parts`, in order, as one compact Parquet file: small parts are gathered
    into row groups of ROW_GROUP_ROWS (a writer makes one row group per write), so memory
    holds a row group and a part, however many parts come."""

    def write(tmp: Path) -> None:
        with pq.ParquetWriter(tmp, schema, **parquet_options(schema)) as writer:
            held: list[pa.Table] = []
            rows = 0
            for part in parts:
                held.append(
                    pa.Table.from_batches([part]) if isinstance(part, pa.RecordBatch) else part
                )
                rows += part.num_rows
                if rows >= ROW_GROUP_ROWS:
                    writer.write_table(pa.concat_tables(held), row_group_size=ROW_GROUP_ROWS)
                    held, rows = [], 0
            if held:  # an empty write would add an empty row group
                writer.write_table(pa.concat_tables(held), row_group_size=ROW_GROUP_ROWS)

    return write
