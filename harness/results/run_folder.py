"""A run's folder on disk: written seed by seed, so what finished stays readable, and every
file replaced whole, so a failure (a full disk, a lost permission, a signal) leaves the
previous complete state or the new one, never half of one.

A run folder holds `summary.parquet`, `nodes.parquet`, `requests.parquet`,
`timeline.parquet` and `run.json`. `run.json` is written first with `"completed": false`,
brought up to date now and then as seeds finish and rewritten at the end. Each (strategy,
seed) is committed as soon as it finishes: its tables and a `seed.json` saying which seed it
is, with each table's row count and checksum (`files`), are written into `parts/.<n>.tmp/`,
which is then renamed `parts/<n>/` (one atomic rename, so a seed is on disk whole or not at
all). While `parts/` exists, it is the truth: readers (`load_run`, `--resume`) take the seeds
and their invariant checks from it, whatever an older run.json says, and check every part
against its `files` first (`check_part`): a damaged one is named, and `--resume` runs its seed
again. Closing the run writes each table gathered from the parts to a temporary file, renames
the four into place only once all are written, then writes run.json; only a run that
completed removes `parts/`, so an interrupted one keeps its finished seeds for `--resume`. A
close that fails (say, the disk is full) removes its temporary files, keeps the parts and
says in run.json why the run is incomplete; `--resume` finishes it.

A run owns its folder: it claims it under a lock (`harness.results.atomic_files.FolderLock`) held
until it ends, and only if the folder is new or empty, or holds results and `overwrite` was asked,
or holds this very run, unfinished, to resume; another run's or a sweep's folder is never written
into."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import platform
import secrets
import shutil
import stat
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

import harness
from harness import interrupts, testing_signals
from harness.results import machine
from harness.results.arrow_schemas import TABLES, stamped, summary_table
from harness.results.atomic_files import (
    FolderLock,
    WriteFailed,
    failed,
    parquet_writer,
    replace_together,
    write_json,
)
from harness.results.failures import ResultsError
from harness.results.folder_kinds import MARKS, holder
from harness.results.seed_result import SeedResult
from harness.results.seed_rows import READ_ROWS, RECORDED, SeedRows

META_MIN_INTERVAL_S = 1.0
META_MAX_SHARE = 0.05
"""run.json is rewritten after a seed only once this long has passed since the last write,
and the last write took at most this share of the time since: rewriting all of it after every
seed made a run's time grow with the square of its seeds."""


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
        if held == "run" and _unfinished(out_dir):
            raise ResultsError(
                f"{out_dir} holds an unfinished run: harness run --resume {out_dir} finishes "
                "it; or give another --out, or --overwrite to replace it"
            )
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


def _unfinished(folder: Path) -> bool:
    """Whether `folder` holds a readable run.json of a run that has not completed."""
    try:
        return not read_meta(folder)["completed"]
    except ResultsError:
        return False


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
SEED_FILE = "seed.json"
"""In each seed's folder of parts: which (strategy, seed) it is, whether it is partial, and
its invariant checks."""


def new_run_id(name: str) -> str:
    """A run's id, and the name of its folder unless --out names one: its name, when it started
    (UTC) and 6 random hex digits, so ids from two runs started in the same second still
    differ."""
    return f"{name}-{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"


def read_meta(folder: Path) -> dict[str, Any]:
    """The run.json of a run folder, or ResultsError naming it and what is wrong with it."""
    if not folder.is_dir():
        raise ResultsError(f"{folder} is not a folder")
    if holder(folder) != "run":
        raise ResultsError(f"{folder} is not a results folder (no run.json)")
    path = folder / "run.json"
    meta = read_record(path, META_TYPES, "a run's")
    for key, kind in (("strategies", str), ("seeds", int)):
        if not all(isinstance(item, kind) for item in meta[key]):
            raise ResultsError(f"{path}: {key!r} holds other than {kind.__name__}s")
    return meta


META_TYPES: dict[str, type | tuple[type, ...]] = {
    "config": dict,
    "strategies": list,
    "seeds": list,
    "finished": list,
    "partial": list,
    "invariants": list,
    "completed": bool,
}
"""What the readers of run.json rely on, and its type."""


def read_record(
    path: Path, types: dict[str, type | tuple[type, ...]], whose: str
) -> dict[str, Any]:
    """A JSON record of a results folder (run.json, seed.json, sweep.json) with `types`' fields
    checked, or ResultsError naming the file and what is wrong with it."""
    try:
        record = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ResultsError(f"{path} is not valid JSON: {e}") from None
    except OSError as e:
        raise ResultsError(f"{path} cannot be read: {e.strerror}") from None
    check_fields(path, record, types, whose)
    return record


def check_fields(
    path: Path, meta: Any, types: dict[str, type | tuple[type, ...]], whose: str
) -> None:
    """ResultsError naming `path` unless `meta` is a JSON object holding each of `types`'
    keys with a value of its type."""
    if not isinstance(meta, dict):
        raise ResultsError(f"{path} holds a JSON {type(meta).__name__}, not {whose} object")
    for key, kind in types.items():
        if key not in meta:
            raise ResultsError(f"{path} lacks {key!r}: not {whose} {path.name}")
        if not isinstance(meta[key], kind):
            raise ResultsError(f"{path}: {key!r} is a JSON {type(meta[key]).__name__}")


def nothing_written(folder: Path) -> str:
    """The true line of a command stopped before it wrote anything into `folder`."""
    if folder.is_dir():
        return f"nothing was written in {folder}"
    return f"nothing was written; {folder} was not created"


SEED_TYPES: dict[str, type | tuple[type, ...]] = {
    "strategy": str,
    "seed": int,
    "partial": bool,
    "invariants": list,
    "files": dict,
}
"""What a seed's seed.json holds, and its type. `files`: for each table of the part, the
`rows` and the `sha256` of its file as committed."""
PARTIAL_TABLES = ("requests", "timeline")
"""The tables a partial seed keeps: a summary of half a seed would mix into the statistics."""


def tables_of(record: dict[str, Any]) -> tuple[str, ...]:
    """The tables a committed part holds, as its seed.json says whether it is partial."""
    return PARTIAL_TABLES if record["partial"] else tuple(TABLES)


def sha256_of(path: Path) -> str:
    """The SHA-256 of a file's bytes, read a block at a time."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def part_folders(folder: Path) -> list[Path]:
    """The seeds' folders under `folder/parts`, in the order they were written; temporary
    folders (a commit cut short) are not among them."""
    parts = [p for p in (folder / PARTS).glob("[0-9]*") if p.name.isdigit()]
    return sorted(parts, key=lambda p: int(p.name))


def committed(folder: Path) -> list[tuple[Path, dict[str, Any]]]:
    """The seeds committed under `folder/parts`, each (its folder, its seed.json), in the
    order they were written; only seed.json is read (see `verified`)."""
    return [(p, read_record(p / SEED_FILE, SEED_TYPES, "a seed's")) for p in part_folders(folder)]


def verified(folder: Path) -> list[tuple[Path, dict[str, Any]]]:
    """`committed`, each part checked first (`check_part`): ResultsError naming the first
    damaged file."""
    return [(p, check_part(p)) for p in part_folders(folder)]


def check_part(part: Path) -> dict[str, Any]:
    """The seed.json of a committed part once each of its tables is found as committed:
    present, a readable Parquet file with its table's columns, and the row count and the
    checksum seed.json recorded; ResultsError naming the file and what is wrong otherwise."""
    record = read_record(part / SEED_FILE, SEED_TYPES, "a seed's")
    for name in tables_of(record):
        path = part / f"{name}.parquet"
        entry = record["files"].get(name)
        if not (
            isinstance(entry, dict)
            and isinstance(entry.get("rows"), int)
            and isinstance(entry.get("sha256"), str)
        ):
            raise ResultsError(f"{part / SEED_FILE} lacks the rows and checksum of {path.name}")
        if not path.is_file():
            raise ResultsError(f"{path} is missing")
        try:
            footer = pq.read_metadata(path)
        except (pa.ArrowException, OSError, ValueError) as e:
            raise ResultsError(f"{path} is not a readable Parquet file: {_first_line(e)}") from None
        missing = [c for c in TABLES[name].names if c not in footer.schema.names]
        if missing:
            raise ResultsError(f"{path} lacks the column {missing[0]!r}: not a {name} table")
        if footer.num_rows != entry["rows"]:
            raise ResultsError(
                f"{path} holds {footer.num_rows} rows, not the {entry['rows']} its {SEED_FILE} "
                "recorded at commit"
            )
        if sha256_of(path) != entry["sha256"]:
            raise ResultsError(
                f"{path} is not the file committed: its checksum differs from its {SEED_FILE}'s"
            )
    return record


def _in_run_order(
    seeds: list[tuple[Path, dict[str, Any]]], meta: dict[str, Any]
) -> list[tuple[Path, dict[str, Any]]]:
    """Finished seeds in the order an uninterrupted run finishes them (strategy by strategy,
    seed by seed), then the partial ones: a resumed run's files are then the same."""
    strategies = {s: i for i, s in enumerate(meta["strategies"])}
    order = {seed: i for i, seed in enumerate(meta["seeds"])}

    def rank(item: tuple[Path, dict[str, Any]]) -> tuple[bool, int, int]:
        r = item[1]
        return (r["partial"], strategies.get(r["strategy"], 0), order.get(r["seed"], 0))

    return sorted(seeds, key=rank)


def _listed(meta: dict[str, Any], seeds: list[tuple[Path, dict[str, Any]]]) -> None:
    """run.json's lists of finished and partial seeds and of checks, as `seeds` say."""
    meta["finished"], meta["partial"], meta["invariants"] = [], [], []
    for _, r in seeds:
        meta["partial" if r["partial"] else "finished"].append([r["strategy"], r["seed"]])
        entry = {"strategy": r["strategy"], "seed": r["seed"]}
        meta["invariants"] += [{**entry, **check} for check in r["invariants"]]


class RunWriter:
    """Writes a run folder incrementally; use as a context manager so it is always closed.
    With `resume`, continues the unfinished run in `out_dir` (see `resumable`): its finished
    seeds (`done`) are kept, its partial ones dropped to be run again, and so is a damaged
    part (`check_part`), named in a line given to `notice`. `inputs` (the files the config
    names, fingerprinted: `harness.running.inputs`) are kept in run.json."""

    def __init__(
        self,
        out_dir: Path,
        config: dict[str, Any],
        strategies: list[str],
        seeds: list[int],
        engine: str,
        overwrite: bool = False,
        resume: bool = False,
        run_id: str | None = None,
        plugins: dict[str, Any] | None = None,
        notice: Callable[[str], None] | None = None,
        inputs: dict[str, str] | None = None,
    ) -> None:
        self.out_dir = Path(out_dir)
        self._notice = notice or (lambda line: None)
        self.done: set[tuple[str, int]] = set()
        self._next = 0
        self._meta_due = 0.0
        with interrupts.uncut():  # claimed and described, or not claimed at all
            self._lock = (
                lock_folder(self.out_dir) if resume else claim_out_dir(self.out_dir, overwrite)
            )
            try:
                if resume:
                    self._reopen(config, strategies)
                    self.meta.setdefault("inputs", inputs or {})
                else:
                    self._create(config, strategies, seeds, engine, run_id, plugins)
                    self.meta["inputs"] = inputs or {}
                self._write_meta()
            except BaseException:
                self._lock.release()
                raise

    def _create(
        self,
        config: dict[str, Any],
        strategies: list[str],
        seeds: list[int],
        engine: str,
        run_id: str | None,
        plugins: dict[str, Any] | None,
    ) -> None:
        self.run_id = run_id or new_run_id(config["run"]["name"])
        self.meta: dict[str, Any] = {
            "run_id": self.run_id,
            "harness_version": harness.__version__,
            "python": platform.python_version(),
            "pyarrow": pa.__version__,
            "machine": machine.fingerprint(),
            "engine": engine,
            "strategies": strategies,
            "plugins": plugins or {},
            "seeds": seeds,
            "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "completed": False,
            "finished": [],
            "partial": [],
            "invariants": [],
            "config": config,
        }

    def _reopen(self, config: dict[str, Any], strategies: list[str]) -> None:
        self.meta = resumable(self.out_dir, config, strategies)
        self.run_id = self.meta["run_id"]
        for tmp in (self.out_dir / PARTS).glob(".*"):
            shutil.rmtree(tmp)  # a commit cut short
        parts = part_folders(self.out_dir)
        kept = []
        for part in parts:
            try:
                record = check_part(part)
            except ResultsError as e:
                self._notice(f"{e}: its seed runs again")
                shutil.rmtree(part)
                continue
            if record["partial"]:
                shutil.rmtree(part)
            else:
                kept.append((part, record))
        _listed(self.meta, _in_run_order(kept, self.meta))
        self.done = {(r["strategy"], r["seed"]) for _, r in kept}
        self._next = int(parts[-1].name) + 1 if parts else 0
        self.meta["completed"] = False
        self.meta.pop("error", None)
        self.meta["resumed_at"] = datetime.now(UTC).isoformat(timespec="seconds")

    def _write_meta(self) -> None:
        began = time.monotonic()
        write_json(self.out_dir / "run.json", self.meta)
        took = time.monotonic() - began
        self._meta_due = began + max(META_MIN_INTERVAL_S, took / META_MAX_SHARE)

    def seed_rows(self, strategy: str, seed: int) -> SeedRows:
        """Where the rows of (strategy, seed) go while it runs: the Parquet files of its part,
        in a temporary folder of `parts/` that `add` commits (a seed stopped midway leaves one
        that `--resume` removes)."""
        folder = self.out_dir / PARTS / f".{self._next:05d}.tmp"
        self._next += 1
        return SeedRows(strategy, seed, folder, self.run_id)

    def add(
        self, result: SeedResult, checks: list[dict[str, Any]] | None = None, partial: bool = False
    ) -> None:
        """Commit one (strategy, seed); `checks` are its invariant checks, kept in run.json.
        Its rows are in the part folder `seed_rows` gave (or in memory, then written here).
        A `partial` seed (stopped midway, unchecked) is listed under "partial", not "finished",
        and only its requests and samples are kept: a summary of half a seed would mix into
        the statistics over seeds. A signal while it is written waits for the commit."""
        rows = result.rows
        key = [result.summary["strategy"], result.summary["seed"]]
        record = {"strategy": key[0], "seed": key[1], "partial": partial}
        record["invariants"] = checks or []
        record["files"] = {}
        with interrupts.uncut():
            if rows.folder is None:  # rows kept in memory: written into a part of their own
                tmp = self.seed_rows(*key).folder
                assert tmp is not None
            else:
                tmp = rows.folder
            folder = tmp.with_name(tmp.name[1:].removesuffix(".tmp"))
            try:
                tmp.mkdir(parents=True, exist_ok=True)
                tables = {}
                if rows.folder is None:
                    tables = {name: rows.table(name) for name in RECORDED}
                if not partial:
                    tables |= {"summary": summary_table([result.summary]), "nodes": result.nodes}
                for name, part in tables.items():
                    pq.write_table(stamped(part, self.run_id), tmp / f"{name}.parquet")
                for name in tables_of(record):
                    path = tmp / f"{name}.parquet"
                    rows_in = pq.read_metadata(path).num_rows
                    record["files"][name] = {"rows": rows_in, "sha256": sha256_of(path)}
                (tmp / SEED_FILE).write_text(json.dumps(record, default=str))
                testing_signals.at("commit")
                os.rename(tmp, folder)
            except OSError as e:
                raise failed(e, tmp) from None
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
            self.meta["partial" if partial else "finished"].append(key)
            for check in checks or ():
                entry = {"strategy": key[0], "seed": key[1]}
                self.meta["invariants"].append({**entry, **check})
            if time.monotonic() >= self._meta_due:
                self._write_meta()

    def summaries(self) -> pd.DataFrame:
        """The summary rows of every finished seed, in run order (resumed ones included)."""
        seeds = _in_run_order(committed(self.out_dir), self.meta)
        tables = [pq.read_table(p / "summary.parquet") for p, r in seeds if not r["partial"]]
        return pa.concat_tables([TABLES["summary"].empty_table(), *tables]).to_pandas()

    def set_thresholds(self, records: list[dict[str, Any]]) -> None:
        """The run's threshold checks (`harness.results.thresholds.evaluate`), kept in run.json."""
        self.meta["thresholds"] = records
        self._write_meta()

    def close(self, completed: bool, error: str | None = None) -> None:
        """Each table gathered from the parts into one compact file (a run stopped before any
        seed still has its files, empty), all four renamed into place once written, then
        run.json in full, then the parts removed and the folder let go. A signal meanwhile
        waits for it. If a file cannot be written, the tables are left as they were and the
        parts kept; run.json says why (if it can still be written) and WriteFailed is
        raised."""
        try:
            with interrupts.uncut():
                self._close(completed, error)
        finally:
            # The rows of seeds stopped before they were committed go, whatever happened.
            for tmp in (self.out_dir / PARTS).glob(".*.tmp"):
                shutil.rmtree(tmp, ignore_errors=True)
            self._lock.release()

    def _close(self, completed: bool, error: str | None) -> None:
        seeds = _in_run_order(verified(self.out_dir), self.meta)
        _listed(self.meta, seeds)
        writes = {
            self.out_dir / f"{name}.parquet": parquet_writer(schema, _tables(seeds, name))
            for name, schema in TABLES.items()
        }
        self.meta["finished_at"] = datetime.now(UTC).isoformat(timespec="seconds")
        try:
            testing_signals.at("close")
            replace_together(writes)
            self.meta["completed"] = completed
            if error:
                self.meta["error"] = error
            self._write_meta()
        except WriteFailed as e:
            self.meta["completed"] = False
            self.meta["error"] = f"{error}; then {e}" if error else str(e)
            with contextlib.suppress(WriteFailed):  # the failure said is the first one
                self._write_meta()
            raise
        if completed:  # an unfinished run keeps its parts: `--resume` reads them
            shutil.rmtree(self.out_dir / PARTS, ignore_errors=True)

    def __enter__(self) -> RunWriter:
        return self

    def __exit__(self, exc_type: type | None, exc: BaseException | None, tb: Any) -> None:
        if exc_type is None:
            self.close(completed=True)
            return
        # What stopped the run is what the user is told; a close failing after it (the disk
        # that was full still is) is written in run.json beside it.
        with contextlib.suppress(WriteFailed, ResultsError):
            self.close(completed=False, error=stopped_by(exc))


def _tables(seeds: list[tuple[Path, dict[str, Any]]], name: str) -> Iterator[pa.Table]:
    """Table `name` of each of `seeds` that has it (a partial seed has no summary), a batch
    at a time as the writer asks: the gather holds a row group, not a seed."""
    for part, record in seeds:
        if name in tables_of(record):
            yield from _read_batches(part / f"{name}.parquet", TABLES[name])


def stopped_by(exc: BaseException | None) -> str:
    """What run.json says stopped a run: "interrupted" (SIGINT), "terminated" (SIGTERM), the
    file that could not be written, or the error."""
    if isinstance(exc, KeyboardInterrupt):
        return interrupts.word(exc)
    if isinstance(exc, WriteFailed):
        return str(exc)
    return repr(exc)


def resumable(
    folder: Path, config: dict[str, Any] | None = None, strategies: list[str] | None = None
) -> dict[str, Any]:
    """The run.json of the unfinished run in `folder`, if it can be resumed here: written by
    this version of the harness, and (when given) with the same config and strategies;
    ResultsError saying why not otherwise."""
    meta = read_meta(folder)
    if meta["completed"]:
        raise ResultsError(f"{folder} holds a complete run: nothing to resume")
    version = meta.get("harness_version")
    if version != harness.__version__:
        raise ResultsError(
            f"{folder} was written by harness {version}, this is {harness.__version__}: "
            "a resumed run would mix the two"
        )
    if config is not None:
        differs = first_difference(meta["config"], json.loads(json.dumps(config, default=str)))
        if differs is not None:
            raise ResultsError(f"{folder} was run with another config ({differs} differs)")
    if strategies is not None and strategies != meta["strategies"]:
        raise ResultsError(
            f"{folder} was run with --compare {','.join(meta['strategies'])}, "
            f"not {','.join(strategies)}"
        )
    return meta


def first_difference(old: Any, new: Any, where: str = "") -> str | None:
    """The first dotted key at which two configs (as JSON) differ, or None if they agree."""
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new), key=str):
            found = first_difference(old.get(key), new.get(key), f"{where}.{key}" if where else key)
            if found is not None:
                return found
        return None
    return None if old == new else (where or "the config")


def state_of(folder: Path) -> str:
    """What a run left in `folder`, truly, for the line said when it stops early."""
    try:
        meta = read_meta(folder)
    except ResultsError:
        return nothing_written(folder)
    if meta["completed"]:
        return f"the run had completed: results in {folder}"
    try:
        seeds = committed(folder) if (folder / PARTS).is_dir() else None
    except ResultsError:
        seeds = None
    finished = len(meta["finished"]) if seeds is None else sum(not r["partial"] for _, r in seeds)
    total = len(meta["strategies"]) * len(meta["seeds"])
    return (
        f"{finished} of {total} seeds finished are kept in {folder} (completed: false); "
        f"harness run --resume {folder} runs the rest"
    )


@dataclass(frozen=True)
class RunFiles:
    """A run folder as read: its run.json and each table's files, the parts' while it has
    them (a run that has not closed), in run order, else the gathered file."""

    folder: Path
    meta: dict[str, Any]
    files: dict[str, list[Path]]
    partial: frozenset[tuple[str, int]]
    """The (strategy, seed) of seeds stopped midway, whose rows the large tables hold too."""

    def frame(self, name: str, columns: Sequence[str] | None = None) -> pd.DataFrame:
        """Table `name` whole (of `columns` only, if given), as pandas: for the small tables
        (summary, nodes), or a reader who wants a large one whole."""
        schema = TABLES[name]
        parts = [_read_table(f, schema, columns) for f in self.files[name]]
        empty = schema.empty_table() if columns is None else schema.empty_table().select(columns)
        return pa.concat_tables([empty, *parts]).to_pandas()

    def batches(self, name: str, columns: Sequence[str]) -> Iterator[pa.Table]:
        """Table `name`'s rows of the finished seeds, `columns` only, a batch at a time: what
        a report reads of the large tables, in bounded memory however long the run."""
        schema = TABLES[name]
        keys = ["strategy", "seed"]
        read = pa.schema([schema.field(c) for c in dict.fromkeys([*columns, *keys])])
        for path in self.files[name]:
            for batch in _read_batches(path, read):
                if self.partial:
                    pairs = zip(
                        batch["strategy"].to_pylist(), batch["seed"].to_pylist(), strict=True
                    )
                    keep = [pair not in self.partial for pair in pairs]
                    if not all(keep):
                        batch = batch.filter(pa.array(keep))
                yield batch.select(list(columns))


def open_run(path: str | Path) -> RunFiles:
    """The files of a run folder, or ResultsError naming the file and what is wrong with it.
    While the folder holds parts, they are read (each checked), and run.json's lists are
    brought in line with them."""
    folder = Path(path)
    meta = read_meta(folder)
    seeds = verified(folder) if (folder / PARTS).is_dir() else None
    files = {}
    if seeds is not None:
        seeds = _in_run_order(seeds, meta)
        _listed(meta, seeds)
        for name in TABLES:
            files[name] = [p / f"{name}.parquet" for p, r in seeds if name in tables_of(r)]
    else:
        for name in TABLES:
            file = folder / f"{name}.parquet"
            if not file.is_file():
                raise ResultsError(f"{folder} is missing {file.name}")
            files[name] = [file]
    partial = frozenset((str(s), int(n)) for s, n in meta.get("partial", []))
    return RunFiles(folder, meta, files, partial)


def load_run(
    path: str | Path,
    tables: Iterable[str] = tuple(TABLES),
    columns: Mapping[str, Sequence[str]] | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(run.json, {table name: DataFrame}) of a run folder, of every table or those named, or
    ResultsError naming the file and what is wrong with it; a table `columns` names holds only
    those columns. While the folder holds parts (a run that has not closed), they are read,
    and run.json's lists are brought in line with them. The large tables are read whole:
    a report reads them a batch at a time (`open_run`)."""
    run = open_run(path)
    return run.meta, {name: run.frame(name, (columns or {}).get(name)) for name in tables}


def read_columns(path: Path, names: list[str], only: bool = False) -> pa.Table:
    """A results table holding (at least) the columns `names`, or `only` them (the others are
    not read: a report needs a few of a large table's columns), or ResultsError naming the
    file and what is wrong with it."""
    try:
        table = pq.read_table(path, columns=names if only else None)
    except (pa.ArrowException, OSError, ValueError, KeyError) as e:
        missing = [n for n in names if only and n not in _names(path)]
        if missing:
            raise ResultsError(
                f"{path} lacks the column {missing[0]!r}: not a {path.stem} table"
            ) from None
        raise ResultsError(f"{path} is not a readable Parquet file: {_first_line(e)}") from None
    missing = [name for name in names if name not in table.schema.names]
    if missing:
        raise ResultsError(f"{path} lacks the column {missing[0]!r}: not a {path.stem} table")
    return table


def _names(path: Path) -> list[str]:
    """The columns of a Parquet file; none when its footer cannot be read."""
    try:
        return pq.read_schema(path).names
    except (pa.ArrowException, OSError, ValueError):
        return []


def _read_batches(path: Path, schema: pa.Schema) -> Iterator[pa.Table]:
    """A results table of `schema` a batch at a time, or ResultsError naming the file and
    what is wrong."""
    try:
        f = pq.ParquetFile(path)
    except (pa.ArrowException, OSError, ValueError) as e:
        raise ResultsError(f"{path} is not a readable Parquet file: {_first_line(e)}") from None
    with f:
        missing = [n for n in schema.names if n not in f.schema_arrow.names]
        if missing:
            raise ResultsError(f"{path} lacks the column {missing[0]!r}: not a {path.stem} table")
        try:
            for batch in f.iter_batches(batch_size=READ_ROWS, columns=schema.names):
                yield pa.Table.from_batches([batch]).cast(schema)
        except (pa.ArrowException, ValueError) as e:
            raise ResultsError(
                f"{path} cannot be read as a {path.stem} table: {_first_line(e)}"
            ) from None


def _read_table(path: Path, schema: pa.Schema, columns: Sequence[str] | None = None) -> pa.Table:
    """A results table of `schema` (only its `columns`, if given), or ResultsError naming the
    file and what is wrong."""
    if columns is not None:
        schema = pa.schema([schema.field(name) for name in columns])
    table = read_columns(path, schema.names, only=columns is not None)
    try:
        return table.select(schema.names).cast(schema)
    except (pa.ArrowException, ValueError) as e:
        raise ResultsError(f"{path} has a column of another type: {_first_line(e)}") from None


def _first_line(error: BaseException) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
