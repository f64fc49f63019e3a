"""Nothing lost when a write fails or a signal lands: every file of a run is whole (the
previous state or the new one), run.json lists exactly the seeds the tables hold, no temporary
file stays, the user reads one true line with the documented exit code, and an interrupted
run resumes to the very files of a run never stopped. Failures are injected at the I/O
boundary (a stub that fails the Nth write) or on a real, small file system; signals are sent
by the process itself at a named phase (`harness.testing_signals.at`), never after a delay."""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from harness import testing_signals
from harness.cli import WRITE_FAILED, main
from harness.config.sweep_file import load_sweep
from harness.engines import virtual
from harness.results import folder_policy
from harness.results.arrow_schemas import TABLES
from harness.results.run_reader import PARTS, load_run
from harness.results.run_writer import RunWriter
from harness.results.sweep_folder import SweepStore
from tests.support.configs import CONFIGS, scenario
from tests.support.tiers import slow

# Its Ray tests check exits and whole files, not timing: they may share the machine.
pytestmark = pytest.mark.shares_machine

HERD = str(CONFIGS / "seed-herd.toml")
RUN = ["--seeds", "3", "--set", "run.duration_s=2", "--compare", "stale,optimistic"]
QUIET = ["--quiet", "--no-report"]
ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def _hold_still(monkeypatch: pytest.MonkeyPatch) -> None:
    """The two things that differ between two runs of one config held still (the run id and
    the engine's wall time), so their files can be compared byte for byte."""

    class _Still:
        @staticmethod
        def perf_counter() -> float:
            return 0.0

    monkeypatch.setattr(folder_policy, "new_run_id", lambda name: f"{name}-same")  # and the folder
    monkeypatch.setattr(virtual, "time", _Still)


@pytest.fixture
def still(monkeypatch):
    _hold_still(monkeypatch)


def _tables(out: Path) -> dict[str, bytes]:
    return {name: (out / f"{name}.parquet").read_bytes() for name in TABLES}


def _temporaries(folder: Path) -> list[str]:
    return [str(p) for p in folder.rglob(".*")]


def _keys(frame) -> set[tuple[str, int]]:
    return set(zip(frame["strategy"], frame["seed"], strict=True))


def _consistent(out: Path) -> dict:
    """What a reader gets from `out` agrees with itself: run.json's finished seeds are the
    summary's and the nodes' seeds, every request row belongs to a finished or partial seed;
    the run.json on disk never lists a seed the tables lack, and lists exactly theirs once
    the run is closed."""
    meta, frames = load_run(out)
    finished = {tuple(k) for k in meta["finished"]}
    assert _keys(frames["summary"]) == finished
    assert _keys(frames["nodes"]) == finished
    assert _keys(frames["requests"]) <= finished | {tuple(k) for k in meta["partial"]}
    raw = json.loads((out / "run.json").read_text())
    assert {tuple(k) for k in raw["finished"]} <= finished
    if not (out / PARTS).exists():
        assert {tuple(k) for k in raw["finished"]} == finished
    return meta


def _one_line(err: str, *parts: str) -> str:
    assert err.count("\n") == 1 and "Traceback" not in err, err
    for part in parts:
        assert part in err, (part, err)
    return err


def _signal_at(monkeypatch: pytest.MonkeyPatch, spec: str) -> None:
    """The commands this process runs next (`harness.cli.main`) send it the signals of `spec`
    at their phases (`harness.testing_signals.SIGNAL_AT`), counted from now; none if
    `spec` is empty."""
    monkeypatch.setattr(testing_signals, "_seen", {})
    monkeypatch.setenv(testing_signals.SIGNAL_AT, spec)


def _command(monkeypatch, capsys, *args: str, signal_at: str = "") -> tuple[int, str]:
    """`harness ARGS` in this process (`harness.cli.main`), sending itself the signals of
    `signal_at` at their phases: its exit code, and what it said on stderr."""
    _signal_at(monkeypatch, signal_at)
    capsys.readouterr()
    code = main(list(args))
    return code, capsys.readouterr().err


# -- a write that fails: a stub at the I/O boundary ------------------------------------------


class Disk:
    """The writes of a run (Parquet files, whole or row group by row group, and text files):
    counted, and failing from the `fail_at`th on (a full disk stays full) or only there
    (`once`: a permission lost for a moment)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        self.fail_at: int | None = None
        self.once = False
        self.error = errno.ENOSPC
        for owner, name in (
            (pq, "write_table"),
            (pq.ParquetWriter, "write_table"),
            (Path, "write_text"),
        ):
            monkeypatch.setattr(owner, name, self._wrap(getattr(owner, name)))

    def _wrap(self, real):
        def write(*args, **kwargs):
            self.calls += 1
            failing = self.fail_at is not None and (
                self.calls == self.fail_at if self.once else self.calls >= self.fail_at
            )
            if failing:
                raise OSError(self.error, os.strerror(self.error))
            return real(*args, **kwargs)

        return write


WRITTEN = ["run", HERD, *RUN, "--seeds", "1", *QUIET]
"""The run whose every write fails in turn: a seed of each of 2 strategies, so a write fails
before any seed is kept, with one kept, and while the run's tables are gathered (~25 writes)."""


@pytest.fixture(scope="module")
def straight_run(tmp_path_factory) -> tuple[Path, int]:
    """`WRITTEN` run straight through, held still (`_hold_still`), once for every way a write
    fails: its folder, and how many writes it made."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        _hold_still(monkeypatch)
        disk = Disk(monkeypatch)
        straight = tmp_path_factory.mktemp("written") / "straight"
        assert main([*WRITTEN, "--out", str(straight)]) == 0
        return straight, disk.calls


@pytest.mark.slow  # a failure at each of the ~25 writes of a run, each resumed: ~50 runs
@pytest.mark.parametrize("once", [False, True], ids=["disk-full", "eacces-once"])
def test_a_write_failing_at_any_point_of_a_run_leaves_whole_files_and_resumes(
    once, straight_run, tmp_path, monkeypatch, capsys, still
):
    straight, writes = straight_run
    assert writes > 15
    disk = Disk(monkeypatch)
    disk.once = once
    disk.error = errno.EACCES if once else errno.ENOSPC
    reason = os.strerror(disk.error)
    for n in range(1, writes + 1):
        out = tmp_path / f"fail-{n}"
        disk.calls, disk.fail_at = 0, n
        code = main([*WRITTEN, "--out", str(out)])
        err = capsys.readouterr().err
        assert code == WRITE_FAILED, (n, err)
        _one_line(err, "harness: error: cannot write ", str(out), reason)
        assert _temporaries(out) == [], n
        disk.fail_at = None
        if not (out / "run.json").exists():  # the first write failed: nothing was written
            assert "nothing was written" in err and list(out.iterdir()) == []
            continue
        meta = _consistent(out)
        assert meta["completed"] is False
        if once:  # run.json could still be written: it says why, and lists what is kept
            assert reason in meta["error"]
            raw = json.loads((out / "run.json").read_text())
            assert raw["finished"] == meta["finished"]
        assert main(["run", "--resume", str(out), *QUIET]) == 0, capsys.readouterr().err
        assert _tables(out) == _tables(straight), n
        assert load_run(out)[0]["completed"] is True


def test_the_report_is_replaced_whole_or_not_at_all(good_run, tmp_path, monkeypatch, capsys):
    out = tmp_path / "run"
    shutil.copytree(good_run, out)
    before = b"<html>the report drawn before</html>\n"  # what a failed write leaves: any bytes
    (out / "report.html").write_bytes(before)
    disk = Disk(monkeypatch)
    disk.fail_at = 1
    assert main(["report", str(out)]) == WRITE_FAILED
    _one_line(capsys.readouterr().err, "report.html", "No space left on device")
    assert (out / "report.html").read_bytes() == before
    assert _temporaries(out) == []


def _mounted(folder: Path, size: str) -> bool:
    if os.geteuid() != 0:
        return False
    folder.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
        capture_output=True,
    )
    return done.returncode == 0


@pytest.fixture
def small_disk(tmp_path):
    """A real 1 MiB file system (tmpfs), where root may mount one; skipped otherwise."""
    disk = tmp_path / "disk"
    if not _mounted(disk, "1m"):
        pytest.skip("mounting a tmpfs needs root and a kernel that lets this process mount")
    try:
        yield disk
    finally:
        subprocess.run(["umount", str(disk)], check=False)


@pytest.mark.slow  # a run and its resume per size, on a file system mounted for it
@pytest.mark.parametrize("free_kb", [8, 32, 128, 380, 420])
def test_a_real_full_disk_is_one_line_and_whole_files(free_kb, small_disk, capsys):
    """Each seed's parts take ~50 kB and the gathered tables ~85 kB: with 8 kB free the first
    commit fails and so does the gather; 32 kB, the first commit; 128 kB, the third; 380 kB,
    the final run.json; 420 kB, the gathered timeline."""
    ballast = small_disk / "ballast"
    size = os.statvfs(small_disk).f_bavail * os.statvfs(small_disk).f_frsize
    ballast.write_bytes(b"\0" * (size - free_kb * 1024))
    out = small_disk / "run"
    args = ["run", HERD, *RUN, "--set", "cluster.nodes=300", "--set", "run.duration_s=20"]
    code = main([*args, "--quiet", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == WRITE_FAILED, err
    _one_line(err, "cannot write", "No space left on device")
    assert _temporaries(small_disk) == []
    if (out / "run.json").exists():
        meta = _consistent(out)
        assert not meta["completed"]
        ballast.unlink()  # room again: the run resumes to the end
        assert main(["run", "--resume", str(out), "--quiet"]) == 0, capsys.readouterr().err
        assert _consistent(out)["completed"]
        assert (out / "report.html").read_text().rstrip().endswith("</html>")


# -- resume -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def straight(tmp_path_factory) -> Path:
    """`RUN` run straight through, held still (`_hold_still`), once for every seed a run of it
    is stopped at."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        _hold_still(monkeypatch)
        out = tmp_path_factory.mktemp("straight") / "straight"
        assert main(["run", HERD, *RUN, *QUIET, "--out", str(out)]) == 0
        return out


@pytest.mark.parametrize("stop_at", [1, 2, 4, 6])
def test_a_run_interrupted_after_any_seed_resumes_to_the_files_of_a_straight_run(
    stop_at, straight, tmp_path, monkeypatch, capsys, still
):
    out = tmp_path / "stopped"
    run = ["run", HERD, *RUN, *QUIET, "--out", str(out)]
    code, said = _command(monkeypatch, capsys, *run, signal_at=f"seed#{stop_at}=INT")
    assert code == 130
    assert f"{stop_at - 1} of 6 seeds finished are kept in {out}" in said
    assert f"harness run --resume {out}" in said
    assert len(_consistent(out)["finished"]) == stop_at - 1
    monkeypatch.delenv(testing_signals.SIGNAL_AT)
    assert main(["run", "--resume", str(out), *QUIET]) == 0
    assert _tables(out) == _tables(straight)
    meta = json.loads((out / "run.json").read_text())
    assert (
        meta["completed"]
        and meta["finished"] == json.loads((straight / "run.json").read_text())["finished"]
    )


def _joining(address: str | None) -> dict[str, str]:
    """The environment of a `harness` process that joins the Ray at `address` if given
    (RAY_ADDRESS, which leaves the config, and so a resume's check, alone) rather than
    starting its own: this process's environment as it is now, since starting the shared Ray
    set the single-host mode a process joining it needs."""
    if address is None:
        return ENV
    return {**os.environ, "PYTHONPATH": str(ROOT), "RAY_ADDRESS": address}


@pytest.mark.parametrize(
    "engine", ["virtual", pytest.param("ray", marks=[pytest.mark.ray, pytest.mark.slow])]
)
def test_a_resumed_run_never_runs_a_kept_seed_again(engine, tmp_path, request, monkeypatch, capsys):
    """An interrupted run closed its files and dropped its parts, so --resume ran
    every seed again. The kept seeds' rows come back byte for byte, their engine_wall_s too:
    not run again (on Ray a rerun would be another run, not the one the message kept). Both
    commands run in this process, on Ray joining the shared one (`local_ray`): the claim is
    about what is kept, not a process's or Ray's start-up."""
    out = tmp_path / "run"
    run = ["run", HERD, "--seeds", "3", "--set", "run.duration_s=1", "--engine", engine]
    if engine == "ray":
        request.getfixturevalue("local_ray")
    code, said = _command(
        monkeypatch, capsys, *run, *QUIET, "--out", str(out), signal_at="seed#3=INT"
    )
    assert code == 130, said[-2000:]
    said = " ".join(said.split())
    assert f"interrupted: 2 of 3 seeds finished are kept in {out}" in said, said
    kept = load_run(out)[1]
    assert sorted(kept["summary"]["seed"]) == [0, 1]
    code, said = _command(monkeypatch, capsys, "run", "--resume", str(out), *QUIET)
    assert code == 0, said[-2000:]
    meta, frames = load_run(out)
    assert meta["completed"] and sorted(frames["summary"]["seed"]) == [0, 1, 2]
    for name in TABLES:
        again = frames[name][frames[name]["seed"].isin([0, 1])].reset_index(drop=True)
        pd.testing.assert_frame_equal(again, kept[name], check_exact=True)
    assert (kept["summary"]["engine_wall_s"] > 0).all()


def test_a_resumed_run_drops_its_partial_seed_and_a_commit_cut_short(tmp_path):
    config = scenario(run={"duration_s": 2.0, "seeds": 3})
    engine = virtual.VirtualEngine()
    writer = RunWriter(tmp_path, config.to_dict(), ["stale"], [0, 1, 2], "virtual")
    writer.add(engine.run_seed(config, 0))
    writer.add(engine.run_seed(config, 1), partial=True)
    (tmp_path / PARTS / ".00002.tmp").mkdir()  # as a SIGKILL mid-commit leaves it
    writer._lock.release()  # no close: the process died
    resumed = RunWriter(tmp_path, config.to_dict(), ["stale"], [0, 1, 2], "virtual", resume=True)
    assert resumed.done == {("stale", 0)}
    assert resumed.meta["partial"] == [] and _temporaries(tmp_path) == []
    resumed.close(completed=False, error="stopped again")
    assert _keys(load_run(tmp_path)[1]["requests"]) == {("stale", 0)}


def test_rerunning_into_a_run_killed_before_any_seed_suggests_resume(tmp_path, capsys):
    """After a SIGKILL before any seed finished, running again into the folder
    suggested --overwrite, which throws away what --resume keeps."""
    out = tmp_path / "run"
    config = scenario(run={"duration_s": 2.0, "seeds": 2})
    RunWriter(out, config.to_dict(), ["stale"], [0, 1], "virtual")._lock.release()  # killed
    args = ["run", HERD, "--seeds", "2", "--set", "run.duration_s=2", *QUIET, "--out", str(out)]
    assert main(args) == 2
    _one_line(capsys.readouterr().err, "unfinished run", f"harness run --resume {out}")
    assert main(["run", "--resume", str(out), *QUIET]) == 0
    assert load_run(out)[0]["finished"] == [["stale", 0], ["stale", 1]]


@pytest.mark.parametrize(
    "change,said",
    [
        (["--set", "run.duration_s=3"], "run.duration_s differs"),
        (["--set", "placement.k=2"], "placement.k differs"),
        (["--compare", "stale"], "--compare stale,optimistic"),
    ],
)
def test_resume_with_another_config_is_refused_with_one_line(
    change, said, tmp_path, capsys, monkeypatch
):
    out = tmp_path / "stopped"
    _signal_at(monkeypatch, "seed#2=INT")
    assert main(["run", HERD, *RUN, *QUIET, "--out", str(out)]) == 130
    monkeypatch.delenv(testing_signals.SIGNAL_AT)
    capsys.readouterr()
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    args = [*RUN, *change] if change[0] == "--set" else [*RUN[:-2], *change]
    assert main(["run", HERD, *args, *QUIET, "--resume", str(out)]) == 2
    _one_line(capsys.readouterr().err, "harness: error: ", str(out), said)
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_resume_refuses_another_version_a_complete_run_and_a_folder_of_no_run(tmp_path, capsys):
    out = tmp_path / "run"
    assert (
        main(["run", HERD, "--seeds", "1", "--set", "run.duration_s=2", *QUIET, "--out", str(out)])
        == 0
    )
    capsys.readouterr()
    assert main(["run", "--resume", str(out), *QUIET]) == 2
    _one_line(capsys.readouterr().err, "holds a complete run: nothing to resume")
    meta = json.loads((out / "run.json").read_text())
    (out / "run.json").write_text(json.dumps({**meta, "completed": False}))
    assert main(["run", "--resume", str(out), "--seeds", "5", *QUIET]) == 2
    _one_line(capsys.readouterr().err, "--resume: without a config file, flags cannot change")
    (out / "run.json").write_text(
        json.dumps({**meta, "completed": False, "harness_version": "0.0.1"})
    )
    assert main(["run", "--resume", str(out), *QUIET]) == 2
    _one_line(capsys.readouterr().err, "written by harness 0.0.1")
    assert main(["run", "--resume", str(tmp_path / "nowhere"), *QUIET]) == 2
    _one_line(capsys.readouterr().err, "is not a folder")
    assert main(["run", "--resume", str(out), "--out", str(tmp_path / "x"), *QUIET]) == 2
    _one_line(capsys.readouterr().err, "--resume")


# -- harness report on a damaged folder ------------------------------------------------------


@pytest.fixture(scope="module")
def good_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("good") / "run"
    assert (
        main(["run", HERD, "--seeds", "2", "--set", "run.duration_s=2", *QUIET, "--out", str(out)])
        == 0
    )
    return out


def _foreign_table(path: Path) -> None:
    pq.write_table(pa.table({"x": [1, 2], "y": ["a", "b"]}), path)


def _wrong_types(path: Path) -> None:
    table = pq.read_table(path)
    column = table.schema.names[2]  # strategy, t, or the like: made text no number reads
    text = pa.array(["not a number"] * len(table)) if len(table) else pa.array([], pa.string())
    if pa.types.is_string(table.schema.field(column).type):
        text = pa.array([[1]] * len(table), pa.list_(pa.int64()))
    pq.write_table(table.set_column(2, column, text), path)


DAMAGE = {
    "truncated": lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2]),
    "empty": lambda p: p.write_bytes(b""),
    "not-utf8": lambda p: p.write_bytes(b"\xff\xfe\x00garbage"),
    "foreign-schema": _foreign_table,
    "wrong-types": _wrong_types,
}
JSON_DAMAGE = {
    "truncated": lambda p: p.write_text(p.read_text()[: len(p.read_text()) // 2]),
    "empty": lambda p: p.write_text(""),
    "list": lambda p: p.write_text("[]"),
    "number": lambda p: p.write_text("42"),
    "empty-object": lambda p: p.write_text("{}"),
    "config-a-list": lambda p: p.write_text(
        json.dumps({**json.loads(p.read_text()), "config": []})
    ),
    "config-wrong-value": lambda p: p.write_text(
        json.dumps({**json.loads(p.read_text()), "config": {"cluster": {"nodes": "many"}}})
    ),
    "seeds-a-string": lambda p: p.write_text(
        json.dumps({**json.loads(p.read_text()), "seeds": "0"})
    ),
    "seeds-of-lists": lambda p: p.write_text(
        json.dumps({**json.loads(p.read_text()), "seeds": [[0], [1]]})
    ),
    "not-utf8": lambda p: p.write_bytes(b"\xff\xfe{"),
}


@pytest.mark.parametrize(
    "file,damage",
    [(f"{t}.parquet", d) for t in TABLES for d in DAMAGE] + [("run.json", d) for d in JSON_DAMAGE],
)
def test_report_on_a_damaged_run_is_one_line_naming_the_file(
    file, damage, good_run, tmp_path, capsys
):
    out = tmp_path / "damaged"
    shutil.copytree(good_run, out)
    (JSON_DAMAGE if file == "run.json" else DAMAGE)[damage](out / file)
    assert main(["report", str(out)]) == 2
    _one_line(capsys.readouterr().err, "harness: error: ", file)


def test_report_on_a_damaged_seed_of_an_unclosed_run_is_one_line(tmp_path, capsys):
    config = scenario(run={"duration_s": 2.0, "seeds": 2})
    writer = RunWriter(tmp_path, config.to_dict(), ["stale"], [0, 1], "virtual")
    writer.add(virtual.VirtualEngine().run_seed(config, 0))
    writer._lock.release()
    for damaged in ("{", "{}", "[]", '{"strategy": "stale", "seed": "0"}'):
        (tmp_path / PARTS / "00000" / "seed.json").write_text(damaged)
        assert main(["report", str(tmp_path)]) == 2
        _one_line(capsys.readouterr().err, "seed.json")


# -- damaged parts of an unfinished run: report names them, --resume runs their seed again ---


@pytest.fixture(scope="module")
def stopped_run(tmp_path_factory) -> Path:
    """A run of 3 seeds interrupted as its third began: parts 00000 and 00001 kept."""
    out = tmp_path_factory.mktemp("stopped") / "run"
    args = ["run", HERD, "--seeds", "3", "--set", "run.duration_s=2", *QUIET, "--out", str(out)]
    with pytest.MonkeyPatch.context() as monkeypatch:
        _signal_at(monkeypatch, "seed#3=INT")
        assert main(args) == 130
    return out


def _bit_flipped(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def _seed_json(change):
    def damage(path: Path) -> None:
        path.write_text(json.dumps(change(json.loads(path.read_text()))))

    return damage


def _first_file(change):
    def edit(record: dict) -> dict:
        name = next(iter(record["files"]))
        return {**record, "files": {**record["files"], name: change(record["files"][name])}}

    return _seed_json(edit)


PART_DAMAGE = {**DAMAGE, "bit-flipped": _bit_flipped, "deleted": lambda p: p.unlink()}
SEED_JSON_DAMAGE = {
    **{k: JSON_DAMAGE[k] for k in ("truncated", "empty", "list", "number", "not-utf8")},
    "empty-object": JSON_DAMAGE["empty-object"],
    "files-dropped": _seed_json(lambda r: {k: v for k, v in r.items() if k != "files"}),
    "files-emptied": _seed_json(lambda r: {**r, "files": {}}),
    "rows-altered": _first_file(lambda f: {**f, "rows": f["rows"] + 1}),
    "checksum-altered": _first_file(lambda f: {**f, "sha256": "0" * 64}),
    "checksum-a-number": _first_file(lambda f: {**f, "sha256": 7}),
}
PART_CASES = [(f"{t}.parquet", d) for t in TABLES for d in PART_DAMAGE] + [
    ("seed.json", d) for d in SEED_JSON_DAMAGE
]
FAST_PART_CASES = {("nodes.parquet", "deleted"), ("seed.json", "checksum-altered")}
"""The damaged parts the fast tier tries (the table once silently gathered without its file,
and a record that no longer vouches for its file); the slow tier tries every one."""


@pytest.mark.parametrize(
    "file,damage",
    [case if case in FAST_PART_CASES else slow(*case) for case in PART_CASES],
    ids=[f"{f}-{d}" for f, d in PART_CASES],
)
def test_a_damaged_part_is_named_by_report_and_run_again_by_resume(
    file, damage, stopped_run, tmp_path, capsys
):
    """A damaged part jammed the folder (a traceback on every resume), and a part
    missing nodes.parquet was gathered without it, silently. Now report names the file in one
    line (exit 2); --resume names it in one line, runs that seed again and completes, the
    undamaged part kept as it was."""
    out = tmp_path / "damaged"
    shutil.copytree(stopped_run, out)
    kept = load_run(out)[1]
    (PART_DAMAGE if file.endswith(".parquet") else SEED_JSON_DAMAGE)[damage](
        out / PARTS / "00000" / file
    )
    capsys.readouterr()
    assert main(["report", str(out)]) == 2
    _one_line(capsys.readouterr().err, "harness: error: ", str(out / PARTS / "00000"), file)
    assert main(["run", "--resume", str(out), *QUIET]) == 0
    _one_line(capsys.readouterr().err, str(out / PARTS / "00000"), file, "its seed runs again")
    meta = _consistent(out)
    assert meta["completed"] and meta["finished"] == [["stale", 0], ["stale", 1], ["stale", 2]]
    assert not (out / PARTS).exists()
    frames = load_run(out)[1]
    for name in TABLES:  # seed 1 was not run again: its rows are those kept
        again = frames[name][frames[name]["seed"] == 1].reset_index(drop=True)
        before = kept[name][kept[name]["seed"] == 1].reset_index(drop=True)
        pd.testing.assert_frame_equal(again, before, check_exact=True)


SWEEP_DAMAGE = {
    "sweep.json": {
        "list": "[]",
        "empty-object": "{}",
        "truncated": '{"name": "s", "cells": [',
        "cells-a-number": lambda meta: {**meta, "cells": 3},
        "cell-without-status": lambda meta: {
            **meta,
            "cells": [{k: v for k, v in c.items() if k != "status"} for c in meta["cells"]],
        },
        "base-not-valid": lambda meta: {
            **meta,
            "identity": {**meta["identity"], "base": {"cluster": {"nodes": "many"}}},
        },
    },
}


@pytest.mark.parametrize("damage", list(SWEEP_DAMAGE["sweep.json"]))
def test_report_on_a_damaged_sweep_is_one_line_naming_the_file(damage, tmp_path, capsys):
    out = tmp_path / "sweep-out"
    SweepStore(out, load_sweep(_sweep_file(tmp_path))).close()
    assert main(["report", str(out)]) == 0  # whole, it reports (no cell complete yet)
    capsys.readouterr()
    change = SWEEP_DAMAGE["sweep.json"][damage]
    meta = json.loads((out / "sweep.json").read_text())
    text = change if isinstance(change, str) else json.dumps(change(meta))
    (out / "sweep.json").write_text(text)
    assert main(["report", str(out)]) == 2
    _one_line(capsys.readouterr().err, "harness: error: ", "sweep.json")


def test_report_on_a_sweep_whose_summary_is_foreign_is_one_line(tmp_path, capsys):
    out = tmp_path / "sweep-out"
    SweepStore(out, load_sweep(_sweep_file(tmp_path))).close()
    _foreign_table(out / "summary.parquet")
    assert main(["report", str(out)]) == 2
    _one_line(capsys.readouterr().err, "summary.parquet", "lacks the column")


# -- signals at every phase -------------------------------------------------------------------


def _run_stopped(spec: str, out: Path, *extra: str) -> subprocess.CompletedProcess:
    """`harness run` as its own process, sending itself the signals of `spec` at their phases
    (`harness.testing_signals.SIGNAL_AT`)."""
    return subprocess.run(
        [sys.executable, "-m", "harness", "run", HERD, *RUN, "--quiet", "--out", str(out), *extra],
        env={**ENV, testing_signals.SIGNAL_AT: spec},
        capture_output=True,
        text=True,
        timeout=120,
    )


PHASES = [
    # (spec, exit code, what the line says, what is on disk)
    # The fast tier's: a signal that stops a run, one that finds it complete; each a process.
    ("seed#3=TERM", 143, "2 of 6 seeds finished are kept", "incomplete"),
    ("close=INT", 130, "the run had completed", "complete"),
    # The slow tier's: the other phases, and a process that draws its report before the signal.
    slow("start=INT", 130, "interrupted: nothing was written", "nothing"),
    slow("start=TERM", 143, "terminated: nothing was written", "nothing"),
    slow("seed=INT", 130, "0 of 6 seeds finished are kept", "incomplete"),
    slow("commit=INT", 130, "1 of 6 seeds finished are kept", "incomplete"),
    slow("commit#4=TERM", 143, "4 of 6 seeds finished are kept", "incomplete"),
    slow("commit#2=INT,close=INT", 130, "2 of 6 seeds finished are kept", "incomplete"),
    slow("commit#2=INT,close=TERM", 130, "2 of 6 seeds finished are kept", "incomplete"),
    slow("close=TERM", 143, "the run had completed", "complete"),
    slow("report=INT", 130, "report.html not written", "complete"),
    slow("report=TERM", 143, "report.html not written", "complete"),
    slow("shutdown=INT", 130, "interrupted", "complete+report"),
    slow("shutdown=TERM", 143, "terminated", "complete+report"),
    slow("done=INT", 0, "", "complete+report"),
    slow("done=TERM", 0, "", "complete+report"),
]


@pytest.mark.parametrize(
    "spec,code,said,disk", PHASES, ids=[getattr(p, "values", p)[0] for p in PHASES]
)
def test_a_signal_at_any_phase_of_a_run(spec, code, said, disk, tmp_path):
    out = tmp_path / "run"
    done = _run_stopped(spec, out)
    assert done.returncode == code, done.stderr
    text = done.stdout + done.stderr
    assert said in text and "Traceback" not in text
    if disk == "nothing":
        assert not out.exists() and f"partial results in {out}" not in text
        return
    meta = _consistent(out)
    assert meta["completed"] is disk.startswith("complete")
    assert (out / "report.html").exists() is disk.endswith("report")
    assert _temporaries(out) == []
    if not meta["completed"]:
        assert meta["error"] in ("interrupted", "terminated")


RAY_PHASES = [
    # (spec, exit code, what the line says, whether run.json exists)
    ("ray-init=INT", 130, "nothing was written", False),
    ("ray-init=TERM", 143, "nothing was written", False),
    ("seed=TERM", 143, "0 of 2 seeds finished are kept", True),
    ("shutdown=INT", 130, "interrupted", True),
]


@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.parametrize("spec,code,said,written", RAY_PHASES, ids=[p[0] for p in RAY_PHASES])
def test_a_signal_at_the_edges_of_a_ray_run(spec, code, said, written, tmp_path):
    """While Ray starts, its own handlers (a SIGTERM that exits at once, a failure handler
    printing `*** SIGTERM received`) are kept out; a signal then waits until Ray is up."""
    out = tmp_path / "run"
    # One seed per strategy (each seed on Ray sets up its actors: seconds) and no report
    # (none is read here): the signals land where they did, on a shorter run.
    short = ["--seeds", "1", "--set", "run.duration_s=1", "--no-report"]
    done = _run_stopped(spec, out, "--engine", "ray", *short)
    text = done.stdout + done.stderr
    assert done.returncode == code, text[-2000:]
    assert said in " ".join(text.split()) and "Traceback" not in text
    assert "SIGTERM received" not in text and "***" not in text
    assert (out / "run.json").exists() is written
    if written:
        _consistent(out)


def _sweep_file(tmp_path: Path) -> Path:
    """A sweep of 2 cells x 2 seeds of 2 s."""
    path = tmp_path / "sweep.toml"
    path.write_text(
        f'[sweep]\nbase = "{HERD}"\nseeds = 2\n'
        '[set]\n"run.duration_s" = 2.0\n[grid]\n"placement.k" = [2, 3]\n'
    )
    return path


def _sweep_stopped(
    spec: str, tmp_path: Path, address: str | None = None
) -> tuple[subprocess.CompletedProcess, Path]:
    """`harness sweep` as its own process, stopped as `spec` says (see `_run_stopped`), joining
    the Ray at `address` if given."""
    out, sweep = tmp_path / "s", str(_sweep_file(tmp_path))
    done = subprocess.run(
        [sys.executable, "-m", "harness", "sweep", sweep, "--quiet", "--out", str(out)],
        env={**_joining(address), testing_signals.SIGNAL_AT: spec},
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done, out


@pytest.mark.parametrize("signal_name,code", [("INT", 130), slow("TERM", 143)])  # as PHASES
def test_a_signal_before_a_sweep_starts_says_nothing_was_written(signal_name, code, tmp_path):
    done, out = _sweep_stopped(f"start={signal_name}", tmp_path)
    text = " ".join((done.stdout + done.stderr).split())
    assert done.returncode == code, text
    assert f"nothing was written; {out} was not created" in text and "Traceback" not in text
    assert not out.exists()


@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.parametrize("signal_name,code", [("INT", 130), ("TERM", 143)])
def test_a_signal_while_a_sweep_writes_a_cell_keeps_it_whole(
    signal_name, code, tmp_path, ray_address
):
    """On the shared Ray: the claim is about the cell's files, not Ray's start-up."""
    done, out = _sweep_stopped(f"cell={signal_name}", tmp_path, ray_address)
    text = done.stdout + done.stderr
    assert done.returncode == code, text[-2000:]
    assert "1 finished cells are in" in " ".join(text.split()) and "Traceback" not in text
    meta = json.loads((out / "sweep.json").read_text())
    assert [c["status"] for c in meta["cells"]].count("complete") == 1
    assert _temporaries(out) == []


# -- inputs: the files a config names, fingerprinted ------------------------------------------


def test_a_trace_edited_between_interruption_and_resume_is_refused_in_one_line(
    tmp_path, monkeypatch, capsys
):
    """A trace cut from 2,926 rows to 1,000 between the interruption and the resume
    made one run of two workloads (the check compared the trace's path, not its content)."""
    trace = tmp_path / "trace.csv"
    shutil.copy(CONFIGS / "traces" / "synthetic.csv", trace)
    config = tmp_path / "replay.toml"
    config.write_text(
        (CONFIGS / "trace-replay.toml").read_text().replace("traces/synthetic.csv", trace.name)
    )
    out = tmp_path / "run"
    run = ["run", str(config), "--seeds", "2", "--set", "run.duration_s=5", *QUIET]
    _signal_at(monkeypatch, "seed#2=INT")
    assert main([*run, "--out", str(out)]) == 130
    monkeypatch.delenv(testing_signals.SIGNAL_AT)
    assert json.loads((out / "run.json").read_text())["inputs"][str(trace)]
    whole = trace.read_text()
    trace.write_text("".join(whole.splitlines(keepends=True)[:1000]))
    capsys.readouterr()
    for resume in (["run", "--resume", str(out)], [*run, "--resume", str(out)]):
        assert main([*resume, *QUIET]) == 2
        _one_line(capsys.readouterr().err, "harness: error: ", str(trace), "changed")
    trace.unlink()
    assert main(["run", "--resume", str(out), *QUIET]) == 2
    _one_line(capsys.readouterr().err, str(trace))
    trace.write_text(whole)  # as it was: the run resumes
    assert main(["run", "--resume", str(out), *QUIET]) == 0
    assert load_run(out)[0]["completed"]


def _catches(pid: int, signum: int) -> bool:
    """Whether process `pid` has a handler for `signum` (its SigCgt mask in /proc)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    mask = next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(int(mask, 16) >> (signum - 1) & 1)


@pytest.mark.slow  # 18 starts of the harness, each signalled
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads Linux /proc")
@pytest.mark.parametrize("signame,code", [("SIGINT", 130), ("SIGTERM", 143)])
def test_a_signal_at_any_moment_of_start_up_is_one_line_and_its_exit_code(signame, code, tmp_path):
    """A signal while the CLI still imported pandas and pyarrow gave a
    KeyboardInterrupt traceback and exit -2, or exit -15 and no word. The harness takes both
    signals from the first instruction of `harness.__main__.main` (a process is caught earlier
    only by the interpreter's defaults, which no program changes): from then on, at every
    delay over 2 s, one line and 128 + the signal."""
    signum = getattr(signal, signame)
    for i, delay in enumerate(0.25 * n for n in range(9)):
        out = tmp_path / f"run{i}"
        args = ["run", str(CONFIGS / "churn.toml"), "--set", "run.duration_s=600", *QUIET]
        proc = subprocess.Popen(
            [sys.executable, "-m", "harness", *args, "--out", str(out)],
            env=ENV,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        while not _catches(proc.pid, signal.SIGTERM):  # the CLI's first instruction is done
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.001)
        time.sleep(delay)
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == code, (delay, err[-2000:])
        assert err.count("\n") == 1 and "Traceback" not in err, (delay, err)
        assert ("interrupted" if signum == signal.SIGINT else "terminated") in err, err
