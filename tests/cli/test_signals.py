"""A stop that always stops: the handler only notes a signal, the command stops where it polls,
so a signal whose handler runs inside a callback that swallows exceptions (a weakref callback,
as in Ray's and Cython's modules) still stops it; a second signal forces a stop the first did
not get; the exit code follows the first signal on every path. The handling itself in this
process (`harness.interrupts`), then `harness` in a subprocess signalled at its phases
(`harness.testing_signals`, `@weakref`: from inside such a callback)."""

from __future__ import annotations

import importlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness import interrupts, testing_signals
from harness.interrupts import Interrupted
from harness.results.run_reader import load_run
from tests.support.configs import CONFIGS
from tests.support.durability import joining
from tests.support.processes import Tree
from tests.support.tiers import slow

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
HERD = str(CONFIGS / "seed-herd.toml")


@pytest.fixture
def taken():
    """This process's SIGINT and SIGTERM taken as a command takes them, from a fresh start;
    put back after."""
    with interrupts.taken(restore=True):
        yield


def test_a_signal_is_noted_and_the_next_poll_stops(taken):
    signal.raise_signal(signal.SIGTERM)  # the handler raised nothing: it only noted it
    with pytest.raises(Interrupted) as stopped:
        interrupts.poll()
    assert stopped.value.signum == signal.SIGTERM
    interrupts.poll()  # the stop is under way: a poll in what follows cuts nothing
    assert interrupts.exit_code() == 143 and interrupts.word() == "terminated"


def test_a_signal_swallowed_by_a_weakref_callback_still_stops_at_the_next_poll(taken, capsys):
    """The handler of the first signal used to raise where it ran: inside a weakref callback,
    Python prints `Exception ignored in ...` and goes on, and the command ran to its end."""
    testing_signals._from_a_callback(signal.SIGINT)
    assert "Exception ignored" not in capsys.readouterr().err
    with pytest.raises(Interrupted):
        interrupts.poll()


def test_a_second_signal_forces_the_stop_the_first_did_not_get(taken):
    signal.raise_signal(signal.SIGTERM)
    with pytest.raises(Interrupted) as forced:
        signal.raise_signal(signal.SIGINT)  # as where nothing polls: raised at once
    assert forced.value.signum == signal.SIGTERM  # the first signal's kind
    assert interrupts.exit_code(KeyboardInterrupt()) == 143


def test_a_second_signal_inside_an_uncut_section_waits_for_its_end(taken):
    with pytest.raises(Interrupted), interrupts.uncut():
        signal.raise_signal(signal.SIGINT)
        signal.raise_signal(signal.SIGINT)
        interrupts.poll()  # nothing inside
        finished = True
    assert finished


def test_signals_once_the_stop_is_under_way_are_only_counted(taken):
    signal.raise_signal(signal.SIGINT)
    with pytest.raises(Interrupted):
        interrupts.poll()
    signal.raise_signal(signal.SIGTERM)  # while what is kept is written: nothing raised
    signal.raise_signal(signal.SIGINT)
    assert interrupts.exit_code() == 130


def test_a_second_signal_during_an_import_waits_for_the_import(taken, tmp_path, monkeypatch):
    """A module cut short halfway through its import breaks what it registered (Ray's exit
    hook printed a traceback after `harness: terminated`)."""
    (tmp_path / "slow_module.py").write_text(
        "import signal\nsignal.raise_signal(signal.SIGTERM)\nsignal.raise_signal(signal.SIGTERM)"
        "\nWHOLE = True\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("slow_module")
    assert module.WHOLE
    with pytest.raises(Interrupted):
        interrupts.poll()


def test_a_plain_keyboard_interrupt_exits_with_the_first_signals_code(taken):
    """Ray's wait turns the exception raised in it into a plain KeyboardInterrupt: a sweep
    stopped by SIGTERM exited 130, "interrupted"."""
    signal.raise_signal(signal.SIGTERM)
    assert interrupts.exit_code(KeyboardInterrupt()) == 143
    assert interrupts.word(KeyboardInterrupt()) == "terminated"


def test_a_command_run_inside_another_program_leaves_no_stop_behind():
    """A signal one command noted and never acted on stopped the next thing of this process
    that polled (Ray starting for the next test)."""
    with interrupts.taken(restore=True):
        signal.raise_signal(signal.SIGTERM)
    interrupts.poll()
    with interrupts.uncut():
        pass
    assert interrupts.first() is None


def _harness(
    args: list[str], spec: str, timeout: float = 180, address: str | None = None
) -> subprocess.CompletedProcess:
    """`harness ARGS` as its own process, sending itself the signals of `spec` at their phases;
    joining the Ray at `address` if given (`joining`)."""
    return subprocess.run(
        [sys.executable, "-m", "harness", *args],
        env={**joining(address), testing_signals.SIGNAL_AT: spec},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _one_line(done: subprocess.CompletedProcess, code: int, *parts: str) -> str:
    text = " ".join(done.stderr.split())
    assert done.returncode == code, done.stderr[-3000:]
    assert done.stderr.count("\n") == 1, done.stderr[-3000:]
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr
    for part in parts:
        assert part in text, (part, text)
    return text


RUN = ["run", HERD, "--seeds", "3", "--set", "run.duration_s=2", "--quiet"]
WEAKREF_PHASES = [
    # (spec, exit code, what the line says, run.json's completed)
    ("seed#2=TERM@weakref", 143, "terminated: 1 of 3 seeds finished are kept", False),
    slow("seed#3=INT@weakref", 130, "interrupted: 2 of 3 seeds finished are kept", False),
    slow("report=TERM@weakref", 143, "terminated: the run had completed", True),
]


@pytest.mark.parametrize(
    "spec,code,said,completed",
    WEAKREF_PHASES,
    ids=[getattr(p, "values", p)[0] for p in WEAKREF_PHASES],
)
def test_a_signal_inside_a_weakref_callback_stops_a_run(spec, code, said, completed, tmp_path):
    """SIGTERM landing inside a weakref callback left the run going to its end, then a
    traceback and exit 143; in the report, the report written all the same."""
    out = tmp_path / "run"
    _one_line(_harness([*RUN, "--out", str(out)], spec), code, said)
    meta = json.loads((out / "run.json").read_text())
    assert meta["completed"] is completed
    assert not (out / "report.html").exists()


@pytest.mark.slow  # a run, then its report signalled
def test_a_signal_inside_a_weakref_callback_stops_harness_report(tmp_path):
    out = tmp_path / "run"
    assert _harness([*RUN, "--no-report", "--out", str(out)], "").returncode == 0
    done = _harness(["report", str(out)], "report=TERM@weakref")
    _one_line(done, 143, "harness: terminated")
    assert not (out / "report.html").exists()


RAY_RUN = ["run", str(CONFIGS / "churn.toml"), "--engine", "ray", "--seeds", "1", "--quiet"]
RAY_PHASES = [
    # (spec, exit code, what the line says, whether the seed's rows are kept as partial)
    ("rows=TERM@weakref", 143, "terminated: 0 of 1 seeds finished are kept", True),
    ("rows=INT@weakref", 130, "interrupted: 0 of 1 seeds finished are kept", True),
    ("seed=TERM@weakref", 143, "terminated: 0 of 1 seeds finished are kept", False),
    ("commit=TERM@weakref", 143, "terminated: 1 of 1 seeds finished are kept", False),
    ("report=TERM@weakref", 143, "terminated: the run had completed", False),
]


@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.shares_machine  # exits and files, not timing
@pytest.mark.parametrize("spec,code,said,partial", RAY_PHASES, ids=[p[0] for p in RAY_PHASES])
def test_a_signal_inside_a_weakref_callback_stops_a_ray_run(
    spec, code, said, partial, tmp_path, ray_address
):
    """`harness run configs/churn.toml --engine ray`, SIGTERM in a weakref callback 2 s in:
    the run went on 37 s to its end, `completed: true`, a traceback, exit 143. Signalled once
    its first rows are in, a run of 60 model seconds stops at the driver's next poll. On the
    shared Ray (RAY_ADDRESS): the claim is about the stop at each phase of the run, not Ray's
    start-up or shutdown, which a signal meets in
    tests/results/test_interrupted_runs.py::test_a_signal_at_the_edges_of_a_ray_run."""
    out = tmp_path / "run"
    duration = 60 if spec.startswith("rows=") else 2
    args = [*RAY_RUN, "--set", f"run.duration_s={duration}", "--set", "workload.clients=100"]
    done = _harness([*args, "--out", str(out)], spec, address=ray_address)
    _one_line(done, code, said)
    meta, frames = load_run(out)
    assert meta["partial"] == ([["optimistic", 0]] if partial else [])
    if partial:  # stopped midway: what had arrived is kept, far short of the minute
        assert meta["completed"] is False and 0 < frames["requests"]["issued_at"].max() < 30


def _sweep_file(tmp_path: Path, duration_s: float) -> Path:
    """A sweep of 2 cells x 2 seeds of `duration_s` model seconds."""
    path = tmp_path / "sweep.toml"
    path.write_text(
        f'[sweep]\nbase = "{HERD}"\nseeds = 2\n'
        f'[set]\n"run.duration_s" = {duration_s}\n[grid]\n"placement.k" = [2, 3]\n'
    )
    return path


@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.shares_machine
@pytest.mark.parametrize("signame,code", [("SIGTERM", 143), ("SIGINT", 130)])
def test_a_sweep_stopped_while_it_waits_for_its_tasks_exits_with_the_signals_code(
    signame, code, tmp_path
):
    """SIGTERM to `harness sweep` while it waited for its tasks exited 130 "interrupted" (4
    of 6 tries): Ray's wait turned the exception the handler raised into a plain
    KeyboardInterrupt. Sent once a task runs, so the driver waits in Ray."""
    out = tmp_path / "s"
    args = ["sweep", str(_sweep_file(tmp_path, 600.0)), "--quiet", "--out", str(out)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", *args],
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    tree = Tree(proc)
    deadline = time.monotonic() + 180
    while not any(name.startswith("ray::run_seed") for name in tree.seen.values()):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.1)
    proc.send_signal(getattr(signal, signame))
    _, err = proc.communicate(timeout=120)
    done = subprocess.CompletedProcess(args, proc.returncode, "", err)
    word = "terminated" if code == 143 else "interrupted"
    _one_line(done, code, f"{word}: 0 finished cells are in {out}")
    assert tree.left() == []


@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.shares_machine
@pytest.mark.parametrize("spec,code", [("start=TERM@weakref", 143), ("cell=TERM@weakref", 143)])
def test_a_signal_inside_a_weakref_callback_stops_a_sweep(spec, code, tmp_path, ray_address):
    """On the shared Ray (RAY_ADDRESS): the claim is about the stop, not Ray's start-up."""
    out = tmp_path / "s"
    args = ["sweep", str(_sweep_file(tmp_path, 2.0)), "--quiet", "--out", str(out)]
    done = subprocess.run(
        [sys.executable, "-m", "harness", *args],
        env={**joining(ray_address), testing_signals.SIGNAL_AT: spec},
        capture_output=True,
        text=True,
        timeout=300,
    )
    if spec.startswith("start"):
        _one_line(done, code, "terminated: nothing was written")
        assert not out.exists()
    else:
        _one_line(done, code, "terminated: 1 finished cells are in")
        cells = json.loads((out / "sweep.json").read_text())["cells"]
        assert [c["status"] for c in cells].count("complete") == 1
