"""The ways a command's results go wrong that the CLI turns into an exit code, declared apart
from the modules that raise them (which load Arrow and numpy) so that the CLI can name them
without loading any data library: a config error is then said at once."""

from __future__ import annotations

from pathlib import Path


class ResultsError(ValueError):
    """A folder given as results is not one (or not a readable one), or cannot be written."""


class WriteFailed(Exception):
    """A results file could not be written (disk full, permission lost): the path and the
    reason, as the one line the user is shown."""

    def __init__(self, path: Path | str, reason: str) -> None:
        super().__init__(f"cannot write {path}: {reason}")
        self.path = Path(path)
        self.reason = reason


class InvariantError(Exception):
    """Some check failed; the results are on disk, with the checks in run.json."""

    def __init__(self, where: str, broken: list[str]) -> None:
        more = f" (and {len(broken) - 1} more)" if len(broken) > 1 else ""
        super().__init__(f"invariant broken in {where}: {broken[0]}{more}")
        self.broken = broken
