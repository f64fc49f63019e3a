"""Arrow data streamed in during a Ray run, kept on local disk rather than in memory."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa


class Spool:
    """One table's batches in the Arrow IPC file `path`, so a long run's memory does not grow
    with its length. `table()` maps the file back (pages are read only when used)."""

    def __init__(self, path: Path, schema: pa.Schema) -> None:
        self.path = path
        self._sink = pa.OSFile(str(self.path), "wb")
        self._writer = pa.ipc.new_file(self._sink, schema)

    def write(self, data: pa.Table | pa.RecordBatch) -> None:
        self._writer.write(data)

    def table(self) -> pa.Table:
        self._writer.close()
        self._sink.close()
        return pa.ipc.open_file(pa.memory_map(str(self.path))).read_all()
