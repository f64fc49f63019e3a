"""The results folders under a parent folder (`harness report results`), one line each: which
run it is, of which config, when, whether it completed and its verdict. Read from each
folder's record alone, so the list costs no data library however large the runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from harness.results.folder_policy import Held


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def _checks(records: list[dict[str, Any]], what: str) -> str:
    """`3 thresholds passed`, `1 of 3 thresholds failed`; empty for none."""
    failed = sum(not r.get("passed", r.get("ok", True)) for r in records)
    if failed:
        return f"{failed} of {_count(len(records), what)} failed"
    return f"{_count(len(records), what)} passed" if records else ""


def verdict(held: Held) -> str:
    """What the folder's record says of how its work went, in a few words."""
    r = held.record
    if held.kind == "run":
        parts = [
            _checks(r.get("thresholds", []), "threshold"),
            "invariant broken"
            if any(not c.get("ok", True) for c in r.get("invariants", []))
            else "",
            "time keeping overloaded"
            if (r.get("time_keeping") or {}).get("verdict") == "overloaded"
            else "",
        ]
        return "; ".join(p for p in parts if p) or (
            "invariants hold" if r.get("invariants") else "-"
        )
    if held.kind == "sweep":
        cells = r.get("cells", [])
        done = sum(c.get("status") == "complete" for c in cells)
        failed = sum(c.get("status") == "failed" for c in cells)
        thresholds = [t for c in cells for t in c.get("thresholds", [])]
        parts = [
            f"{done} of {_count(len(cells), 'cell')} complete",
            f"{failed} failed" if failed else "",
            _checks(thresholds, "threshold check"),
        ]
        return "; ".join(p for p in parts if p)
    return "-"


def _name(held: Held) -> str:
    """The config's name: a run's `run.name`, a sweep's or search's own."""
    r = held.record
    return str(r.get("name") or (r.get("config") or {}).get("run", {}).get("name", "?"))


def print_folders(parent: Path, found: list[Held], console: Console) -> None:
    """One row per results folder under `parent`, oldest first."""
    table = Table(title=f"results under {parent}: {len(found)}", title_justify="left")
    for header in ("folder", "kind", "id", "config", "started", "completed", "verdict"):
        table.add_column(header, no_wrap=header not in ("id", "verdict"))
    for held in found:
        r = held.record
        started = str(r.get("started_at", "?")).replace("T", " ")[:16]
        completed = "?" if "completed" not in r else ("yes" if r["completed"] else "no")
        table.add_row(
            held.folder.name,
            held.kind,
            str(r.get("run_id", "-")),
            _name(held) if not held.problem else "?",
            started,
            completed,
            held.problem or verdict(held),
        )
    console.print(table)
    console.print(f"a folder's tables and report: harness report {parent / 'FOLDER'}")
