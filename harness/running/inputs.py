"""The files a run read besides its config (the config itself is kept whole in run.json): a
trace, the external scheduler's program and scripts, the sources of import-path plugins. Each
is hashed into run.json's `inputs` when the run starts, so a resumed run (or a comparison of
two runs) can tell that a file changed under the same name: the config alone would compare
equal while the workload differs."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from harness.config import Config, trace_file
from harness.engines.ray_setup import plugin_sources
from harness.model.workload.arrivals import ARRIVALS
from harness.results.run_reader import sha256_of


def named_files(config: Config, strategies: Iterable[str] = ()) -> list[Path]:
    """Every file `config` (and `strategies`, another run's --compare) makes the run read:
    the trace it replays (for a trace of another format, its import: what the run read of
    it); the arguments of external.command that are files (its program, its script); each
    Python source of the import-path plugins' modules."""
    files = []
    if ARRIVALS[config.workload.arrival].replay:
        files.append(Path(trace_file.replayed(config)))
    files += [Path(arg) for arg in config.external.command if _is_file(arg)]
    for source in plugin_sources([config], strategies):
        path = Path(source)
        files += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return files


def _is_file(arg: str) -> bool:
    """Whether a command's argument names a file; not one too long to be a path (the script of
    `python -c SCRIPT`), whose lookup fails."""
    try:
        return Path(arg).is_file()
    except OSError:
        return False


def fingerprint(config: Config, strategies: Iterable[str] = ()) -> dict[str, str]:
    """{file: its SHA-256} for each of `named_files`, or "missing" for one that is gone."""
    return {str(path): _digest(path) for path in named_files(config, strategies)}


def _digest(path: Path) -> str:
    try:
        return sha256_of(path)
    except OSError:
        return "missing"


def first_changed(recorded: dict[str, str], now: dict[str, str]) -> str | None:
    """The first file whose fingerprint differs between two runs' `inputs` (run.json), said
    as a reason ("FILE changed" / "FILE is gone" / "FILE is new"), or None if all agree. For
    `harness compare` as well as `--resume`."""
    for path in sorted(set(recorded) | set(now)):
        old, new = recorded.get(path), now.get(path)
        if old == new:
            continue
        if old is None:
            return f"{path} is read now but was not then"
        if new is None:
            return f"{path} was read then but is not now"
        if new == "missing":
            return f"{path} is gone"
        return f"{path} changed (its SHA-256 differs)"
    return None


def changed_since(recorded: dict[str, str]) -> str | None:
    """The first of a run's recorded `inputs` that is not as it was (see `first_changed`),
    read again from the disk now; None if every file is unchanged."""
    return first_changed(recorded, {path: _digest(Path(path)) for path in recorded})
