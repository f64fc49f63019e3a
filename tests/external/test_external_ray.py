"""An external scheduler on the Ray engine: each scheduler replica actor starts and talks to a
process of its own, and stops it when the seed ends. Real time, so not the virtual run draw for
draw; the herd (stale) and its cure (optimistic) are there all the same."""

from __future__ import annotations

import json
import sys

import pandas as pd
import pytest

from harness.cli import main
from harness.external.generate import ROOT
from tests.support.schedulers import GO_MISSING, PYTHON_SCHEDULER, go_scheduler

pytestmark = pytest.mark.usefixtures("local_ray")


def before_the_machine(item: pytest.Item) -> None:
    """Called by tests/conftest.py before a test of this module waits for the machine: the Go
    example is built (on a clean clone, a compile of its own) or found built."""
    callspec = getattr(item, "callspec", None)
    if callspec is not None and callspec.params.get("which") == "go" and not GO_MISSING:
        go_scheduler()


@pytest.mark.parametrize(
    "which",
    [
        "python",
        pytest.param(
            "go",
            marks=pytest.mark.skipif(
                bool(GO_MISSING), reason=f"no Go toolchain ({', '.join(GO_MISSING)} missing)"
            ),
        ),
    ],
)
def test_the_example_schedulers_herd_on_ray_with_a_process_per_replica(tmp_path, which) -> None:
    scheduler = PYTHON_SCHEDULER if which == "python" else go_scheduler()
    sets = [
        f"external.command={json.dumps(scheduler)}",
        "run.time_scale=0.1",
        "placement.replicas=2",
    ]
    # One seed. Optimistic runs above one replica's CV (docs/performance.md, "Conformance
    # bands") because each of the two replicas counts only its own creates.
    args = ["run", str(ROOT / "configs" / "seed-herd.toml"), "--engine", "ray", "--seeds", "1"]
    args += ["--compare", "stale,optimistic", "--out", str(tmp_path / "run"), "--quiet"]
    args += ["--no-report", *[a for s in sets for a in ("--set", s)]]
    assert main(args) == 0
    summary = pd.read_parquet(tmp_path / "run" / "summary.parquet")
    assert (summary["placed"] == summary["requests"]).all()
    cv = summary.set_index("strategy")["cv"]
    assert cv["stale"] > 0.3 and cv["optimistic"] < 0.15, cv
    requests = pd.read_parquet(tmp_path / "run" / "requests.parquet")
    assert set(requests["replica"]) == {0, 1}
    assert set(summary["scheduler"]) == {f"{which}-best-of-k"}  # as its Hello named it


@pytest.mark.shares_machine  # the error line, not the pace
def test_a_scheduler_that_dies_on_ray_is_named_with_its_replica(tmp_path, capsys) -> None:
    """The error line names the scheduler replica and what its scheduler did, not the actor
    whose call happened to surface it first (a client pool)."""
    faulty = [
        sys.executable,
        str(ROOT / "tests" / "support" / "external_fault_scheduler.py"),
        "die",
    ]
    # Seed 0 places as the example does, in brief: seed 1 dies at its third Place.
    sets = [f"external.command={json.dumps(faulty)}", "run.time_scale=0.2", "run.duration_s=5"]
    args = ["run", str(ROOT / "configs" / "seed-herd.toml"), "--engine", "ray", "--seeds", "2"]
    args += ["--out", str(tmp_path / "run"), "--quiet", "--no-report"]
    assert main([*args, *(a for s in sets for a in ("--set", s))]) != 0
    err = capsys.readouterr().err
    assert "scheduler replica 0 failed (external scheduler 'faulty-die': exited with code 7" in err
