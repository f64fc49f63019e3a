"""A sweep's folder on disk, written cell by cell so that whatever finished stays readable.

    sweep.json              the sweep (base config, grid, seeds, run id), each cell's status
    summary.parquet         one row per (cell, seed) of every complete cell, with the varied keys
    nodes/cell=<n>/...      hive-partitioned Parquet datasets, one per table schema, one file
    requests/cell=<n>/...   per cell, each row with the cell's values of the varied keys
    timeline/cell=<n>/...

The sweep holds its folder under a lock until it closes
(`harness.results.folder_policy.lock_folder`), so no run or second sweep writes into it meanwhile.
Every table has the sweep's `run_id` (kept when a sweep is resumed), so results of several
sweeps and runs can be stacked and told apart.

A cell is complete once sweep.json says so. Its tables are written first (replacing whatever
an earlier, interrupted attempt left in its partition), then summary.parquet, then sweep.json,
each file replaced atomically: a crash at any point leaves the cell either complete or to be
run again, never half counted."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

import harness
from harness import interrupts, testing_signals
from harness.results import machine
from harness.results.arrow_schemas import TABLES, stamped, summary_table
from harness.results.atomic_files import write_json, write_parquet
from harness.results.failures import ResultsError
from harness.results.folder_policy import (
    holder,
    lock_folder,
    marker,
    new_run_id,
    nothing_written,
)
from harness.results.run_reader import check_fields, read_columns, read_record
from harness.results.seed_result import SeedResult
from harness.results.seed_rows import RECORDED, SeedRows
from harness.results.thresholds import evaluate

if TYPE_CHECKING:  # what it reads of a config: `config_view`, none of the layer above
    from harness.results.config_view import CellView, SweepView

CELL_TABLES = ("nodes", "requests", "timeline")
SEEDS = ".seeds"
"""The scratch folder of the seeds running, each seed's rows in a folder of its own until its
cell is written (a dot name: datasets and `harness report` pass over it)."""
PARTITIONING = ds.partitioning(pa.schema([("cell", pa.int32())]), flavor="hive")
COMPLETE, FAILED, PENDING = "complete", "failed", "pending"


def check_sweep_out(out_dir: Path, sweep: SweepView) -> dict[str, Any] | None:
    """Refuse a folder `sweep` may not write into (ResultsError): one holding a run or a
    search, or another sweep's results; the sweep.json of this sweep's finished cells, if
    any."""
    held = holder(out_dir)
    if held not in (None, "sweep"):
        raise ResultsError(f"{out_dir} holds a {held}, not a sweep; give another --out")
    old = _read_meta(out_dir) if is_sweep(out_dir) else None
    if old is not None and old.get("identity") != _jsonable(sweep.identity()):
        raise ResultsError(
            f"{out_dir} holds the results of a different sweep (base config, grid or seeds "
            "differ); give another --out"
        )
    return old


class SweepStore:
    """Opens (or creates) the folder of one sweep, and holds it until `close`; refuses a
    folder holding a run or another sweep, or held by a run or sweep still going."""

    def __init__(self, out_dir: Path, sweep: SweepView) -> None:
        self.out_dir = Path(out_dir)
        self.sweep = sweep
        self._lock = lock_folder(self.out_dir)
        try:
            self._open()
        except BaseException:
            self._lock.release()
            raise

    def _open(self) -> None:
        sweep = self.sweep
        old = check_sweep_out(self.out_dir, sweep)
        previous = {c["cell"]: c for c in old["cells"]} if old else {}
        self.run_id = old["run_id"] if old and "run_id" in old else new_run_id(sweep.name)
        # One Arrow type per varied key over all cells, so every partition agrees.
        self.key_types = {
            key: pa.array([cell.values[key] for cell in sweep.cells]).type for key in sweep.keys
        }
        self.meta: dict[str, Any] = {
            "run_id": self.run_id,
            "harness_version": harness.__version__,
            "machine": machine.fingerprint(),
            "kind": "sweep",
            "name": sweep.name,
            "keys": sweep.keys,
            "grid_keys": list(sweep.grid),
            "seeds": sweep.seeds,
            "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "completed": False,
            "identity": _jsonable(sweep.identity()),
            "cells": [
                previous.get(cell.index)
                or {"cell": cell.index, "values": _jsonable(cell.values), "status": PENDING}
                for cell in sweep.cells
            ],
        }
        self._summaries: dict[int, pa.Table] = {}
        summary_path = self.out_dir / "summary.parquet"
        if summary_path.is_file():
            done = pq.read_table(summary_path)
            for cell in self.complete():
                self._summaries[cell] = done.filter(pc.equal(done["cell"], cell))
                self._judge(sweep.cells[cell])  # this sweep's thresholds, maybe not the last's
        self.reused = len(self.complete())
        """Cells an earlier run of this sweep had completed, kept rather than run again."""
        self._write_meta()

    def complete(self) -> set[int]:
        return {c["cell"] for c in self.meta["cells"] if c["status"] == COMPLETE}

    def pending(self) -> list[CellView]:
        """Cells still to run: never run, interrupted, or failed last time."""
        done = self.complete()
        return [cell for cell in self.sweep.cells if cell.index not in done]

    def seed_rows(self, cell: CellView, seed: int) -> SeedRows:
        """Where the rows of one seed of a cell go while it runs: Parquet files in a scratch
        folder of the sweep's (`SEEDS`), gathered into the cell's partitions once its seeds
        are in, then removed."""
        folder = self.out_dir / SEEDS / f"{cell.index}-{seed}"
        folder.parent.mkdir(exist_ok=True)
        return SeedRows(cell.config.placement.strategy, seed, folder, self.run_id)

    def add_cell(self, cell: CellView, results: list[SeedResult], wall_s: float) -> None:
        """Write a finished cell; `results` in seed order, so reruns give identical files. Its
        partition of each table is one file, replaced whole (an earlier, interrupted attempt's
        file included), streamed from its seeds' rows a batch at a time. A signal meanwhile
        waits for the cell to be written."""
        with interrupts.uncut():
            testing_signals.at("cell")
            self._add_cell(cell, results, wall_s)

    def _add_cell(self, cell: CellView, results: list[SeedResult], wall_s: float) -> None:
        for name in CELL_TABLES:
            schema = self._stamped(TABLES[name].empty_table().drop_columns(["run_id"]), cell).schema
            folder = self.out_dir / name / f"cell={cell.index}"
            folder.mkdir(parents=True, exist_ok=True)
            write_parquet(folder / "part-0.parquet", schema, self._cell_parts(name, cell, results))
        for result in results:  # the seeds' scratch files, now in the cell's partitions
            if result.rows.folder is not None:
                shutil.rmtree(result.rows.folder, ignore_errors=True)
        rows = summary_table([r.summary for r in results])
        rows = rows.append_column("cell", pa.array([cell.index] * len(rows), pa.int32()))
        self._summaries[cell.index] = self._stamped(rows, cell)
        self._write_summary()
        self._judge(cell)
        self._set(cell, status=COMPLETE, error=None, traceback=None, wall_s=round(wall_s, 3))

    def _cell_parts(
        self, name: str, cell: CellView, results: list[SeedResult]
    ) -> Iterator[pa.Table]:
        """Table `name` of each seed of a cell, in seed order, stamped, a batch at a time."""
        for result in results:
            if name == "nodes":
                yield self._stamped(result.nodes, cell)
                continue
            for batch in result.rows.batches(name, RECORDED[name].names):
                yield self._stamped(pa.Table.from_batches([batch]), cell)

    def _judge(self, cell: CellView) -> None:
        """The cell's threshold checks, on its summary rows, into its entry of sweep.json."""
        rows = self._summaries[cell.index].to_pandas()
        self.meta["cells"][cell.index]["thresholds"] = evaluate(cell.config.thresholds, rows)

    def fail_cell(self, cell: CellView, error: str, trace: str) -> None:
        """Record a cell that raised; the sweep goes on and a rerun tries it again."""
        self._set(cell, status=FAILED, error=error, traceback=trace)

    def close(self) -> None:
        """Write the summary and sweep.json in full, then let the folder go; the scratch rows
        of seeds whose cell did not finish go."""
        try:
            shutil.rmtree(self.out_dir / SEEDS, ignore_errors=True)
            self.meta["completed"] = len(self.complete()) == len(self.sweep.cells)
            self.meta["finished_at"] = datetime.now(UTC).isoformat(timespec="seconds")
            self._write_summary()
            self._write_meta()
        finally:
            self._lock.release()

    def _stamped(self, part: pa.Table, cell: CellView) -> pa.Table:
        """`part` with the sweep's run id first and the cell's value of each varied key last."""
        part = stamped(part, self.run_id)
        for key, kind in self.key_types.items():
            part = part.append_column(key, pa.repeat(pa.scalar(cell.values[key], kind), len(part)))
        return part

    def _set(self, cell: CellView, **fields: Any) -> None:
        self.meta["cells"][cell.index].update(fields)
        self._write_meta()

    def _write_summary(self) -> None:
        parts = [self._summaries[c] for c in sorted(self._summaries)]
        if parts:
            write_parquet(self.out_dir / "summary.parquet", parts[0].schema, parts)

    def _write_meta(self) -> None:
        write_json(self.out_dir / marker("sweep"), self.meta)


def _jsonable(value: Any) -> Any:
    """As JSON gives it back (tuples as lists), so a fresh identity compares with a stored one."""
    return json.loads(json.dumps(value))


def _read_meta(folder: Path) -> dict[str, Any]:
    path = folder / marker("sweep")
    meta = read_record(path, META_TYPES, "a sweep's")
    for cell in meta["cells"]:
        check_fields(path, cell, CELL_TYPES, "a sweep cell's")
    return meta


META_TYPES: dict[str, type | tuple[type, ...]] = {
    "name": str,
    "keys": list,
    "grid_keys": list,
    "seeds": list,
    "identity": dict,
    "cells": list,
}
CELL_TYPES: dict[str, type | tuple[type, ...]] = {"cell": int, "values": dict, "status": str}
"""What the readers of sweep.json rely on, and its type: of the sweep, and of each cell."""


def sweep_state(folder: Path) -> str:
    """What a sweep stopped early left in `folder`, truly, for the line said then."""
    if not is_sweep(folder):
        return nothing_written(folder)
    try:
        done = sum(c["status"] == COMPLETE for c in _read_meta(folder)["cells"])
    except ResultsError:
        done = 0
    return f"{done} finished cells are in {folder}; run the same command again to do the rest"


def is_sweep(path: str | Path) -> bool:
    return (Path(path) / marker("sweep")).is_file()


def load_sweep_results(path: str | Path) -> tuple[dict[str, Any], pd.DataFrame]:
    """(sweep.json, summary of the complete cells), or ResultsError saying why not."""
    folder = Path(path)
    holder(folder)  # a folder a run also wrote into cannot be read as a sweep
    meta = _read_meta(folder)
    summary_path = folder / "summary.parquet"
    if not summary_path.is_file():
        columns = [*TABLES["summary"].names, "cell", *meta["keys"]]
        return meta, pd.DataFrame(columns=columns)
    columns = [*TABLES["summary"].names, "cell", *meta["keys"]]
    summary = read_columns(summary_path, columns).to_pandas()
    complete = {c["cell"] for c in meta["cells"] if c["status"] == COMPLETE}
    return meta, summary[summary["cell"].isin(complete)].reset_index(drop=True)


def cell_batches(
    path: str | Path, cells: list[int]
) -> Callable[[str, Sequence[str]], Iterator[pa.Table]]:
    """A large table's rows for some cells, some columns of it, a batch at a time: what a
    report reads of them, in bounded memory however long the cells ran."""

    def batches(table: str, columns: Sequence[str]) -> Iterator[pa.Table]:
        folder = Path(path) / table
        if not folder.is_dir():
            return
        dataset = ds.dataset(folder, format="parquet", partitioning=PARTITIONING)
        for cell in sorted(cells):
            for batch in dataset.to_batches(columns=list(columns), filter=ds.field("cell") == cell):
                yield pa.Table.from_batches([batch])

    return batches


def read_cells(
    path: str | Path, table: str, cells: list[int], columns: Sequence[str] | None = None
) -> pd.DataFrame:
    """One table's rows for some cells, read from its partitions only (and of its columns,
    only `columns` and the cell, if given)."""
    folder = Path(path) / table
    if not folder.is_dir():
        empty = TABLES[table].empty_table()
        return (empty if columns is None else empty.select(list(columns))).to_pandas()
    dataset = ds.dataset(folder, format="parquet", partitioning=PARTITIONING)
    read = None if columns is None else [*columns, "cell"]
    # Cell by cell, in order (the partitions list as text: cell=10 before cell=2), so no sort
    # copies the rows; each Arrow buffer is let go as soon as pandas holds its column.
    parts = [dataset.to_table(columns=read, filter=ds.field("cell") == c) for c in sorted(cells)]
    empty = dataset.schema.empty_table()
    table = pa.concat_tables(parts) if parts else empty if read is None else empty.select(read)
    del parts
    return table.to_pandas(self_destruct=True, split_blocks=True)
