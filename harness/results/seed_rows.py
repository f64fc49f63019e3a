"""Where one (strategy, seed)'s request rows and timeline samples go while an engine makes
them, and where the seed's statistics, its checks and the run's gather read them back.

An engine hands over rows a batch at a time as it goes (`add`); they are written at once, each
batch a row group of the seed's Parquet file in its part folder (`harness.results.run_writer`),
or kept in memory when there is no folder (a test, a seed run on its own). Either way nothing
of the seed's rows need stay in the engine, so a run's memory does not grow with its length,
and every figure drawn from them is read back in batches (`batches`)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from harness.results.arrow_schemas import REQUESTS, TIMELINE, stamped, table
from harness.results.atomic_files import failed, parquet_options
from harness.results.failures import WriteFailed

RECORDED = {"requests": REQUESTS, "timeline": TIMELINE}
"""The tables an engine records as it goes, by name, with their schemas (no `run_id`)."""
READ_ROWS = 1 << 16
"""Rows per batch read back."""


def streamed(path: Path | str) -> pq.ParquetFile:
    """`path` opened to be read a batch at a time in memory that does not grow with the file:
    without pyarrow's pre-buffering, which reads the column chunks of the row groups ahead and
    holds more the longer the file."""
    return pq.ParquetFile(path, pre_buffer=False)


class SeedRows:
    """The rows of one (strategy, seed), by table: in Parquet files in `folder`, each stamped
    with `run_id`, or in memory when `folder` is None."""

    def __init__(
        self, strategy: str, seed: int, folder: Path | None = None, run_id: str | None = None
    ) -> None:
        self.strategy = strategy
        self.seed = seed
        self.folder = folder
        self.run_id = run_id
        self.rows = dict.fromkeys(RECORDED, 0)
        self._held: dict[str, list[pa.Table]] = {name: [] for name in RECORDED}
        self._writers: dict[str, pq.ParquetWriter] = {}
        self._files: dict[str, pa.NativeFile] = {}
        """Each writer's file, opened here: a writer whose close fails (a full disk) leaves
        its file open, and `abandon` closes it, not the garbage collector some time later."""
        self.closed = False
        """The folder is made when the first rows come, inside a folder that must exist (the
        run's `parts/`, a sweep's scratch): a task still writing after its run closed and
        removed that folder fails rather than leave its files behind."""

    def path(self, name: str) -> Path:
        """The file of table `name` in the part folder."""
        assert self.folder is not None, "rows kept in memory have no file"
        return self.folder / f"{name}.parquet"

    def add(self, name: str, rows: pa.Table | pa.RecordBatch | Mapping[str, Any]) -> None:
        """One batch of table `name` ("requests" or "timeline"): a table of its schema, or the
        model's columns (`harness.model.recording`), filled in with the strategy and seed."""
        if self.closed:
            raise ValueError(f"the rows of {self.strategy} seed {self.seed} are closed")
        schema = RECORDED[name]
        if isinstance(rows, pa.RecordBatch):
            rows = pa.Table.from_batches([rows])
        elif not isinstance(rows, pa.Table):
            rows = table(schema, self.strategy, self.seed, dict(rows))
        if rows.num_rows == 0:
            return
        self.rows[name] += rows.num_rows
        if self.folder is None:
            self._held[name].append(rows)
            return
        try:
            writer = self._writers.get(name)
            stored = stamped(rows, self.run_id or "")
            if writer is None:
                writer = self._open(name, stored.schema)
            writer.write_table(stored, row_group_size=stored.num_rows)
        except OSError as e:
            raise failed(e, self.path(name)) from None

    def close(self) -> None:
        """No more rows: the files are finished (a table that got none is written empty, so
        every part holds both)."""
        if self.closed:
            return
        self.closed = True
        if self.folder is None:
            return
        try:
            for name, schema in RECORDED.items():
                writer = self._writers.get(name)
                if writer is None:
                    empty = stamped(schema.empty_table(), self.run_id or "")
                    writer = self._open(name, empty.schema)
                writer.close()
                del self._writers[name]
                self._files.pop(name).close()
        except OSError as e:
            raise failed(e, self.folder) from None

    def _open(self, name: str, schema: pa.Schema) -> pq.ParquetWriter:
        """Table `name`'s writer, on a file of its own (`_files`)."""
        assert self.folder is not None
        self.folder.mkdir(exist_ok=True)
        file = pa.OSFile(str(self.path(name)), "wb")
        try:
            writer = pq.ParquetWriter(file, schema, **parquet_options(schema))
        except BaseException:  # its first bytes not written (a full disk): the file is shut
            with contextlib.suppress(OSError):
                file.close()
            raise
        self._files[name], self._writers[name] = file, writer
        return writer

    def abandon(self) -> None:
        """Close the files whatever happened, raising nothing: a seed that failed leaves what
        it wrote readable, or nothing."""
        for closing in (*self._writers.values(), *self._files.values()):
            with contextlib.suppress(OSError, WriteFailed, pa.ArrowException):
                closing.close()
        self._writers.clear()
        self._files.clear()
        self.closed = True

    def batches(self, name: str, columns: Sequence[str] | None = None) -> Iterator[pa.RecordBatch]:
        """Table `name`'s rows as written, a batch at a time; only `columns` if given."""
        if self.folder is None:
            for held in self._held[name]:
                part = held if columns is None else held.select(list(columns))
                yield from part.to_batches(max_chunksize=READ_ROWS)
            return
        if not self.closed:
            raise ValueError("rows are read back once the seed's files are closed")
        with streamed(self.path(name)) as f:
            yield from f.iter_batches(batch_size=READ_ROWS, columns=columns)

    def table(self, name: str) -> pa.Table:
        """Table `name` whole, as the engine recorded it (no `run_id`): for tests and small
        runs, never on a path whose memory must stay bounded."""
        schema = RECORDED[name]
        if self.folder is None:
            return pa.concat_tables([schema.empty_table(), *self._held[name]])
        return pa.Table.from_batches(list(self.batches(name, schema.names)), schema)
