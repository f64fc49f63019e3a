"""Imports kept for the next run: a trace of another format is imported once per source and
window, into a Parquet file of the harness's format that every later run of the same window
replays.

The cache is a folder outside the project: `HARNESS_CACHE_DIR`, else `$XDG_CACHE_HOME/herd-harness`,
else `~/.cache/herd-harness`; an import is `traces/<format>-<start>-<span>-<key>.parquet` in
it, the key a digest of the format and its importer's version, each file read (its absolute
path, size and modification time) and the window. A source that changes, or a new importer,
is imported again; the old file stays until the folder is cleared (deleting it is safe)."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from harness.config.traces.trace_format import TraceFormat, check_window
from harness.model.tunables import ConfigError
from harness.results.atomic_files import replace_atomically

CACHE_ENV = "HARNESS_CACHE_DIR"
"""The environment variable that moves the cache."""


def folder() -> Path:
    """Where imports are kept."""
    given = os.environ.get(CACHE_ENV)
    if given:
        return Path(given) / "traces"
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "herd-harness" / "traces"


def path_of(fmt: type[TraceFormat], files: list[Path], start: float, span: float) -> Path:
    """Where the import of `files` in the window [start, start + span) is kept."""
    read = []
    for f in files:
        st = f.stat()
        read.append([str(f.resolve()), st.st_size, st.st_mtime_ns])
    identity = json.dumps([fmt.name, fmt.version, read, start, span])
    key = hashlib.sha256(identity.encode()).hexdigest()[:16]
    return folder() / f"{fmt.name}-{start:g}-{span:g}-{key}.parquet"


def imported(
    fmt: type[TraceFormat],
    source: str,
    start: float,
    span: float,
    say: Callable[[str], None] | None = None,
) -> Path:
    """The Parquet trace of `source` in the window, imported now (and kept) unless it was
    before; `say` hears a line as an import starts and one when it is done."""
    check_window(start, span, "workload.trace_start_s", "run.duration_s")
    files = fmt.files(source)
    path = path_of(fmt, files, start, span)
    if path.is_file():
        return path
    with _held(path):
        if path.is_file():  # imported meanwhile by the process that held it
            return path
        if say:
            window = f"seconds {start:g} to {start + span:g}"
            say(f"importing {fmt.describe(source)}, {window}, into {path}")
        done = []
        replace_atomically(path, lambda tmp: done.append(fmt.convert(files, start, span, tmp)))
    if say:
        say(f"imported: {'; '.join(done[0].lines())}")
    return path


@contextlib.contextmanager
def _held(path: Path) -> Iterator[None]:
    """`path`'s import to this process alone: another process about to import the same window
    (a sweep's cells, runs started together) waits, then finds it done."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path.with_name(f".{path.name}.lock"), os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        raise ConfigError(
            CACHE_ENV, f"cannot write the trace cache {path.parent}: {e.strerror or e}"
        ) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
