"""The Go example scheduler (examples/go-scheduler) on seed-herd: its own random stream, so not
the in-process run draw for draw, but the same herd: over 20 seeds its mean CV per strategy is
the in-process one within the noise of 20 seeds (3 standard errors of the difference)."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from harness.cli import main
from harness.external.generate import ROOT
from tests.support.golden import folder_digests
from tests.support.schedulers import GO_MISSING, go_scheduler

pytestmark = pytest.mark.skipif(
    bool(GO_MISSING),
    reason=f"no Go toolchain ({', '.join(GO_MISSING)} missing; .ci/run installs one)",
)
SEEDS = 20


@pytest.fixture(scope="module")
def go_command() -> str:
    return go_scheduler()[0]


def _cvs(tmp_path, name: str, sets: list[str]) -> pd.DataFrame:
    args = ["run", str(ROOT / "configs" / "seed-herd.toml"), "--seeds", str(SEEDS)]
    args += ["--compare", "stale,optimistic", "--out", str(tmp_path / name), "--quiet"]
    args += ["--no-report", *[a for s in sets for a in ("--set", s)]]
    assert main(args) == 0
    summary = pd.read_parquet(tmp_path / name / "summary.parquet")
    return summary.groupby("strategy")["cv"].agg(["mean", "std", "count"])


@pytest.mark.slow  # 20 seeds of each strategy through a process, twice
def test_the_go_scheduler_herds_as_the_in_process_one(tmp_path, go_command) -> None:
    inproc = _cvs(tmp_path, "inproc", [])
    go = _cvs(tmp_path, "go", [f"external.command={json.dumps([go_command])}"])
    for strategy in ("stale", "optimistic"):
        a, b = inproc.loc[strategy], go.loc[strategy]
        assert b["count"] == SEEDS
        noise = math.sqrt(a["std"] ** 2 / SEEDS + b["std"] ** 2 / SEEDS)
        assert abs(a["mean"] - b["mean"]) <= 3 * noise, (strategy, a["mean"], b["mean"], noise)
    assert go.loc["stale", "mean"] > 0.4 > 0.05 > go.loc["optimistic", "mean"]


def test_the_framed_transport_gives_the_same_run_as_grpc(tmp_path, go_command) -> None:
    runs = {}
    for transport, args in (("grpc", [go_command]), ("framed", [go_command, "-framed"])):
        out = tmp_path / transport
        sets = [f"external.command={json.dumps(args)}", f"external.transport={transport}"]
        argv = ["run", str(ROOT / "configs" / "seed-herd.toml"), "--seeds", "2", "--quiet"]
        argv += ["--out", str(out), "--no-report", *[a for s in sets for a in ("--set", s)]]
        assert main(argv) == 0
        runs[transport] = folder_digests(out)
    assert runs["grpc"] == runs["framed"]


def test_the_go_scheduler_keeps_the_memory_rule_it_reads_from_the_hello(tmp_path, go_command):
    """heterogeneous.toml turns the memory rule on: the Hello's `memory_overcommit` option is
    the JSON object `{"ratio": 1.0}`, which the scheduler decodes and keeps (a violation would
    stop the run: `external.on_violation` is `error`)."""
    out = tmp_path / "run"
    argv = ["run", str(ROOT / "configs" / "heterogeneous.toml"), "--seeds", "1", "--quiet"]
    argv += [
        "--out",
        str(out),
        "--no-report",
        "--set",
        f"external.command={json.dumps([go_command])}",
    ]
    assert main(argv) == 0
    summary = pd.read_parquet(out / "summary.parquet")
    assert summary["violations"].sum() == 0 and summary["placed"].sum() > 0
