"""Every run leaves no process it started, however it ends: `harness` in a subprocess, its
process tree listed while it runs and after it has exited. Also how it ends: exit codes,
no traceback, one line for a mistake."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from harness import testing_signals
from harness.cli import main
from harness.results.run_reader import load_run
from harness.results.run_writer import RunWriter
from tests.support.configs import CONFIGS
from tests.support.processes import Tree, paused

pytestmark = [
    pytest.mark.slow,  # each test runs `harness` in a subprocess, most on Ray, some killed
    pytest.mark.shares_machine,  # what they check holds under load
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux processes"),
]

ENV = {**os.environ, "PYTHONPATH": str(CONFIGS.parent)}
RAY = ["--engine", "ray", "--seeds", "1", "--quiet"]


def _start(args: list[str], env: dict[str, str] = ENV, **popen) -> tuple[subprocess.Popen, Tree]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group, as a shell job has
        **popen,
    )
    return proc, Tree(proc)


@pytest.mark.ray
def test_a_virtual_run_and_a_sweep_leave_no_process(tmp_path):
    args = ["run", str(CONFIGS / "seed-herd.toml"), "--seeds", "2", "--quiet", "--no-report"]
    proc, tree = _start([*args, "--out", str(tmp_path / "run")])
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err.decode()[-2000:]
    assert tree.left() == []
    sweep = tmp_path / "sweep.toml"
    sweep.write_text(
        f'[sweep]\nbase = "{CONFIGS / "seed-herd.toml"}"\nseeds = 2\n'
        '[set]\n"run.duration_s" = 2.0\n[grid]\n"placement.k" = [2, 3]\n'
    )
    proc, tree = _start(
        ["sweep", str(sweep), "--quiet", "--no-report", "--out", str(tmp_path / "s")]
    )
    _, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err.decode()[-2000:]
    assert tree.seen and tree.left() == []  # Ray's processes came and went


@pytest.mark.ray
def test_ctrl_c_just_after_the_results_exits_130_and_leaves_no_process(tmp_path):
    """Ctrl-C (to the whole process group, as a terminal sends it) while
    the harness stops Ray at the end of a run left Ray's agents running, exit code 0 and a
    KeyboardInterrupt traceback."""
    out = tmp_path / "run"
    args = ["run", str(CONFIGS / "seed-burst.toml"), *RAY, "--set", "run.duration_s=1"]
    proc, tree = _start([*args, "--out", str(out)])
    for line in proc.stdout:
        if line.startswith(b"results:"):
            os.killpg(proc.pid, signal.SIGINT)
            break
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err.decode()[-2000:]
    assert b"Traceback" not in err and b"KeyboardInterrupt" not in err
    assert load_run(out)[0]["completed"]  # the run itself had finished
    assert tree.left() == []


@pytest.mark.ray
def test_a_killed_driver_leaves_no_process(tmp_path):
    """kill -9 of `harness run`: Ray's GCS, raylet and workers share its fate, but its
    dashboard and runtime-env agents would run on for ever."""
    out = tmp_path / "run"
    args = ["run", str(CONFIGS / "churn.toml"), *RAY, "--set", "run.duration_s=60"]
    proc, tree = _start([*args, "--out", str(out)])
    deadline = time.time() + 120
    while not any(name.startswith("ray::ClientPool") for name in tree.seen.values()):
        assert time.time() < deadline and proc.poll() is None
        time.sleep(0.2)
    proc.kill()
    proc.communicate(timeout=60)
    assert tree.left() == []
    assert json.loads((out / "run.json").read_text())["completed"] is False


@pytest.mark.ray
def test_a_killed_raylet_ends_the_run_with_partial_results_and_leaves_no_process(tmp_path):
    """Ray's GCS finds a dead raylet by health checks, every 3 s, dead after 5 failures: the
    driver learns of it 15 s after the kill. Every 0.5 s here: a check of a live raylet still
    waits 10 s for its answer (`health_check_timeout_ms`), so a loaded machine fails none. The
    driver pauses itself once the seed's first rows are spooled (phase `rows`, SIGSTOP), the
    raylet is killed, and the driver goes on."""
    out = tmp_path / "run"
    args = ["run", str(CONFIGS / "churn.toml"), *RAY, "--set", "run.duration_s=60"]
    env = {**ENV, "RAY_health_check_period_ms": "500", testing_signals.SIGNAL_AT: "rows=STOP"}
    proc, tree = _start([*args, "--out", str(out)], env)
    assert paused(proc, timeout_s=120)
    (raylet,) = tree.running("raylet")
    os.kill(raylet, signal.SIGKILL)
    proc.send_signal(signal.SIGCONT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 1
    (line,) = err.decode().strip().splitlines()
    assert "completed: false" in line
    meta, frames = load_run(out)
    assert meta["completed"] is False and meta["partial"] == [["optimistic", 0]]
    assert len(frames["requests"]) > 0
    assert tree.left() == []


def test_an_address_that_is_not_ray_fails_in_seconds_with_one_line(tmp_path):
    """A TCP port that accepts and says nothing hung `ray.init` for
    minutes."""
    stop = threading.Event()
    held: list[socket.socket] = []
    with socket.create_server(("127.0.0.1", 0)) as server:
        server.settimeout(0.2)

        def accept() -> None:
            while not stop.is_set():
                with contextlib.suppress(TimeoutError):
                    held.append(server.accept()[0])

        silent = threading.Thread(target=accept, daemon=True)
        silent.start()
        address = f"127.0.0.1:{server.getsockname()[1]}"
        began = time.monotonic()
        proc, tree = _start(
            [
                "run",
                str(CONFIGS / "seed-burst.toml"),
                *RAY,
                "--address",
                address,
                "--out",
                str(tmp_path / "never"),
            ]
        )
        try:
            _, err = proc.communicate(timeout=60)
        finally:
            proc.kill()
            stop.set()
            silent.join(timeout=5)
            for conn in held:
                conn.close()
    assert proc.returncode == 2 and time.monotonic() - began < 30
    (line,) = err.decode().strip().splitlines()
    assert "--address" in line and address in line
    assert held  # it did connect: the port was open, only not Ray
    assert not (tmp_path / "never").exists() and tree.left() == []


def test_a_second_ctrl_c_while_the_files_are_flushed_is_ignored(tmp_path, monkeypatch):
    """Ctrl-C stops the run; a second one during the flush that follows
    used to cut it short (the process died by the signal, its files half written)."""
    close = RunWriter.close

    def interrupted_again(self, *args, **kwargs):
        signal.raise_signal(signal.SIGINT)  # the second Ctrl-C, as the flush begins
        close(self, *args, **kwargs)

    monkeypatch.setattr(RunWriter, "close", interrupted_again)

    class FirstCtrlC:
        """The progress display: the first Ctrl-C, once two seeds are done."""

        def __call__(self, done, total, fraction, snapshot, refused=0):
            if done == 2:
                signal.raise_signal(signal.SIGINT)

        def close(self) -> None:
            pass

    out = tmp_path / "run"
    monkeypatch.setattr("harness.presentation.progress.LazyProgress", lambda name: FirstCtrlC())
    code = main(["run", str(CONFIGS / "seed-herd.toml"), "--seeds", "50", "--out", str(out)])
    assert code == 130
    meta, frames = load_run(out)  # every file readable
    assert meta["completed"] is False and meta["error"] == "interrupted"
    assert len(meta["finished"]) == 2 and len(frames["summary"]) == 2


RAY_INIT_FAULT = """
import sys

import ray

real = ray.init


def init(*args, **kwargs):
    if {started}:
        real(*args, **kwargs)  # GCS and raylet up, then the driver fails
    raise {error}


ray.init = init
from harness.__main__ import main

sys.exit(main())
"""
FAULTS = {
    "gcs-timeout": (False, 'TimeoutError("The current node timed out during startup.\\nMore")'),
    "raylet-gone": (True, 'RuntimeError("Failed to get the system config from raylet")'),
}


@pytest.mark.ray
@pytest.mark.parametrize("fault", list(FAULTS))
def test_ray_failing_to_start_is_one_line_and_leaves_nothing(fault, tmp_path):
    """Ray failing to start (its GCS timed out under load, or the raylet killed
    during ray.init) gave a 37-line traceback or Ray's own log line. A fault injected at
    ray.init, before or after Ray's processes started: one line saying Ray could not start
    and why, exit 1, no process and no folder of Ray's left, nothing written."""
    started, error = FAULTS[fault]
    out = tmp_path / "run"
    args = ["run", str(CONFIGS / "seed-herd.toml"), *RAY, "--out", str(out)]
    code = RAY_INIT_FAULT.format(started=started, error=error)
    temp = Path(tempfile.mkdtemp(prefix="rf-", dir="/tmp"))  # short: Ray's sockets fit under it
    proc = subprocess.Popen(
        [sys.executable, "-c", code, *args],
        env={**ENV, "TMPDIR": str(temp)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    tree = Tree(proc)
    _, err = proc.communicate(timeout=180)
    assert proc.returncode == 1, err[-2000:]
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("harness: error: Ray could not start on this machine: ")
    assert error.split("(")[0] in err and "nothing was written" in err, err
    ray_ran = any(name.startswith(("raylet", "gcs_server")) for name in tree.seen.values())
    assert ray_ran is started  # Ray's processes came, and went
    assert tree.left() == []
    assert list(temp.iterdir()) == [] and not out.exists()  # its private folder too
    temp.rmdir()
