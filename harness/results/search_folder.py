"""A search's folder on disk, written trial by trial so that whatever finished stays readable.

    search.json     the search (its definition, base config, seed, run id), the best trial,
                    the shrunk scenario and the confirmation on fresh seeds; completed or not
    trials.parquet  one row per finished trial: its number, state, every searched key, the
                    objective, and each strategy's summary means over the trial's seeds
    best.toml       the worst scenario found, runnable by `harness run` (same seeds, same result)
    minimal.toml    the best one shrunk towards the base: only the keys it needs still moved

The search holds its folder under a lock until it closes
(`harness.results.folder_policy.lock_folder`).
A trial is on disk once trials.parquet has its row; search.json follows. `--resume DIR` replays
the stored trials to the searcher (same seed, same trials asked) and runs only the others."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import tomli_w

import harness
from harness import interrupts, testing_signals
from harness.results.atomic_files import write_json, write_parquet, write_text
from harness.results.failures import ResultsError
from harness.results.folder_policy import (
    check_out_dir,
    holder,
    lock_folder,
    marker,
    new_run_id,
    nothing_written,
)
from harness.results.run_reader import first_difference, read_record

if TYPE_CHECKING:  # what it reads of a search: `config_view`, none of the layer above
    from harness.results.config_view import SearchView

COMPLETE, FAILED = "complete", "failed"
TRIAL_COLUMNS = ("trial", "state", "objective", "error", "wall_s")
"""The columns every trials.parquet row starts with; the searched keys and summary means follow."""


class SearchStore:
    """Opens (a new or empty folder, or with `resume` this search's own) and holds it until
    `close`; refuses a folder holding anything else or a different search."""

    def __init__(self, out_dir: Path, search: SearchView, resume: bool = False) -> None:
        self.out_dir = Path(out_dir)
        self.search = search
        if not resume:
            check_out_dir(self.out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self._lock = lock_folder(self.out_dir)
        try:
            self._open(resume)
        except BaseException:
            self._lock.release()
            raise

    def _open(self, resume: bool) -> None:
        search = self.search
        identity = _jsonable(search.identity())
        old = read_search_meta(self.out_dir) if resume else None
        if old is not None and old["identity"] != identity:
            where = first_difference(old["identity"], identity)
            raise ResultsError(f"{self.out_dir} holds a different search ({where} differs)")
        self.trials: dict[int, dict[str, Any]] = {}
        path = self.out_dir / "trials.parquet"
        if old is not None and path.is_file():
            for row in pq.read_table(path).to_pylist():
                self.trials[row["trial"]] = row
        self.run_id = old["run_id"] if old else new_run_id(search.name)
        self.meta: dict[str, Any] = {
            "run_id": self.run_id,
            "harness_version": harness.__version__,
            "kind": "search",
            "name": search.name,
            "objective": str(search.objective),
            "direction": search.objective.direction,
            "strategies": search.objective.strategies,
            "keys": list(search.space),
            "base_values": _jsonable(search.base_values()),
            "seeds": search.seeds,
            "budget": {"trials": search.trials, "wall_s": search.wall_s},
            "identity": identity,
            "started_at": old["started_at"] if old else _now(),
            "completed": False,
            "searched_s": old.get("searched_s", 0.0) if old else 0.0,
            "best": None,
        }
        self._write_meta()

    def add_trial(self, row: dict[str, Any]) -> None:
        """Write a finished trial (complete or failed): trials.parquet, whole, replaced; search.json
        follows with the batch (`update`). A signal meanwhile waits for the trial to be written."""
        with interrupts.uncut():
            testing_signals.at("trial")
            self.trials[row["trial"]] = row
            rows = [self.trials[n] for n in sorted(self.trials)]
            table = pa.Table.from_pylist(rows)
            write_parquet(self.out_dir / "trials.parquet", table.schema, [table])

    def update(self, **fields: Any) -> None:
        """Record `fields` (the best trial, the shrink, the confirmation) in search.json."""
        self.meta.update(_jsonable(fields))
        self._write_meta()

    def write_scenario(self, name: str, config: dict[str, Any], header: str) -> Path:
        """A runnable scenario file (best.toml, minimal.toml): `config` as TOML under a comment."""
        comment = "".join(f"# {line}\n" for line in header.splitlines())
        path = self.out_dir / name
        write_text(path, comment + tomli_w.dumps(_toml_ready(config)))
        return path

    def close(self, completed: bool) -> None:
        try:
            self.meta["completed"] = completed
            self.meta["finished_at"] = _now()
            self._write_meta()
        finally:
            self._lock.release()

    def _write_meta(self) -> None:
        write_json(self.out_dir / marker("search"), self.meta)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _jsonable(value: Any) -> Any:
    """As JSON gives it back (tuples as lists), so a fresh identity compares with a stored one."""
    return json.loads(json.dumps(value))


def _toml_ready(value: Any) -> Any:
    """A config's dict as TOML can hold it: tuples as lists, None as "none" (as a config
    reads it back)."""
    if isinstance(value, dict):
        return {k: _toml_ready(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_toml_ready(v) for v in value]
    return "none" if value is None else value


META_TYPES: dict[str, type | tuple[type, ...]] = {
    "name": str,
    "run_id": str,
    "objective": str,
    "keys": list,
    "seeds": list,
    "identity": dict,
    "started_at": str,
}
"""What the readers of search.json rely on, and its type."""


def is_search(path: str | Path) -> bool:
    return (Path(path) / marker("search")).is_file()


def read_search_meta(folder: Path) -> dict[str, Any]:
    """search.json of `folder`, or ResultsError saying why it cannot be read as a search."""
    folder = Path(folder)
    if holder(folder) != "search":
        raise ResultsError(f"{folder} holds no search (no {marker('search')})")
    return read_record(folder / marker("search"), META_TYPES, "a search's")


def load_search_results(path: str | Path) -> tuple[dict[str, Any], pd.DataFrame]:
    """(search.json, trials in trial order), or ResultsError saying why not."""
    folder = Path(path)
    meta = read_search_meta(folder)
    trials_path = folder / "trials.parquet"
    if not trials_path.is_file():
        return meta, pd.DataFrame(columns=[*TRIAL_COLUMNS, *meta["keys"]])
    try:
        trials = pq.read_table(trials_path).to_pandas()
    except (OSError, pa.ArrowException) as e:
        raise ResultsError(f"{trials_path} cannot be read: {e}") from None
    return meta, trials.sort_values("trial", ignore_index=True)


def trial_failures(meta: dict[str, Any], trials: pd.DataFrame) -> list[str]:
    """Each trial that gave no objective, in trial order, as `trial N: why`: its error, or an
    objective that is not a number (its column empty on the trial's seeds)."""
    out = []
    for row in trials.itertuples(index=False):
        if row.state == COMPLETE and not math.isnan(row.objective):
            continue
        why = row.error if row.state != COMPLETE else f"{meta['objective']} is not a number"
        out.append(f"trial {row.trial}: {why}")
    return out


def search_state(folder: Path) -> str:
    """What a search stopped early left in `folder`, for the line said then."""
    if not is_search(folder):
        return nothing_written(folder)
    try:
        done = len(load_search_results(folder)[1])
    except ResultsError:
        return nothing_written(folder)
    return f"{done} finished trials are in {folder}; harness search --resume {folder} goes on"


def best_so_far(trials: pd.DataFrame, direction: str) -> pd.Series:
    """The best objective up to each trial (failed trials carry the best before them)."""
    values = trials["objective"].astype(float)
    signed = values if direction == "maximize" else -values
    best = signed.fillna(-math.inf).cummax()
    best = best.where(best > -math.inf)
    return best if direction == "maximize" else -best
