"""What a results folder holds, told by the one file that says so (`run.json`, `sweep.json`,
`search.json`), and who may write into it. A run (or sweep, or search) owns its folder: it
claims it under a lock (`FolderLock`) held until it ends, and only
if the folder is new or empty, or holds results and `overwrite` was asked, or holds this very
run, unfinished, to resume; another run's or a sweep's folder is never written into. All of it
is read without any data library: `harness report` refuses a folder that holds no results, or
lists the runs under a parent folder, before pandas or Arrow load."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import secrets
import shutil
import stat
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness.results.failures import ResultsError

MARKS = {"run.json": "run", "sweep.json": "sweep", "search.json": "search"}
"""The file that says what a results folder holds."""


def marker(kind: str) -> str:
    """The file that says a folder holds a `kind` of results ("run", "sweep", "search")."""
    return next(file for file, held in MARKS.items() if held == kind)


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
    path = folder / marker(kind)
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
    found = _record(folder, "run")
    return not found.problem and found.record.get("completed") is False


class FolderLock:
    """An exclusive hold on a folder for as long as one process writes into it, so that no
    other run or sweep writes there meanwhile. The kernel drops it when the process ends,
    however it ends: a writer that crashed never blocks the next one.

    Raises BlockingIOError when another holder has the folder."""

    def __init__(self, folder: Path) -> None:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            # The folder may have been replaced between open and flock: the lock would then
            # hold a folder no longer at `folder`.
            held, there = os.fstat(fd), os.stat(folder)
            if (held.st_dev, held.st_ino) != (there.st_dev, there.st_ino):
                raise BlockingIOError(f"{folder} was replaced while being locked")
        except BaseException:
            os.close(fd)
            raise
        self._fd: int | None = fd

    def release(self) -> None:
        """Let the folder go (closing the descriptor drops the lock); a second call is a no-op."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


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


def new_run_id(name: str) -> str:
    """A run's id, and the name of its folder unless --out names one: its name, when it started
    (UTC) and 6 random hex digits, so ids from two runs started in the same second still
    differ."""
    return f"{name}-{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"


def nothing_written(folder: Path) -> str:
    """The true line of a command stopped before it wrote anything into `folder`."""
    if folder.is_dir():
        return f"nothing was written in {folder}"
    return f"nothing was written; {folder} was not created"
