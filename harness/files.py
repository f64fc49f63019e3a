"""Writing files so that a reader never sees half of one."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any


def replace_atomically(path: Path, write: Callable[[Path], None]) -> None:
    """`write(tmp)` next to `path`, then rename it over `path` (atomic on one file system)."""
    tmp = path.with_name(path.name + ".tmp")
    write(tmp)
    tmp.replace(path)


def write_json(path: Path, data: Any) -> None:
    """`data` as indented JSON at `path`, atomically; values JSON lacks are written as text."""
    text = json.dumps(data, indent=2, default=str)
    replace_atomically(path, lambda tmp: tmp.write_text(text))
