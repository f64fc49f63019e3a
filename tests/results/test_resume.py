"""`harness run --resume`: an interrupted run resumes to the very files of a run never stopped,
never runs a kept seed again, drops what was cut short, and refuses, in one line, another
config, another version, a complete run, or an input file edited since (its fingerprint)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from harness import testing_signals
from harness.cli import main
from harness.engines import virtual
from harness.results.arrow_schemas import TABLES
from harness.results.run_reader import PARTS, load_run
from harness.results.run_writer import RunWriter
from tests.support.configs import CONFIGS, scenario
from tests.support.durability import (
    HERD,
    QUIET,
    RUN,
    command,
    consistent,
    hold_still,
    keys,
    one_line,
    signals_at,
    tables,
    temporaries,
)

# Its Ray tests check exits and whole files, not timing: they may share the machine.
pytestmark = pytest.mark.shares_machine


# -- resume -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def straight(tmp_path_factory) -> Path:
    """`RUN` run straight through, held still (`hold_still`), once for every seed a run of it
    is stopped at."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        hold_still(monkeypatch)
        out = tmp_path_factory.mktemp("straight") / "straight"
        assert main(["run", HERD, *RUN, *QUIET, "--out", str(out)]) == 0
        return out


@pytest.mark.parametrize("stop_at", [1, 2, 4, 6])
def test_a_run_interrupted_after_any_seed_resumes_to_the_files_of_a_straight_run(
    stop_at, straight, tmp_path, monkeypatch, capsys, still
):
    out = tmp_path / "stopped"
    run = ["run", HERD, *RUN, *QUIET, "--out", str(out)]
    code, said = command(monkeypatch, capsys, *run, signal_at=f"seed#{stop_at}=INT")
    assert code == 130
    assert f"{stop_at - 1} of 6 seeds finished are kept in {out}" in said
    assert f"harness run --resume {out}" in said
    assert len(consistent(out)["finished"]) == stop_at - 1
    monkeypatch.delenv(testing_signals.SIGNAL_AT)
    assert main(["run", "--resume", str(out), *QUIET]) == 0
    assert tables(out) == tables(straight)
    meta = json.loads((out / "run.json").read_text())
    assert (
        meta["completed"]
        and meta["finished"] == json.loads((straight / "run.json").read_text())["finished"]
    )


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
    code, said = command(
        monkeypatch, capsys, *run, *QUIET, "--out", str(out), signal_at="seed#3=INT"
    )
    assert code == 130, said[-2000:]
    said = " ".join(said.split())
    assert f"interrupted: 2 of 3 seeds finished are kept in {out}" in said, said
    kept = load_run(out)[1]
    assert sorted(kept["summary"]["seed"]) == [0, 1]
    code, said = command(monkeypatch, capsys, "run", "--resume", str(out), *QUIET)
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
    assert resumed.meta["partial"] == [] and temporaries(tmp_path) == []
    resumed.close(completed=False, error="stopped again")
    assert keys(load_run(tmp_path)[1]["requests"]) == {("stale", 0)}


def test_rerunning_into_a_run_killed_before_any_seed_suggests_resume(tmp_path, capsys):
    """After a SIGKILL before any seed finished, running again into the folder
    suggested --overwrite, which throws away what --resume keeps."""
    out = tmp_path / "run"
    config = scenario(run={"duration_s": 2.0, "seeds": 2})
    RunWriter(out, config.to_dict(), ["stale"], [0, 1], "virtual")._lock.release()  # killed
    args = ["run", HERD, "--seeds", "2", "--set", "run.duration_s=2", *QUIET, "--out", str(out)]
    assert main(args) == 2
    one_line(capsys.readouterr().err, "unfinished run", f"harness run --resume {out}")
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
    signals_at(monkeypatch, "seed#2=INT")
    assert main(["run", HERD, *RUN, *QUIET, "--out", str(out)]) == 130
    monkeypatch.delenv(testing_signals.SIGNAL_AT)
    capsys.readouterr()
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    args = [*RUN, *change] if change[0] == "--set" else [*RUN[:-2], *change]
    assert main(["run", HERD, *args, *QUIET, "--resume", str(out)]) == 2
    one_line(capsys.readouterr().err, "harness: error: ", str(out), said)
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_resume_refuses_another_version_a_complete_run_and_a_folder_of_no_run(tmp_path, capsys):
    out = tmp_path / "run"
    assert (
        main(["run", HERD, "--seeds", "1", "--set", "run.duration_s=2", *QUIET, "--out", str(out)])
        == 0
    )
    capsys.readouterr()
    assert main(["run", "--resume", str(out), *QUIET]) == 2
    one_line(capsys.readouterr().err, "holds a complete run: nothing to resume")
    meta = json.loads((out / "run.json").read_text())
    (out / "run.json").write_text(json.dumps({**meta, "completed": False}))
    assert main(["run", "--resume", str(out), "--seeds", "5", *QUIET]) == 2
    one_line(capsys.readouterr().err, "--resume: without a config file, flags cannot change")
    (out / "run.json").write_text(
        json.dumps({**meta, "completed": False, "harness_version": "0.0.1"})
    )
    assert main(["run", "--resume", str(out), *QUIET]) == 2
    one_line(capsys.readouterr().err, "written by harness 0.0.1")
    assert main(["run", "--resume", str(tmp_path / "nowhere"), *QUIET]) == 2
    one_line(capsys.readouterr().err, "is not a folder")
    assert main(["run", "--resume", str(out), "--out", str(tmp_path / "x"), *QUIET]) == 2
    one_line(capsys.readouterr().err, "--resume")


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
    signals_at(monkeypatch, "seed#2=INT")
    assert main([*run, "--out", str(out)]) == 130
    monkeypatch.delenv(testing_signals.SIGNAL_AT)
    assert json.loads((out / "run.json").read_text())["inputs"][str(trace)]
    whole = trace.read_text()
    trace.write_text("".join(whole.splitlines(keepends=True)[:1000]))
    capsys.readouterr()
    for resume in (["run", "--resume", str(out)], [*run, "--resume", str(out)]):
        assert main([*resume, *QUIET]) == 2
        one_line(capsys.readouterr().err, "harness: error: ", str(trace), "changed")
    trace.unlink()
    assert main(["run", "--resume", str(out), *QUIET]) == 2
    one_line(capsys.readouterr().err, str(trace))
    trace.write_text(whole)  # as it was: the run resumes
    assert main(["run", "--resume", str(out), *QUIET]) == 0
    assert load_run(out)[0]["completed"]
