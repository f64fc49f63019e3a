"""Both example schedulers as a scheduler author starts them: a server already listening
(`external.address`), serving seed after seed (Hello, Places, Reset, Hello again), on either
transport. The Go one only where its toolchain is installed."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from harness.cli import main
from harness.external.generate import ROOT
from tests.external.test_external import NOT_SAID
from tests.support.golden import folder_digests
from tests.support.schedulers import GO_MISSING, PYTHON_SCHEDULER, SKELETON, go_scheduler
from tests.support.tiers import slow

SEEDS = 3
_go_built = functools.cache(go_scheduler)
"""The Go example built once for the module's tests (a build that changes nothing still takes
protoc and `go build` their time)."""


def _example(name: str) -> list[str]:
    if name == "go":
        if GO_MISSING:
            pytest.skip(f"no Go toolchain ({', '.join(GO_MISSING)} missing)")
        return _go_built()
    return PYTHON_SCHEDULER


@pytest.fixture(params=["grpc", slow("framed")])
def transport(request) -> str:
    """The transport of a scheduler at an address: the framed one in the slow tier only (the
    fast tier has it through `external.command`, tests/external/test_external.py)."""
    return request.param


@pytest.fixture(params=["python", "go"])
def listening(request, transport) -> Iterator[str]:
    """`host:port` of the example `request.param`, started by hand, serving `transport`."""
    command = _example(request.param)
    flag = {"python": "--framed", "go": "-framed"}[request.param]
    args = [*command, *([flag] if transport == "framed" else [])]
    process = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    try:
        port = int(process.stdout.readline())
        yield f"127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(10)


def test_an_example_at_an_address_serves_seed_after_seed(tmp_path: Path, listening, transport):
    out = tmp_path / "run"
    args = ["run", str(ROOT / "configs" / "seed-herd.toml"), "--seeds", str(SEEDS)]
    args += ["--out", str(out), "--quiet", "--no-report"]
    args += ["--set", f"external.address={listening}", "--set", f"external.transport={transport}"]
    assert main(args) == 0
    summary = pd.read_parquet(out / "summary.parquet")
    assert list(summary["seed"]) == list(range(SEEDS))
    assert (summary["placed"] > 0).all() and (summary["violations"] == 0).all()


@pytest.mark.parametrize(("config", "seeds"), [("seed-herd", 2), ("heterogeneous", 1)])
def test_the_skeleton_scheduler_places_every_create_within_the_rules(tmp_path, config, seeds):
    """The guide's 50-line scheduler, run as the guide runs it: named in the tables by its
    Hello, and no answer against a rule (one would stop the run: `on_violation = "error"`),
    on heterogeneous.toml too, whose labels and memory rule it reads from the Hello."""
    out = tmp_path / "run"
    args = ["run", str(ROOT / "configs" / f"{config}.toml"), "--seeds", str(seeds), "--quiet"]
    args += ["--out", str(out), "--no-report"]
    args += ["--set", f"external.command={json.dumps([sys.executable, str(SKELETON)])}"]
    assert main(args) == 0
    summary = pd.read_parquet(out / "summary.parquet")
    assert set(summary["scheduler"]) == {"skeleton"} and (summary["violations"] == 0).all()
    assert (summary["placed"] + summary["failed"] == summary["requests"]).all()
    assert summary["placed"].sum() > 0


@pytest.mark.parametrize("name", ["python", "go"])
def test_an_example_listens_on_ipv6_loopback_when_asked(tmp_path: Path, name: str) -> None:
    """`--host ::1` (Go: `-host ::1`): a scheduler an author starts on IPv6 loopback, reached
    at `external.address = "[::1]:PORT"`."""
    flag = {"python": "--host", "go": "-host"}[name]
    process = subprocess.Popen([*_example(name), flag, "::1"], stdout=subprocess.PIPE, text=True)
    try:
        port = int(process.stdout.readline())
        out = tmp_path / "run"
        args = ["run", str(ROOT / "configs" / "seed-herd.toml"), "--seeds", "1", "--quiet"]
        args += ["--out", str(out), "--no-report", "--set", f"external.address=[::1]:{port}"]
        assert main(args) == 0
    finally:
        process.terminate()
        process.wait(10)
    summary = pd.read_parquet(out / "summary.parquet")
    assert list(summary["scheduler"]) == [f"{name}-best-of-k"] and summary["placed"][0] == 500


def test_a_scheduler_that_serves_many_sessions_is_started_once_per_run(tmp_path: Path) -> None:
    """The Python example says `serves_many` in its Hello: the harness keeps its process from
    seed to seed (one log file, the first seed's), and the tables are the in-process run's."""
    runs = {}
    for name, sets in (
        ("inproc", []),
        ("external", [f"external.command={json.dumps(PYTHON_SCHEDULER)}"]),
    ):
        args = ["run", str(ROOT / "configs" / "seed-herd.toml"), "--seeds", str(SEEDS)]
        args += ["--out", str(tmp_path / name), "--quiet", "--no-report"]
        assert main([*args, *(a for s in sets for a in ("--set", s))]) == 0
        runs[name] = folder_digests(tmp_path / name, drop=NOT_SAID)
    assert runs["inproc"] == runs["external"]
    logs = sorted(p.name for p in (tmp_path / "external" / "scheduler").iterdir())
    assert logs == ["stale-seed0-replica0.log"]


def test_an_ipv6_loopback_address_works_on_both_transports(tmp_path: Path, transport) -> None:
    """`[::1]:PORT`: the Python example listening on IPv6 loopback, one seed."""
    args = [*PYTHON_SCHEDULER, "--host", "::1", *(["--framed"] if transport == "framed" else [])]
    process = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    try:
        port = int(process.stdout.readline())
        run = ["run", str(ROOT / "configs" / "seed-herd.toml"), "--seeds", "1", "--quiet"]
        run += ["--out", str(tmp_path / "run"), "--no-report"]
        run += [
            "--set",
            f"external.address=[::1]:{port}",
            "--set",
            f"external.transport={transport}",
        ]
        assert main(run) == 0
    finally:
        process.terminate()
        process.wait(10)
