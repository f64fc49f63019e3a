"""A run's folder on disk: written seed by seed, so what finished stays readable.

A run folder holds `summary.parquet`, `nodes.parquet`, `requests.parquet`,
`timeline.parquet` and `run.json`. `run.json` is written first with `"completed": false`,
brought up to date now and then as seeds finish and rewritten at the end, so a run that dies
still says so and lists what it finished. Each (strategy, seed) is written as soon as it
finishes, as its own small Parquet file under `parts/<table>/`; closing the run gathers each
table's parts into one compact file (`harness.results.atomic_files.write_parquet`) and removes
them. A run killed before it could close leaves its parts, each a whole Parquet file, and `load_run`
reads them.

A run owns its folder: it claims it under a lock (`harness.results.atomic_files.FolderLock`) held
until it ends, and only if the folder is new or empty, or holds results and `overwrite` was asked;
another run's or a sweep's folder is never written into."""

from __future__ import annotations

import errno
import json
import platform
import secrets
import shutil
import stat
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

import harness
from harness.results.arrow_schemas import TABLES, stamped, summary_table
from harness.results.atomic_files import FolderLock, replace_atomically, write_json, write_parquet
from harness.results.seed_result import SeedResult


class ResultsError(ValueError):
    """A folder given as results is not one (or not a readable one), or cannot be written."""


MARKS = {"run.json": "run", "sweep.json": "sweep"}
"""The file that says what a results folder holds."""

META_MIN_INTERVAL_S = 1.0
META_MAX_SHARE = 0.05
"""run.json is rewritten after a seed only once this long has passed since the last write,
and the last write took at most this share of the time since: rewriting all of it after every
seed made a run's time grow with the square of its seeds."""


def holder(folder: Path) -> str | None:
    """What a results folder holds, "run" or "sweep", or None; a folder holding both (an
    older harness let a run write into a sweep's folder) is unreadable as either."""
    held = [kind for mark, kind in MARKS.items() if (folder / mark).is_file()]
    if len(held) > 1:
        raise ResultsError(f"{folder} holds both a run and a sweep; it cannot be read as either")
    return held[0] if held else None


def check_writable(out_dir: Path) -> Path:
    """Refuse a path no results folder can be made at, before anything is created: one with a
    NUL byte, or one that is (or lies under) something other than a folder. Returns the
    nearest folder of the path that exists (`out_dir` itself if it does)."""
    if "\0" in str(out_dir):
        shown = str(out_dir).replace("\0", "\\0")
        raise ResultsError(f"{shown}: a path cannot hold a NUL byte")
    path = out_dir
    while True:
        try:
            mode = path.stat().st_mode
        except (FileNotFoundError, NotADirectoryError):
            if path == path.parent:
                raise ResultsError(
                    f"cannot create {out_dir}: no folder of its path exists"
                ) from None
            path = path.parent
            continue
        except OSError as e:
            raise ResultsError(f"cannot create {out_dir}: {e.strerror}") from None
        if stat.S_ISDIR(mode):
            return path
        if path == out_dir:
            raise ResultsError(f"{out_dir} is a file, not a folder")
        raise ResultsError(f"cannot create {out_dir}: {path} is a file, not a folder")


def check_out_dir(out_dir: Path, overwrite: bool = False) -> None:
    """Refuse an output folder a run may not write into (ResultsError saying why), without
    creating anything: see `check_writable`; a folder holding other files; a run's or a
    sweep's folder unless `overwrite` (never a folder of other files, even then)."""
    check_writable(out_dir)
    if not out_dir.is_dir():
        return
    held = holder(out_dir)
    if held is not None and not overwrite:
        raise ResultsError(
            f"{out_dir} holds a {held}; give another --out, or --overwrite to replace it"
        )
    try:
        empty = held is not None or not any(out_dir.iterdir())
    except OSError as e:
        raise ResultsError(f"{out_dir} cannot be read: {e.strerror}") from None
    if not empty:
        raise ResultsError(
            f"{out_dir} is not empty and holds no results; give a new or an empty folder"
        )


def lock_folder(out_dir: Path) -> FolderLock:
    """Create `out_dir` (and its parents) if need be and lock it for this process alone;
    ResultsError if it cannot be created or another run or sweep holds it."""
    existing = check_writable(out_dir)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        return FolderLock(out_dir)
    except BlockingIOError:
        raise ResultsError(f"{out_dir} is in use by another run or sweep") from None
    except OSError as e:
        # Under a folder that exists, "no such file" means its file system (say /proc) takes
        # no new folders: say so rather than leave the user looking for a missing one.
        where = "the working directory" if existing == Path(".") else existing
        reason = f"{where} takes no new folders" if e.errno == errno.ENOENT else e.strerror
        raise ResultsError(f"cannot create {out_dir}: {reason}") from None


def claim_out_dir(out_dir: Path, overwrite: bool = False) -> FolderLock:
    """Make `out_dir` this run's own: checked (`check_out_dir`) under the lock, so that no
    run or sweep can slip in between; a folder of results is emptied first when `overwrite`.
    The lock is held until the caller releases it."""
    lock = lock_folder(out_dir)
    try:
        check_out_dir(out_dir, overwrite)
        if holder(out_dir) is not None:
            _empty(out_dir)
    except OSError as e:
        lock.release()
        raise ResultsError(f"cannot replace what {out_dir} holds: {e.strerror}") from None
    except BaseException:
        lock.release()
        raise
    return lock


def _empty(folder: Path) -> None:
    """Delete what a folder of results holds, the file saying what it holds last: stopped
    midway, the folder still reads as results to replace, never as some other folder."""
    marks = [folder / mark for mark in MARKS]
    for path in folder.iterdir():
        if path in marks:
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    for mark in marks:
        mark.unlink(missing_ok=True)


PARTS = "parts"
"""The folder of a run's per-seed files until it closes."""


def new_run_id(name: str) -> str:
    """A run's id, and the name of its folder unless --out names one: its name, when it started
    (UTC) and 6 random hex digits, so ids from two runs started in the same second still
    differ."""
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
        overwrite: bool = False,
        run_id: str | None = None,
        plugins: list[dict[str, Any]] | None = None,
    ) -> None:
        self.out_dir = Path(out_dir)
        self._lock = claim_out_dir(self.out_dir, overwrite)
        self.run_id = run_id or new_run_id(config["run"]["name"])
        self.meta: dict[str, Any] = {
            "run_id": self.run_id,
            "harness_version": harness.__version__,
            "python": platform.python_version(),
            "pyarrow": pa.__version__,
            "engine": engine,
            "strategies": strategies,
            "plugins": plugins or [],
            "seeds": seeds,
            "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "completed": False,
            "finished": [],
            "partial": [],
            "invariants": [],
            "config": config,
        }
        self._parts = 0
        self._meta_due = 0.0
        self._write_meta()

    def _write_meta(self) -> None:
        began = time.monotonic()
        write_json(self.out_dir / "run.json", self.meta)
        took = time.monotonic() - began
        self._meta_due = began + max(META_MIN_INTERVAL_S, took / META_MAX_SHARE)

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
        if time.monotonic() >= self._meta_due:
            self._write_meta()

    def set_thresholds(self, records: list[dict[str, Any]]) -> None:
        """The run's threshold checks (`harness.results.thresholds.evaluate`), kept in run.json."""
        self.meta["thresholds"] = records
        self._write_meta()

    def close(self, completed: bool, error: str | None = None) -> None:
        """Each table's parts into one compact file (a run stopped before any seed still has
        its files, empty), then run.json in full, then let the folder go."""
        try:
            for name, schema in TABLES.items():
                tables = (pq.read_table(p) for p in _parts(self.out_dir, name))
                write_parquet(self.out_dir / f"{name}.parquet", schema, tables)
            shutil.rmtree(self.out_dir / PARTS, ignore_errors=True)
            self.meta["completed"] = completed
            self.meta["finished_at"] = datetime.now(UTC).isoformat(timespec="seconds")
            if error:
                self.meta["error"] = error
            self._write_meta()
        finally:
            self._lock.release()

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
    if holder(folder) != "run":
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
