"""A run's folder on disk: written seed by seed, so what finished stays readable.

A run folder holds `summary.parquet`, `nodes.parquet`, `requests.parquet`,
`timeline.parquet` and `run.json`. `run.json` is written first with `"completed": false` and
rewritten at the end, so a run that dies still says so. Each (strategy, seed) is written as
soon as it finishes, as its own small Parquet file under `parts/<table>/`; closing the run
gathers each table's parts into one compact file (`harness.files.write_parquet`) and removes
them. A run killed before it could close leaves its parts, each a whole Parquet file, and
`load_run` reads them.
"""

from __future__ import annotations

import json
import platform
import secrets
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

import harness
from harness.files import replace_atomically, write_json, write_parquet
from harness.schemas import TABLES, stamped, summary_table
from harness.seed_result import SeedResult


class ResultsError(ValueError):
    """A folder given as results is not one (or not a readable one)."""


PARTS = "parts"
"""The folder of a run's per-seed files until it closes."""


def new_run_id(name: str) -> str:
    """A run's id: its name, when it started (UTC) and 6 random hex digits, so ids from two
    runs started in the same second still differ."""
    return f"{name}-{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"


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
        self.run_id = new_run_id(config["run"]["name"])
        self.meta: dict[str, Any] = {
            "run_id": self.run_id,
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
        self._parts = 0
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
            folder = self.out_dir / PARTS / name
            folder.mkdir(parents=True, exist_ok=True)
            table = stamped(part, self.run_id)
            path = folder / f"{self._parts:05d}.parquet"
            replace_atomically(path, lambda tmp, table=table: pq.write_table(table, tmp))
        self._parts += 1
        key = [result.summary["strategy"], result.summary["seed"]]
        self.meta["partial" if partial else "finished"].append(key)
        for check in checks or ():
            entry = {"strategy": result.summary["strategy"], "seed": result.summary["seed"]}
            self.meta["invariants"].append({**entry, **check})
        self._write_meta()

    def close(self, completed: bool, error: str | None = None) -> None:
        """Each table's parts into one compact file (a run stopped before any seed still has
        its files, empty), then run.json says how the run ended."""
        for name, schema in TABLES.items():
            tables = (pq.read_table(p) for p in _parts(self.out_dir, name))
            write_parquet(self.out_dir / f"{name}.parquet", schema, tables)
        shutil.rmtree(self.out_dir / PARTS, ignore_errors=True)
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


def _parts(folder: Path, name: str) -> list[Path]:
    """The part files of one table, in the order they were written."""
    return sorted((folder / PARTS / name).glob("*.parquet"))


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
    for name, schema in TABLES.items():
        file = folder / f"{name}.parquet"
        # A run killed before closing has only its parts (run.json says completed: false).
        files = [file] if file.is_file() else _parts(folder, name)
        if not files and meta.get("completed", True):
            raise ResultsError(f"{folder} is missing {file.name}")
        tables = [schema.empty_table()]
        for f in files:
            try:
                tables.append(pq.read_table(f, schema=schema))
            except (pa.ArrowInvalid, OSError) as e:
                raise ResultsError(f"{f} is not a readable Parquet file: {e}") from None
        frames[name] = pa.concat_tables(tables).to_pandas()
    return meta, frames
