"""Digests of the Parquet content the virtual engine writes for every shipped scenario, so a
refactor can prove it changed no result: `python tests/support/golden.py --record` writes
tests/support/golden.json; `tests/project/test_golden.py` runs the same scenarios and compares.

Every table is digested as written to disk (row order included), less the columns that measure
the machine rather than the model (`engine_wall_s`) and the run's id, new in every run.

A digest says only that a table differs. To say where, --record also writes
tests/support/golden-where.json: per table its row count, a short digest of each column, and short
digests of BLOCKS runs of consecutive rows. A table that differs is named with the columns
whose digests differ and the first run of rows that does (one row where a table has no more
than BLOCKS rows).

Columns added to a table after its digests were first recorded (`ADDED`, then `CHECKED` and
`CAPPED`, `PLACER`, `TIMED`, `STREAMED`, `TAGGED`, `DELIVERED`) are digested on their own, as
`<table>+added`, `<table>+checked`, ...: the table's own digest then still proves every older
column unchanged."""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from harness.model.scheduling.strategies import STRATEGIES  # noqa: E402
from harness.results.failures import InvariantError  # noqa: E402
from harness.running.runner import run  # noqa: E402
from tests.support.configs import SCENARIOS, shipped, unrunnable  # noqa: E402

GOLDEN = Path(__file__).resolve().parent / "golden.json"
WHERE = Path(__file__).resolve().parent / "golden-where.json"
SEEDS = 2
MACHINE_COLUMNS = ("engine_wall_s", "run_id")
TABLES = ("summary", "nodes", "requests", "timeline")
ADDED = {
    "summary": ("failed_refused", "alloc_cv", "util_cv", "util_mean", "util_min", "util_max"),
    "nodes": ("cpu_count", "cpu_percent"),
    "timeline": ("cpu_percent",),
}
"""Columns added after the first digests: refused creates, allocation and utilisation."""
CHECKED = {
    "summary": (
        "violations",
        "violations_excluded",
        "violations_labels",
        "violations_cpu_family",
        "violations_memory",
        "asks_mean",
        "asks_max",
    ),
    "requests": ("asks", "violated"),
}
"""Columns added later still: eligibility violations and asks per create, digested as
`<table>+checked` so the `+added` digests stay as recorded."""
CAPPED = {"summary": ("failed_asks_exhausted",)}
"""Creates failed by `placement.max_asks`, added after those: `<table>+capped`."""
PLACER = {"summary": ("scheduler",)}
"""Who placed (`in-process`, or an external scheduler's name): `<table>+placer`."""
TIMED = {
    "summary": (
        "driver_cpu",
        "host_load",
        "send_delay_p99_ms",
        "time_keeping",
        "overload_figure",
        "overload_value",
        "overload_limit",
        "fitting_time_scale",
    )
}
"""What an engine in real time measured of its own time keeping (empty on the virtual
engine): `<table>+timed`."""
STREAMED = {
    "summary": (
        "max_in_flight",
        "in_flight_frac",
        "all_in_flight",
        "cv_time_mean",
        "cv_time_peak",
        "alloc_cv_time_mean",
        "alloc_cv_time_peak",
        "herd_share",
        "herd_ratio",
    ),
    "requests": ("in_flight",),
}
"""Figures that hold over a run rather than at its end, and creates in flight as each replica
saw them when it placed, added with the results read back a batch at a time:
`<table>+streamed`."""
TAGGED = {"requests": ("tag",)}
"""What a trace row names its create (job and task, say), carried to the create's request row
(null without a trace that tags): `<table>+tagged`."""
DELIVERED = {
    "summary": (
        "report_late_p50_ms",
        "report_late_p99_ms",
        "submit_late_p50_ms",
        "submit_late_p99_ms",
        "report_late_sketch",
        "submit_late_sketch",
    )
}
"""How late reports and creates reached a replica, as an engine in real time measured it (empty
on the virtual engine): `<table>+delivered`."""
GROUPS = {
    "added": ADDED,
    "checked": CHECKED,
    "capped": CAPPED,
    "placer": PLACER,
    "timed": TIMED,
    "streamed": STREAMED,
    "tagged": TAGGED,
    "delivered": DELIVERED,
}

BLOCKS = 64


def _short(*parts: bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part)
    return h.hexdigest()[:8]


def _row_hashes(frame: pd.DataFrame) -> bytes:
    return pd.util.hash_pandas_object(frame, index=False).to_numpy().tobytes()


def digest(frame: pd.DataFrame) -> str:
    """The recorded digest: every column's name and type, and every row, in order."""
    h = hashlib.sha256(",".join(f"{c}:{t}" for c, t in frame.dtypes.items()).encode())
    h.update(_row_hashes(frame))
    return h.hexdigest()[:16]


def folder_digests(folder: Path, drop: tuple[str, ...] = ()) -> dict[str, str]:
    """{table: digest} of a run folder's tables, less the machine's columns and those in
    `drop`: two runs that should give the same content compare equal."""
    frames = {name: pd.read_parquet(folder / f"{name}.parquet") for name in TABLES}
    gone = (*MACHINE_COLUMNS, *drop)
    return {
        name: digest(frame.drop(columns=[c for c in gone if c in frame.columns]))
        for name, frame in frames.items()
    }


def tables(path: Path) -> dict[str, pd.DataFrame]:
    """{table: content} of one scenario (in brief where it is long), every built-in strategy,
    SEEDS seeds, virtual engine, less the machine's columns."""
    config = shipped(path, [f"run.seeds={SEEDS}", "run.engine=virtual"])
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        # A broken check is part of the content (invariants_ok); the files are written.
        with contextlib.suppress(InvariantError):
            run(config, list(STRATEGIES.builtins), out)
        frames = {name: pd.read_parquet(out / f"{name}.parquet") for name in TABLES}
    found = {}
    for name, frame in frames.items():
        frame = frame.drop(columns=[c for c in MACHINE_COLUMNS if c in frame.columns])
        later = {
            group: [c for c in columns.get(name, ()) if c in frame.columns]
            for group, columns in GROUPS.items()
        }
        found[name] = frame.drop(columns=[c for cs in later.values() for c in cs])
        for group, added in later.items():
            if added:
                found[f"{name}+{group}"] = frame[added]
    return found


def _block_size(rows: int) -> int:
    return max(1, -(-rows // BLOCKS))


def index(frame: pd.DataFrame, size: int | None = None) -> dict[str, Any]:
    """What says where a table differs: its rows, a digest per column (name and type
    included), a digest per `size` consecutive rows (BLOCKS of them when not given)."""
    size = size or _block_size(len(frame))
    rows = pd.util.hash_pandas_object(frame, index=False).to_numpy()
    return {
        "rows": len(frame),
        "columns": {
            str(c): _short(f"{c}:{t}".encode(), _row_hashes(frame[[c]]))
            for c, t in frame.dtypes.items()
        },
        "blocks": " ".join(_short(rows[i : i + size].tobytes()) for i in range(0, len(rows), size)),
    }


def where(table: str, frame: pd.DataFrame, recorded: dict[str, Any]) -> str:
    """One line naming the columns of `table` that differ from the `recorded` index and the
    first rows that do."""
    size = _block_size(recorded["rows"])
    now = index(frame, size)
    names = [*recorded["columns"], *(c for c in now["columns"] if c not in recorded["columns"])]
    columns = [c for c in names if recorded["columns"].get(c) != now["columns"].get(c)]
    before, after = recorded["blocks"].split(), now["blocks"].split()
    pairs = zip(before, after, strict=False)
    first = next((i for i, (a, b) in enumerate(pairs) if a != b), None)
    if first is None:  # the shorter one is a prefix of the longer
        first = min(len(before), len(after))
    start = first * size
    end = min(start + size, max(recorded["rows"], now["rows"])) - 1
    at = f"row {start}" if end <= start else f"rows {start}-{end}"
    if len(columns) == 1:
        line = f"{table}: column {columns[0]} differs"
    else:  # two or more: a table that differs has a column that does
        line = f"{table}: columns {', '.join(columns)} differ"
    line += f"; first at {at} (of {recorded['rows']} recorded"
    return line + (f", {now['rows']} now)" if now["rows"] != recorded["rows"] else ")")


def mismatches(name: str, frames: dict[str, pd.DataFrame]) -> list[str]:
    """A line per table of scenario `name` whose digest is not the recorded one, naming where
    it differs (tests/support/golden-where.json); none when every table is as recorded."""
    golden = json.loads(GOLDEN.read_text()).get(name, {})
    indexes = json.loads(WHERE.read_text()).get(name, {}) if WHERE.exists() else {}
    lines = []
    for table, frame in frames.items():
        if golden.get(table) == digest(frame):
            continue
        recorded = indexes.get(table)
        if recorded is None:
            lines.append(f"{table}: differs (no index recorded to say where)")
        else:
            lines.append(where(table, frame, recorded))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--record", action="store_true", help="write tests/support/golden.json")
    args = parser.parse_args()
    found, skipped = {}, set()
    for p in SCENARIOS:
        reason = unrunnable(p)
        if reason:  # --record keeps what is recorded of it
            print(f"{p.name:28} skipped: {reason}")
            skipped.add(p.name)
            continue
        found[p.name] = tables(p)
    if args.record:
        for path, content in (
            (GOLDEN, {n: {t: digest(f) for t, f in ts.items()} for n, ts in found.items()}),
            (WHERE, {n: {t: index(f) for t, f in ts.items()} for n, ts in found.items()}),
        ):
            recorded = json.loads(path.read_text()) if path.exists() else {}
            content |= {n: v for n, v in recorded.items() if n in skipped}
            path.write_text(json.dumps(content, indent=1, sort_keys=True) + "\n")
        print(f"recorded {len(found)} scenarios in {GOLDEN} and {WHERE}")
        return
    for name, frames in found.items():
        lines = mismatches(name, frames)
        print(f"{name:28} {'same' if not lines else 'DIFFERS'}")
        for line in lines:
            print(f"  {line}")


if __name__ == "__main__":
    main()
