"""What a results folder holds, told by the one file that says so (`run.json`, `sweep.json`,
`search.json`), and the results folders a folder holds, read without any data library: so
`harness report` refuses a folder that holds no results, or lists the runs under a parent
folder, before pandas or Arrow load."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.results.failures import ResultsError

MARKS = {"run.json": "run", "sweep.json": "sweep", "search.json": "search"}
"""The file that says what a results folder holds."""


def holder(folder: Path) -> str | None:
    """What a results folder holds, "run", "sweep" or "search", or None; a folder holding two
    (an older harness let a run write into a sweep's folder) is unreadable as either."""
    held = [kind for mark, kind in MARKS.items() if (folder / mark).is_file()]
    if len(held) > 1:
        both = " and a ".join(held)
        raise ResultsError(f"{folder} holds both a {both}; it cannot be read as either")
    return held[0] if held else None


@dataclass(frozen=True)
class Held:
    """One results folder found under another: its kind and its record (run.json, ...), or
    why the record cannot be read."""

    folder: Path
    kind: str
    record: dict[str, Any]
    problem: str = ""


def _record(folder: Path, kind: str) -> Held:
    path = folder / next(mark for mark, k in MARKS.items() if k == kind)
    try:
        record = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        return Held(folder, kind, {}, f"{path.name} unreadable ({type(e).__name__})")
    if not isinstance(record, dict):
        return Held(folder, kind, {}, f"{path.name} is not a JSON object")
    return Held(folder, kind, record)


def held_under(folder: Path) -> list[Held]:
    """The results folders right under `folder`, oldest first (by their start), each with its
    record; one whose record cannot be read is listed with why."""
    found = []
    try:
        children = sorted(p for p in folder.iterdir() if p.is_dir())
    except OSError as e:
        raise ResultsError(f"{folder}: {e.strerror or e}") from None
    for child in children:
        try:
            kind = holder(child)
        except ResultsError as e:
            found.append(Held(child, "?", {}, str(e).removeprefix(f"{child} ")))
            continue
        if kind is not None:
            found.append(_record(child, kind))
    return sorted(found, key=lambda h: str(h.record.get("started_at", "")))
