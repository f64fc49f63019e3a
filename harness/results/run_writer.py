"""Writing a run's folder: seed by seed, so what finished stays readable, and every file
replaced whole, so a failure (a full disk, a lost permission, a signal) leaves the previous
complete state or the new one, never half of one.

A run folder holds `summary.parquet`, `nodes.parquet`, `requests.parquet`,
`timeline.parquet` and `run.json`. `run.json` is written first with `"completed": false`,
brought up to date now and then as seeds finish and rewritten at the end. Each (strategy,
seed) writes its request rows and timeline samples as it runs into `parts/.<n>.tmp/`
(`harness.results.seed_rows`), and is committed as soon as it finishes: its other tables and a
`seed.json` saying which seed it is, with each table's row count and checksum (`files`), join
them, and the folder is renamed `parts/<n>/` (one atomic rename, so a seed is on disk whole or
not at all). Closing the run writes each table gathered from the parts, a batch at a time, to a
temporary file, renames the four into place only once all are written, then writes run.json;
only a run that completed removes `parts/`, so an interrupted one keeps its finished seeds for
`--resume`. A close that fails (say, the disk is full) removes its temporary files, keeps the
parts and says in run.json why the run is incomplete; `--resume` finishes it. How a folder is
claimed is `harness.results.folder_policy`; how it is read, `harness.results.run_reader`."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

import harness
from harness import interrupts, testing_signals
from harness.results import folder_policy, machine
from harness.results.arrow_schemas import TABLES, stamped, summary_table
from harness.results.atomic_files import (
    WriteFailed,
    failed,
    parquet_writer,
    replace_together,
    write_json,
)
from harness.results.failures import ResultsError
from harness.results.folder_policy import claim_out_dir, lock_folder, marker
from harness.results.run_reader import (
    PARTS,
    SEED_FILE,
    check_part,
    committed,
    in_run_order,
    listed,
    part_folders,
    read_batches,
    resumable,
    sha256_of,
    tables_of,
    verified,
)
from harness.results.seed_result import SeedResult
from harness.results.seed_rows import RECORDED, SeedRows

META_MIN_INTERVAL_S = 1.0
META_MAX_SHARE = 0.05
"""run.json is rewritten after a seed only once this long has passed since the last write,
and the last write took at most this share of the time since: rewriting all of it after every
seed made a run's time grow with the square of its seeds."""


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
        self.run_id = run_id or folder_policy.new_run_id(config["run"]["name"])
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
        listed(self.meta, in_run_order(kept, self.meta))
        self.done = {(r["strategy"], r["seed"]) for _, r in kept}
        self._next = int(parts[-1].name) + 1 if parts else 0
        self.meta["completed"] = False
        self.meta.pop("error", None)
        self.meta["resumed_at"] = datetime.now(UTC).isoformat(timespec="seconds")

    def _write_meta(self) -> None:
        began = time.monotonic()
        write_json(self.out_dir / marker("run"), self.meta)
        took = time.monotonic() - began
        self._meta_due = began + max(META_MIN_INTERVAL_S, took / META_MAX_SHARE)

    def seed_rows(self, strategy: str, seed: int) -> SeedRows:
        """Where the rows of (strategy, seed) go while it runs: the Parquet files of its part,
        in a temporary folder of `parts/` that `add` commits (a seed stopped midway leaves one
        that `--resume` removes)."""
        folder = self.out_dir / PARTS / f".{self._next:05d}.tmp"
        folder.parent.mkdir(exist_ok=True)
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
        seeds = in_run_order(committed(self.out_dir), self.meta)
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
        seeds = in_run_order(verified(self.out_dir), self.meta)
        listed(self.meta, seeds)
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
            yield from read_batches(part / f"{name}.parquet", TABLES[name])


def stopped_by(exc: BaseException | None) -> str:
    """What run.json says stopped a run: "interrupted" (SIGINT), "terminated" (SIGTERM), the
    file that could not be written, or the error."""
    if isinstance(exc, KeyboardInterrupt):
        return interrupts.word(exc)
    if isinstance(exc, WriteFailed):
        return str(exc)
    return repr(exc)
