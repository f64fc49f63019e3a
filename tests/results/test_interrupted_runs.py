"""A signal at any phase of a run or a sweep, or of the harness's start-up: the files left are
whole, run.json lists exactly the seeds the tables hold, and the user reads one true line
with the documented exit code. Signals are sent by the process itself at a named phase
(`harness.testing_signals.at`), never after a delay."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness import testing_signals
from tests.support.configs import CONFIGS
from tests.support.durability import (
    ENV,
    HERD,
    QUIET,
    RUN,
    consistent,
    joining,
    sweep_file,
    temporaries,
)
from tests.support.tiers import slow

# Its Ray tests check exits and whole files, not timing: they may share the machine.
pytestmark = pytest.mark.shares_machine


# -- signals at every phase -------------------------------------------------------------------


def _run_stopped(
    spec: str, out: Path, *extra: str, address: str | None = None
) -> subprocess.CompletedProcess:
    """`harness run` as its own process, sending itself the signals of `spec` at their phases
    (`harness.testing_signals.SIGNAL_AT`), joining the Ray at `address` if given."""
    return subprocess.run(
        [sys.executable, "-m", "harness", "run", HERD, *RUN, "--quiet", "--out", str(out), *extra],
        env={**joining(address), testing_signals.SIGNAL_AT: spec},
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
    meta = consistent(out)
    assert meta["completed"] is disk.startswith("complete")
    assert (out / "report.html").exists() is disk.endswith("report")
    assert temporaries(out) == []
    if not meta["completed"]:
        assert meta["error"] in ("interrupted", "terminated")


RAY_PHASES = [
    # (spec, exit code, what the line says, whether run.json exists, on the shared Ray)
    ("ray-init=INT", 130, "nothing was written", False, False),
    ("ray-init=TERM", 143, "nothing was written", False, False),
    # Ray is up and the run's own: joining the shared one, the handlers are the same (a
    # joined ray.init installs them too), and no Ray of its own is started for a seed's edge.
    ("seed=TERM", 143, "0 of 2 seeds finished are kept", True, True),
    ("shutdown=INT", 130, "interrupted", True, False),
]


@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.parametrize(
    "spec,code,said,written,shared", RAY_PHASES, ids=[p[0] for p in RAY_PHASES]
)
def test_a_signal_at_the_edges_of_a_ray_run(spec, code, said, written, shared, tmp_path, request):
    """While Ray starts, its own handlers (a SIGTERM that exits at once, a failure handler
    printing `*** SIGTERM received`) are kept out; a signal then waits until Ray is up."""
    out = tmp_path / "run"
    # One seed per strategy (each seed on Ray sets up its actors: seconds) and no report
    # (none is read here): the signals land where they did, on a shorter run.
    short = ["--seeds", "1", "--set", "run.duration_s=1", "--no-report"]
    address = request.getfixturevalue("ray_address") if shared else None
    done = _run_stopped(spec, out, "--engine", "ray", *short, address=address)
    text = done.stdout + done.stderr
    assert done.returncode == code, text[-2000:]
    assert said in " ".join(text.split()) and "Traceback" not in text
    assert "SIGTERM received" not in text and "***" not in text
    assert (out / "run.json").exists() is written
    if written:
        consistent(out)


def _sweep_stopped(
    spec: str, tmp_path: Path, address: str | None = None
) -> tuple[subprocess.CompletedProcess, Path]:
    """`harness sweep` as its own process, stopped as `spec` says (see `_run_stopped`), joining
    the Ray at `address` if given."""
    out, sweep = tmp_path / "s", str(sweep_file(tmp_path))
    done = subprocess.run(
        [sys.executable, "-m", "harness", "sweep", sweep, "--quiet", "--out", str(out)],
        env={**joining(address), testing_signals.SIGNAL_AT: spec},
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
    assert temporaries(out) == []


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
