"""The Go example scheduler (examples/go-scheduler) on seed-herd: its own random stream, so not
the in-process run draw for draw, but the same herd: over 20 seeds its mean CV per strategy is
the in-process one within the noise of 20 seeds (3 standard errors of the difference)."""

from __future__ import annotations

import json
import math
import shutil
import subprocess

import pandas as pd
import pytest

from harness.cli import main
from harness.external.generate import ROOT
from tests.golden import folder_digests

GO = ROOT / "examples" / "go-scheduler"
MISSING = [
    tool
    for tool in ("go", "protoc", "protoc-gen-go", "protoc-gen-go-grpc")
    if not shutil.which(tool)
]
pytestmark = pytest.mark.skipif(
    bool(MISSING), reason=f"no Go toolchain ({', '.join(MISSING)} missing; .ci/run installs one)"
)
SEEDS = 20


@pytest.fixture(scope="module")
def go_scheduler() -> str:
    subprocess.run([str(GO / "build.sh")], check=True, capture_output=True)
    return str(GO / "bin" / "scheduler")


def _cvs(tmp_path, name: str, sets: list[str]) -> pd.DataFrame:
    args = ["run", str(ROOT / "configs" / "seed-herd.toml"), "--seeds", str(SEEDS)]
    args += ["--compare", "stale,optimistic", "--out", str(tmp_path / name), "--quiet"]
    args += ["--no-report", *[a for s in sets for a in ("--set", s)]]
    assert main(args) == 0
    summary = pd.read_parquet(tmp_path / name / "summary.parquet")
    return summary.groupby("strategy")["cv"].agg(["mean", "std", "count"])


def test_the_go_scheduler_herds_as_the_in_process_one(tmp_path, go_scheduler) -> None:
    inproc = _cvs(tmp_path, "inproc", [])
    go = _cvs(tmp_path, "go", [f"external.command={json.dumps([go_scheduler])}"])
    for strategy in ("stale", "optimistic"):
        a, b = inproc.loc[strategy], go.loc[strategy]
        assert b["count"] == SEEDS
        noise = math.sqrt(a["std"] ** 2 / SEEDS + b["std"] ** 2 / SEEDS)
        assert abs(a["mean"] - b["mean"]) <= 3 * noise, (strategy, a["mean"], b["mean"], noise)
    assert go.loc["stale", "mean"] > 0.4 > 0.05 > go.loc["optimistic", "mean"]


def test_the_framed_transport_gives_the_same_run_as_grpc(tmp_path, go_scheduler) -> None:
    runs = {}
    for transport, args in (("grpc", [go_scheduler]), ("framed", [go_scheduler, "-framed"])):
        out = tmp_path / transport
        sets = [f"external.command={json.dumps(args)}", f"external.transport={transport}"]
        argv = ["run", str(ROOT / "configs" / "seed-herd.toml"), "--seeds", "2", "--quiet"]
        argv += ["--out", str(out), "--no-report", *[a for s in sets for a in ("--set", s)]]
        assert main(argv) == 0
        runs[transport] = folder_digests(out)
    assert runs["grpc"] == runs["framed"]
