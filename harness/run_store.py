"""A run's folder on disk: written seed by seed, so what finished stays readable.

A run folder holds `summary.parquet`, `nodes.parquet`, `requests.parquet`,
`timeline.parquet` and `run.json`. `run.json` is written first with `"completed": false` and
rewritten at the end, so a run that dies still says so; each (strategy, seed) is appended as
its own row group as soon as it finishes.
"""

from __future__ import annotations

import json
import platform
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

import harness
from harness.files import write_json
from harness.schemas import TABLES, summary_table
from harness.seed_result import SeedResult


class ResultsError(ValueError):
    """A folder given as results is not one (or not a readable one)."""


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
        write_json(self.out_dir / "run.json", self.meta)

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

    def set_thresholds(self, records: list[dict[str, Any]]) -> None:
        """The run's threshold checks (`harness.thresholds.evaluate`), kept in run.json."""
        self.meta["thresholds"] = records
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
