"""Digests of the Parquet content the virtual engine writes for every shipped scenario, so a
refactor can prove it changed no result: `python tests/golden.py --record` writes
tests/golden.json; `tests/test_golden.py` runs the same scenarios and compares.

Every table is digested as written to disk (row order included), less the columns that measure
the machine rather than the model (`engine_wall_s`) and the run's id, new in every run. Columns
added to a table after its digests were first recorded (`ADDED`) are digested on their own, as
`<table>+added`: the table's own digest then still proves every older column unchanged."""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import sys
import tempfile
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.config import load  # noqa: E402
from harness.model.scheduling.ledgers import LEDGERS  # noqa: E402
from harness.results.invariants import InvariantError  # noqa: E402
from harness.running.runner import run  # noqa: E402
from tests.conftest import SCENARIOS  # noqa: E402

GOLDEN = Path(__file__).resolve().parent / "golden.json"
SEEDS = 2
MACHINE_COLUMNS = ("engine_wall_s", "run_id")
TABLES = ("summary", "nodes", "requests", "timeline")
ADDED = {
    "summary": ("failed_refused", "alloc_cv", "util_cv", "util_mean", "util_min", "util_max"),
    "nodes": ("cpu_count", "cpu_percent"),
    "timeline": ("cpu_percent",),
}
"""Columns added after the first digests: refused creates, allocation and utilisation."""


def digest(frame: pd.DataFrame) -> str:
    frame = frame.drop(columns=[c for c in MACHINE_COLUMNS if c in frame.columns])
    h = hashlib.sha256(",".join(f"{c}:{t}" for c, t in frame.dtypes.items()).encode())
    h.update(pd.util.hash_pandas_object(frame, index=False).to_numpy().tobytes())
    return h.hexdigest()[:16]


def digests(path: Path) -> dict[str, str]:
    """{table: digest} of one scenario, every strategy, SEEDS seeds, virtual engine."""
    config = load(path, [f"run.seeds={SEEDS}", "run.engine=virtual"])
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        # A broken check is part of the content (invariants_ok); the files are written.
        with contextlib.suppress(InvariantError):
            run(config, list(LEDGERS), out)
        found = {}
        for name in TABLES:
            frame = pd.read_parquet(out / f"{name}.parquet")
            added = list(ADDED.get(name, ()))
            found[name] = digest(frame.drop(columns=added))
            if added:
                found[f"{name}+added"] = digest(frame[added])
        return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--record", action="store_true", help="write tests/golden.json")
    args = parser.parse_args()
    found = {p.name: digests(p) for p in SCENARIOS}
    if args.record:
        GOLDEN.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")
        print(f"recorded {len(found)} scenarios in {GOLDEN}")
        return
    for name, table, same in compare(found):
        print(f"{name:28} {table:9} {'same' if same else 'DIFFERS'}")


def compare(found: dict[str, dict[str, str]]) -> list[tuple[str, str, bool]]:
    """(scenario, table, same as recorded) for every table found."""
    golden = json.loads(GOLDEN.read_text())
    return [
        (name, table, golden.get(name, {}).get(table) == value)
        for name, tables in found.items()
        for table, value in tables.items()
    ]


if __name__ == "__main__":
    main()
