"""Run results: Arrow schemas, the in-run recorder, and Parquet files on disk.

A run folder holds `summary.parquet`, `nodes.parquet`, `requests.parquet`,
`timeline.parquet` and `run.json`. `run.json` is written first with `"completed": false` and
rewritten at the end, so a run that dies still says so; each (strategy, seed) is appended as
its own row group as soon as it finishes, so what finished is readable.
"""

from __future__ import annotations

import json
import platform
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

import harness
from harness.node import Node

REQUESTS = pa.schema(
    [
        ("strategy", pa.string()),
        ("seed", pa.int64()),
        ("kind", pa.string()),
        ("sandbox_id", pa.int64()),
        ("client", pa.int64()),
        ("replica", pa.int32()),
        ("issued_at", pa.float64()),
        ("sent_at", pa.float64()),
        ("done_at", pa.float64()),
        ("latency_ms", pa.float64()),
        ("node_id", pa.int32()),
        ("rpcs", pa.int32()),
        ("skips", pa.int32()),
        ("attempts", pa.int32()),
        ("outcome", pa.string()),
        ("reason", pa.string()),
    ]
)
TIMELINE = pa.schema(
    [
        ("strategy", pa.string()),
        ("seed", pa.int64()),
        ("t", pa.float64()),
        ("node_id", pa.int32()),
        ("replica", pa.int32()),
        ("cpu_allocated", pa.float64()),
        ("sandboxes", pa.int32()),
        ("view_cpu_allocated", pa.float64()),
        ("in_progress", pa.int32()),
        ("in_progress_cpu", pa.float64()),
        ("kill_in_progress_cpu", pa.float64()),
        ("cpu_error", pa.float64()),
    ]
)
NODES = pa.schema(
    [
        ("strategy", pa.string()),
        ("seed", pa.int64()),
        ("node_id", pa.int32()),
        ("sandboxes", pa.int32()),
        ("cpu_allocated", pa.float64()),
        ("initial_cpu_allocated", pa.float64()),
        ("peak_cpu_allocated", pa.float64()),
        ("capacity", pa.float64()),
        ("down", pa.bool_()),
        ("lost", pa.int32()),
    ]
)
SUMMARY = pa.schema(
    [
        ("engine", pa.string()),
        ("strategy", pa.string()),
        ("seed", pa.int64()),
        ("nodes", pa.int32()),
        ("k", pa.int32()),
        ("replicas", pa.int32()),
        ("requests", pa.int64()),
        ("placed", pa.int64()),
        ("failed", pa.int64()),
        ("failed_no_candidate", pa.int64()),
        ("failed_attempts_exhausted", pa.int64()),
        ("failed_deadline", pa.int64()),
        ("kills", pa.int64()),
        ("kills_failed", pa.int64()),
        ("cv", pa.float64()),
        ("max_count", pa.int64()),
        ("min_count", pa.int64()),
        ("p50_place_ms", pa.float64()),
        ("p99_place_ms", pa.float64()),
        ("err_mean_abs", pa.float64()),
        ("err_over_max", pa.float64()),
        ("err_under_max", pa.float64()),
        ("err_nonzero_frac", pa.float64()),
        ("sim_duration_s", pa.float64()),
        ("engine_wall_s", pa.float64()),
        # Faults injected (harness.faults.COUNTS) and what they cost (harness.invariants).
        ("fault_rpc_failed", pa.int64()),
        ("fault_rpc_exhausted", pa.int64()),
        ("fault_timeouts", pa.int64()),
        ("fault_down_creates", pa.int64()),
        ("fault_down_kills", pa.int64()),
        ("fault_lost_reports", pa.int64()),
        ("fault_crashes", pa.int64()),
        ("lost_sandboxes", pa.int64()),
        ("orphans", pa.int64()),
        ("invariants_ok", pa.bool_()),
        # Engines in real time only (null for the virtual engine); times in model ms.
        ("time_scale", pa.float64()),
        ("create_rpc_p50_ms", pa.float64()),
        ("create_rpc_p99_ms", pa.float64()),
        ("heartbeat_late_p50_ms", pa.float64()),
        ("heartbeat_late_p99_ms", pa.float64()),
        ("ray_nodes", pa.int32()),
    ]
)
TABLES = {"summary": SUMMARY, "nodes": NODES, "requests": REQUESTS, "timeline": TIMELINE}


class ResultsError(ValueError):
    """A folder given as results is not one (or not a readable one)."""


class Recorder:
    """Collects one (strategy, seed)'s rows as tuples, cheap on the hot path; `columns` turns
    them into the column lists `table()` takes."""

    def __init__(self) -> None:
        self.requests: list[tuple] = []
        self.timeline: list[tuple] = []

    def request(
        self,
        kind: str,
        sandbox_id: int,
        client: int,
        replica: int,
        issued_at: float,
        done_at: float,
        node_id: int,
        rpcs: int,
        skips: int,
        attempts: int,
        outcome: str,
        reason: str,
        sent_at: float | None = None,
    ) -> None:
        """`issued_at` is when the call was meant to go out and latency counts from it (no
        coordinated omission); `sent_at` is when it did, if later (engines in real time)."""
        self.requests.append(
            (
                kind,
                sandbox_id,
                client,
                replica,
                issued_at,
                issued_at if sent_at is None else sent_at,
                done_at,
                (done_at - issued_at) * 1000.0,
                node_id,
                rpcs,
                skips,
                attempts,
                outcome,
                reason,
            )
        )

    def sample(
        self,
        t: float,
        node_id: int,
        replica: int,
        cpu_allocated: float,
        sandboxes: int,
        view_cpu_allocated: float,
        in_progress: int,
        in_progress_cpu: float,
        kill_in_progress_cpu: float,
    ) -> None:
        """One (node, replica) at `t`; `cpu_error` = believed minus true allocated vCPU."""
        self.timeline.append(
            (
                t,
                node_id,
                replica,
                cpu_allocated,
                sandboxes,
                view_cpu_allocated,
                in_progress,
                in_progress_cpu,
                kill_in_progress_cpu,
                view_cpu_allocated - cpu_allocated,
            )
        )

    @staticmethod
    def columns(schema: pa.Schema, rows: list[tuple]) -> dict[str, list | tuple]:
        """Rows of `schema`'s fields after strategy and seed, as column lists."""
        names = schema.names[2:]
        if not rows:
            return {name: [] for name in names}
        return dict(zip(names, zip(*rows, strict=True), strict=True))


def node_columns(nodes: list[Node]) -> dict[str, list]:
    """The NODES columns of a cluster's end state (strategy and seed are added by `table`)."""
    return {
        "node_id": [n.node_id for n in nodes],
        "sandboxes": [len(n.sandboxes) for n in nodes],
        "cpu_allocated": [n.cpu_allocated for n in nodes],
        "initial_cpu_allocated": [n.base_cpu for n in nodes],
        "peak_cpu_allocated": [n.peak_cpu_allocated for n in nodes],
        "capacity": [n.capacity for n in nodes],
        "down": [n.down for n in nodes],
        "lost": [len(n.lost) for n in nodes],
    }


def table(schema: pa.Schema, strategy: str, seed: int, columns: dict[str, list]) -> pa.Table:
    """An Arrow table of `schema` from column lists, with the strategy and seed filled in."""
    n = len(next(iter(columns.values()))) if columns else 0
    arrays = {
        "strategy": pa.array([strategy] * n, pa.string()),
        "seed": pa.array([seed] * n, pa.int64()),
    }
    arrays.update(columns)
    return pa.Table.from_pydict(arrays, schema=schema)


class Spool:
    """Arrow data of one table streamed in during a run, kept in the Arrow IPC file `path`
    rather than in memory, so a long run's memory does not grow with its length. `table()`
    maps the file back (pages are read only when used)."""

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


def summary_table(summaries: list[dict[str, Any]]) -> pa.Table:
    """Summary rows (one dict per (strategy, seed)) as a table of the SUMMARY schema."""
    return pa.Table.from_pylist(summaries, schema=SUMMARY)


@dataclass
class SeedResult:
    """Everything one (strategy, seed) produced, and the end state the invariant checks need
    (`harness.invariants`), in the same form whichever engine ran."""

    summary: dict[str, Any]
    nodes: pa.Table
    requests: pa.Table
    timeline: pa.Table
    sandbox_ids: list[list[int]] = field(default_factory=list)
    """The sandbox IDs each node runs at the end, node by node."""
    lost_ids: list[int] = field(default_factory=list)
    """IDs of sandboxes that were on a node when it crashed."""
    drained_views: list[list[float]] | None = None
    """Believed vCPUs per replica and node after the run drained and every live node sent one
    last report; None when the engine could not take it."""


class RunWriter:
    """Writes a run folder incrementally; use as a context manager so it is always closed."""

    def __init__(
        self,
        out_dir: Path,
        config: dict[str, Any],
        strategies: list[str],
        seeds: list[int],
        engine: str,
    ) -> None:
        self.out_dir = Path(out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.meta: dict[str, Any] = {
            "harness_version": harness.__version__,
            "python": platform.python_version(),
            "pyarrow": pa.__version__,
            "engine": engine,
            "strategies": strategies,
            "seeds": seeds,
            "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "completed": False,
            "finished": [],
            "partial": [],
            "invariants": [],
            "config": config,
        }
        self._writers: dict[str, pq.ParquetWriter] = {}
        self._write_meta()

    def _write_meta(self) -> None:
        tmp = self.out_dir / "run.json.tmp"
        tmp.write_text(json.dumps(self.meta, indent=2, default=str))
        tmp.replace(self.out_dir / "run.json")

    def add(
        self, result: SeedResult, checks: list[dict[str, Any]] | None = None, partial: bool = False
    ) -> None:
        """Append one (strategy, seed); `checks` are its invariant checks, kept in run.json.
        A `partial` seed (stopped midway, unchecked) is listed under "partial", not "finished",
        and only its requests and samples are kept: a summary of half a seed would mix into
        the statistics over seeds."""
        parts = {"requests": result.requests, "timeline": result.timeline}
        if not partial:
            parts |= {"summary": summary_table([result.summary]), "nodes": result.nodes}
        for name, part in parts.items():
            writer = self._writers.get(name)
            if writer is None:
                writer = pq.ParquetWriter(self.out_dir / f"{name}.parquet", TABLES[name])
                self._writers[name] = writer
            writer.write_table(part)
        key = [result.summary["strategy"], result.summary["seed"]]
        self.meta["partial" if partial else "finished"].append(key)
        for check in checks or ():
            entry = {"strategy": result.summary["strategy"], "seed": result.summary["seed"]}
            self.meta["invariants"].append({**entry, **check})
        self._write_meta()

    def close(self, completed: bool, error: str | None = None) -> None:
        for writer in self._writers.values():
            writer.close()
        self._writers.clear()
        for name, schema in TABLES.items():  # a run stopped before any seed still has files
            path = self.out_dir / f"{name}.parquet"
            if not path.exists():
                pq.write_table(schema.empty_table(), path)
        self.meta["completed"] = completed
        self.meta["finished_at"] = datetime.now(UTC).isoformat(timespec="seconds")
        if error:
            self.meta["error"] = error
        self._write_meta()

    def __enter__(self) -> RunWriter:
        return self

    def __exit__(self, exc_type: type | None, exc: BaseException | None, tb: Any) -> None:
        if exc_type is None:
            self.close(completed=True)
        else:
            reason = "interrupted" if issubclass(exc_type, KeyboardInterrupt) else repr(exc)
            self.close(completed=False, error=reason)


def load_run(path: str | Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(run.json, {table name: DataFrame}) of a run folder, or ResultsError saying why not."""
    folder = Path(path)
    if not folder.is_dir():
        raise ResultsError(f"{folder} is not a folder")
    meta_path = folder / "run.json"
    if not meta_path.is_file():
        raise ResultsError(f"{folder} is not a results folder (no run.json)")
    try:
        meta = json.loads(meta_path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ResultsError(f"{meta_path} is not valid JSON: {e}") from None
    frames = {}
    for name in TABLES:
        file = folder / f"{name}.parquet"
        if not file.is_file():
            raise ResultsError(f"{folder} is missing {file.name}")
        try:
            frames[name] = pq.read_table(file).to_pandas()
        except (pa.ArrowInvalid, OSError) as e:
            raise ResultsError(f"{file} is not a readable Parquet file: {e}") from None
    return meta, frames
