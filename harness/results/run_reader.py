"""Reading a run's folder (`harness.results.run_writer` writes it): its run.json, its
committed parts, each checked against its `seed.json` before it is believed, and its tables,
the large ones a batch at a time.

While `parts/` exists, it is the truth: readers (`open_run`, `load_run`, `--resume`) take the
seeds and their invariant checks from it, whatever an older run.json says, and check every
part against its `files` first (`check_part`): a damaged one is named, and `--resume` runs its
seed again."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

import harness
from harness.results.arrow_schemas import TABLES
from harness.results.failures import ResultsError
from harness.results.folder_policy import holder, marker, nothing_written
from harness.results.seed_rows import READ_ROWS, streamed

PARTS = "parts"
"""The folder of a run's per-seed files until it closes."""
SEED_FILE = "seed.json"
"""In each seed's folder of parts: which (strategy, seed) it is, whether it is partial, and
its invariant checks."""


def read_meta(folder: Path) -> dict[str, Any]:
    """The run.json of a run folder, or ResultsError naming it and what is wrong with it."""
    if not folder.is_dir():
        raise ResultsError(f"{folder} is not a folder")
    if holder(folder) != "run":
        raise ResultsError(f"{folder} is not a results folder (no {marker('run')})")
    path = folder / marker("run")
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
        found = set(footer.schema.names)  # a property that builds the list at every call
        missing = [c for c in TABLES[name].names if c not in found]
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


def in_run_order(
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


def listed(meta: dict[str, Any], seeds: list[tuple[Path, dict[str, Any]]]) -> None:
    """run.json's lists of finished and partial seeds and of checks, as `seeds` say."""
    meta["finished"], meta["partial"], meta["invariants"] = [], [], []
    for _, r in seeds:
        meta["partial" if r["partial"] else "finished"].append([r["strategy"], r["seed"]])
        entry = {"strategy": r["strategy"], "seed": r["seed"]}
        meta["invariants"] += [{**entry, **check} for check in r["invariants"]]


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
            for batch in read_batches(path, read):
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
        seeds = in_run_order(seeds, meta)
        listed(meta, seeds)
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


def read_batches(path: Path, schema: pa.Schema) -> Iterator[pa.Table]:
    """A results table of `schema` a batch at a time, or ResultsError naming the file and
    what is wrong."""
    try:
        f = streamed(path)
    except (pa.ArrowException, OSError, ValueError) as e:
        raise ResultsError(f"{path} is not a readable Parquet file: {_first_line(e)}") from None
    with f:
        found = set(f.schema_arrow.names)  # a property that converts the footer at every call
        missing = [n for n in schema.names if n not in found]
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
