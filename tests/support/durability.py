"""What the tests of a run's files under failures and signals share (tests/results/:
test_run_writer, test_resume, test_run_reader, test_interrupted_runs): the runs they make,
and the checks that a folder is whole and consistent."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from harness import testing_signals
from harness.cli import main
from harness.engines import virtual
from harness.results import folder_policy
from harness.results.arrow_schemas import TABLES
from harness.results.run_reader import PARTS, load_run
from tests.support.configs import CONFIGS

HERD = str(CONFIGS / "seed-herd.toml")
RUN = ["--seeds", "3", "--set", "run.duration_s=2", "--compare", "stale,optimistic"]
QUIET = ["--quiet", "--no-report"]
ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def hold_still(monkeypatch: pytest.MonkeyPatch) -> None:
    """The two things that differ between two runs of one config held still (the run id and
    the engine's wall time), so their files can be compared byte for byte."""

    class _Still:
        @staticmethod
        def perf_counter() -> float:
            return 0.0

    monkeypatch.setattr(folder_policy, "new_run_id", lambda name: f"{name}-same")  # and the folder
    monkeypatch.setattr(virtual, "time", _Still)


def tables(out: Path) -> dict[str, bytes]:
    return {name: (out / f"{name}.parquet").read_bytes() for name in TABLES}


def temporaries(folder: Path) -> list[str]:
    return [str(p) for p in folder.rglob(".*")]


def keys(frame) -> set[tuple[str, int]]:
    return set(zip(frame["strategy"], frame["seed"], strict=True))


def consistent(out: Path) -> dict:
    """What a reader gets from `out` agrees with itself: run.json's finished seeds are the
    summary's and the nodes' seeds, every request row belongs to a finished or partial seed;
    the run.json on disk never lists a seed the tables lack, and lists exactly theirs once
    the run is closed."""
    meta, frames = load_run(out)
    finished = {tuple(k) for k in meta["finished"]}
    assert keys(frames["summary"]) == finished
    assert keys(frames["nodes"]) == finished
    assert keys(frames["requests"]) <= finished | {tuple(k) for k in meta["partial"]}
    raw = json.loads((out / "run.json").read_text())
    assert {tuple(k) for k in raw["finished"]} <= finished
    if not (out / PARTS).exists():
        assert {tuple(k) for k in raw["finished"]} == finished
    return meta


def one_line(err: str, *parts: str) -> str:
    assert err.count("\n") == 1 and "Traceback" not in err, err
    for part in parts:
        assert part in err, (part, err)
    return err


def signals_at(monkeypatch: pytest.MonkeyPatch, spec: str) -> None:
    """The commands this process runs next (`harness.cli.main`) send it the signals of `spec`
    at their phases (`harness.testing_signals.SIGNAL_AT`), counted from now; none if
    `spec` is empty."""
    monkeypatch.setattr(testing_signals, "_seen", {})
    monkeypatch.setenv(testing_signals.SIGNAL_AT, spec)


def command(monkeypatch, capsys, *args: str, signal_at: str = "") -> tuple[int, str]:
    """`harness ARGS` in this process (`harness.cli.main`), sending itself the signals of
    `signal_at` at their phases: its exit code, and what it said on stderr."""
    signals_at(monkeypatch, signal_at)
    capsys.readouterr()
    code = main(list(args))
    return code, capsys.readouterr().err


def sweep_file(tmp_path: Path) -> Path:
    """A sweep of 2 cells x 2 seeds of 2 s."""
    path = tmp_path / "sweep.toml"
    path.write_text(
        f'[sweep]\nbase = "{HERD}"\nseeds = 2\n'
        '[set]\n"run.duration_s" = 2.0\n[grid]\n"placement.k" = [2, 3]\n'
    )
    return path


def joining(address: str | None) -> dict[str, str]:
    """The environment of a `harness` process that joins the Ray at `address` if given
    (RAY_ADDRESS, which leaves the config, and so a resume's check, alone) rather than
    starting its own: this process's environment as it is now, since starting the shared Ray
    set the single-host mode a process joining it needs."""
    if address is None:
        return ENV
    return {**os.environ, "PYTHONPATH": str(ROOT), "RAY_ADDRESS": address}
