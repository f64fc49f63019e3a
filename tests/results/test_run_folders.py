"""Results folders: each run claims its own, atomically; a folder holding a run or a sweep is
never written into without `--overwrite`; a bad `--out` or `run.name` is one line and exit 2,
with nothing left behind; run.json costs a bounded share of a run however many seeds it has."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from harness.cli import main
from harness.config import ConfigError, from_dict
from harness.config.sweep_file import load_sweep
from harness.results import run_writer
from harness.results.failures import ResultsError
from harness.results.run_reader import load_run
from harness.results.run_writer import RunWriter
from harness.results.sweep_folder import SweepStore
from tests.support.configs import CONFIGS

HERD = str(CONFIGS / "seed-herd.toml")
SHORT = ["--seeds", "1", "--set", "run.duration_s=2", "--quiet", "--no-report"]
"""No report: these tests check folders (`harness report` writes one where a test wants it)."""
ROOT = Path(__file__).resolve().parents[2]


def _one_error_line(capsys: pytest.CaptureFixture[str], *parts: str) -> str:
    """The single stderr line of a refused command, which must name every one of `parts`."""
    err = capsys.readouterr().err
    assert err.startswith("harness: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    for part in parts:
        assert part in err, (part, err)
    return err


def _finished_run(out: Path, seeds: int = 1) -> dict:
    args = ["run", HERD, *SHORT, "--seeds", str(seeds), "--out", str(out)]
    assert main(args) == 0
    return json.loads((out / "run.json").read_text())


def _sweep_folder(tmp_path: Path) -> Path:
    """A sweep's folder as `harness sweep` leaves it before any cell ran (no Ray needed)."""
    path = tmp_path / "sweep.toml"
    path.write_text(
        f'[sweep]\nbase = "{CONFIGS / "seed-herd.toml"}"\nseeds = 2\n'
        '[grid]\n"placement.k" = [2, 3]\n'
    )
    out = tmp_path / "sweep-out"
    SweepStore(out, load_sweep(path)).close()
    return out


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


# -- unique folders, claimed atomically -------------------------------------------------------


def test_two_runs_in_the_same_second_get_folders_of_their_own(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)

    class Frozen:
        @staticmethod
        def now(tz=None):
            from datetime import datetime

            return datetime(2026, 11, 29, 16, 15, 0, tzinfo=tz)

    monkeypatch.setattr("harness.results.folder_policy.datetime", Frozen)
    assert main(["run", HERD, *SHORT]) == 0
    assert main(["run", HERD, *SHORT, "--set", "run.first_seed=7"]) == 0
    folders = sorted((tmp_path / "results").iterdir())
    assert len(folders) == 2
    assert all(f.name.startswith("seed-herd-20261129T161500Z-") for f in folders)
    seeds = sorted(load_run(f)[0]["finished"][0][1] for f in folders)
    assert seeds == [0, 7]


def test_of_runs_racing_for_one_folder_exactly_one_claims_it(tmp_path):
    out = tmp_path / "out"
    won: list[int] = []
    refused: list[str] = []
    start = threading.Barrier(8)

    def claim(i: int) -> None:
        start.wait()
        try:
            writer = RunWriter(out, {"run": {"name": "race"}, "i": i}, ["stale"], [0], "virtual")
        except ResultsError as e:
            refused.append(str(e))
        else:
            won.append(i)
            writer.close(completed=True)

    threads = [threading.Thread(target=claim, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(won) == 1 and len(refused) == 7
    assert json.loads((out / "run.json").read_text())["config"]["i"] == won[0]


def test_a_live_run_folder_is_not_replaced_even_with_overwrite(tmp_path, capsys):
    out = tmp_path / "live"
    writer = RunWriter(
        out, {"run": {"name": "live"}}, ["stale"], [0], "virtual"
    )  # a run still writing
    try:
        assert main(["run", HERD, *SHORT, "--out", str(out), "--overwrite"]) == 2
        _one_error_line(capsys, str(out), "in use")
        assert (out / "run.json").is_file()
    finally:
        writer.close(completed=True)


# -- a folder holding results is refused, or replaced with --overwrite ------------------------


def test_out_of_a_finished_run_is_refused_then_replaced_with_overwrite(tmp_path, capsys):
    out = tmp_path / "run"
    _finished_run(out, seeds=2)
    assert main(["report", str(out)]) == 0
    before = _snapshot(out)
    capsys.readouterr()
    assert main(["run", HERD, *SHORT, "--out", str(out)]) == 2
    _one_error_line(capsys, str(out), "holds a run", "--overwrite")
    assert _snapshot(out) == before

    assert main(["run", HERD, *SHORT, "--out", str(out), "--overwrite"]) == 0
    meta, _ = load_run(out)
    assert meta["finished"] == [["stale", 0]]
    assert not (out / "report.html").exists()  # replaced, not written over
    assert [p.name for p in tmp_path.iterdir()] == ["run"]  # nothing of the old one left


def test_out_of_a_sweep_is_refused_and_the_sweep_still_reports(tmp_path, capsys):
    sweep = _sweep_folder(tmp_path)
    before = _snapshot(sweep)
    assert main(["run", HERD, *SHORT, "--out", str(sweep)]) == 2
    _one_error_line(capsys, str(sweep), "holds a sweep", "--overwrite")
    assert _snapshot(sweep) == before
    assert main(["report", str(sweep)]) == 0

    assert main(["run", HERD, *SHORT, "--out", str(sweep), "--overwrite"]) == 0
    assert not (sweep / "sweep.json").exists()
    capsys.readouterr()
    assert main(["report", str(sweep)]) == 0  # a run now: no KeyError 'cell'
    assert "stale" in capsys.readouterr().out


def test_sweep_out_of_a_run_is_refused_and_the_run_still_reports(tmp_path, capsys):
    out = tmp_path / "run"
    _finished_run(out)
    before = _snapshot(out)
    sweep = CONFIGS / "sweep-heartbeat.toml"
    assert main(["sweep", str(sweep), "--out", str(out), "--quiet"]) == 2
    _one_error_line(capsys, str(out), "holds a run")
    assert _snapshot(out) == before
    assert main(["report", str(out)]) == 0


def test_a_folder_holding_both_a_run_and_a_sweep_is_refused_by_report(tmp_path, capsys):
    out = _sweep_folder(tmp_path)
    (out / "run.json").write_text("{}")  # as an older harness could leave it
    assert main(["report", str(out)]) == 2
    _one_error_line(capsys, str(out), "both a run and a sweep")


def test_overwrite_never_deletes_a_folder_that_holds_no_results(tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    assert main(["run", HERD, *SHORT, "--out", str(out), "--overwrite"]) == 2
    _one_error_line(capsys, str(out), "not empty")
    assert (out / "notes.txt").read_text() == "keep me"


def test_an_empty_folder_is_taken_as_out(tmp_path):
    out = tmp_path / "empty"
    out.mkdir()
    assert _finished_run(out)["completed"] is True


# -- --out that cannot be written -------------------------------------------------------------


@pytest.mark.parametrize(
    "target,reason",
    [
        ("{file}", "is a file"),
        ("{file}/sub", "is a file"),
        ("/proc/harness-out", "cannot create"),
        ("/proc/self/harness-out", "cannot create"),
        ("{tmp}/" + "x" * 300, "cannot create"),
        ("{tmp}/nul\0byte", "NUL"),
    ],
)
def test_an_out_that_cannot_be_written_is_one_line(target, reason, tmp_path, capsys):
    file = tmp_path / "file"
    file.write_text("not a folder")
    out = target.format(file=file, tmp=tmp_path)
    assert main(["run", HERD, *SHORT, "--out", out]) == 2
    _one_error_line(capsys, out.split("\0")[0], reason)
    assert file.read_text() == "not a folder"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a mode 0555 folder regardless")
def test_an_out_in_a_read_only_folder_is_one_line(tmp_path, capsys):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    out = locked / "run"
    assert main(["run", HERD, *SHORT, "--out", str(out)]) == 2
    _one_error_line(capsys, str(out), "cannot create")
    assert list(locked.iterdir()) == []


def test_a_read_only_working_directory_for_results_is_one_line(monkeypatch, capsys):
    # Root ignores permission bits, so the unwritable working directory is one under /proc.
    monkeypatch.chdir("/proc/self")
    assert main(["run", HERD, *SHORT]) == 2
    _one_error_line(capsys, "results", "cannot create")


def test_a_file_named_results_in_the_working_directory_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    Path("results").write_text("not a folder")
    assert main(["run", HERD, *SHORT]) == 2
    _one_error_line(capsys, "results", "is a file")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results"]


# -- run.name ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name,reason",
    [
        ("nul\0byte", "control character"),
        ("two\nlines", "control character"),
        ("x" * 201, "at most 200 bytes"),
        ("é" * 101, "at most 200 bytes"),
        ("/tmp/elsewhere", "a file name"),
        ("../../x", "a file name"),
        ("a/b", "a file name"),
        ("..", "a file name"),
        (".", "a file name"),
        ("", "empty"),
    ],
)
def test_run_name_must_be_a_plain_file_name(name, reason):
    with pytest.raises(ConfigError) as err:
        from_dict({"run": {"name": name}})
    assert err.value.key == "run.name" and reason in err.value.reason


@pytest.mark.parametrize("name", ["../../escaped", "/tmp/escaped", "line\nbreak"])
def test_a_run_name_never_writes_outside_results(name, tmp_path, monkeypatch, capsys):
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    assert main(["run", HERD, *SHORT, "--set", f"run.name={name}"]) == 2
    _one_error_line(capsys, "run.name")
    assert [p.relative_to(tmp_path) for p in tmp_path.rglob("*")] == [Path("a"), Path("a/b")]


@pytest.mark.parametrize("name", ["../../escaped", "/tmp/escaped", "tab\there"])
def test_a_sweep_name_must_be_a_plain_file_name_too(name, tmp_path):
    path = tmp_path / "sweep.toml"
    path.write_text(
        f'[sweep]\nbase = "{CONFIGS / "seed-herd.toml"}"\nname = {json.dumps(name)}\n'
        '[grid]\n"placement.k" = [2, 3]\n'
    )
    with pytest.raises(ConfigError) as err:
        load_sweep(path)
    assert err.value.key == "sweep.name"


def test_a_long_plain_run_name_still_fits_the_folder_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["run", HERD, *SHORT, "--set", f"run.name={'n' * 200}"]) == 0


# -- run.json: a bounded cost per seed, and readable after a crash ----------------------------


def test_run_json_is_not_rewritten_after_every_seed(tmp_path, monkeypatch):
    writes: list[Path] = []
    real = run_writer.write_json

    def counted(path: Path, data: object) -> None:
        writes.append(path)
        real(path, data)

    monkeypatch.setattr(run_writer, "write_json", counted)
    out = tmp_path / "many"
    args = ["--seeds", "60", "--set", "run.duration_s=0.5", "--set", "cluster.nodes=3"]
    assert main(["run", HERD, *args, "--quiet", "--no-report", "--out", str(out)]) == 0
    assert len(writes) < 15  # not one per seed (62 before)
    meta, frames = load_run(out)
    assert meta["completed"] is True and len(meta["finished"]) == 60
    assert len(frames["summary"]) == 60
    assert {(c["strategy"], c["seed"]) for c in meta["invariants"]} == {
        ("stale", s) for s in range(60)
    }


def test_a_killed_run_leaves_a_readable_run_json_listing_what_finished(tmp_path):
    out = tmp_path / "killed"
    args = ["--seeds", "100000", "--set", "run.duration_s=0.5", "--set", "cluster.nodes=3"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", "run", HERD, *args, "--quiet", "--out", str(out)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            time.sleep(0.5)
            try:
                if json.loads((out / "run.json").read_text())["finished"]:
                    break
            except (OSError, ValueError, KeyError):
                continue  # not started yet, or claimed and not yet written
    finally:
        proc.kill()
        proc.wait()
    meta = json.loads((out / "run.json").read_text())
    assert meta["completed"] is False
    seeds = [seed for _, seed in meta["finished"]]
    assert seeds and seeds == list(range(len(seeds)))
