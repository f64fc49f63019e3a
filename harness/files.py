"""Writing files so that a reader never sees half of one, and holding a folder while writing it."""

from __future__ import annotations

import fcntl
import json
import os
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
