"""An external scheduler's answers are checked against the create (`harness.model.scheduling.
placement.eligibility`): a node without the labels, CPU family or memory room the create needs,
or one it already failed on, is a violation, counted per rule or (the default) an error naming
the create, the node and the rule; the in-process pipeline never violates (the
`placements_keep_rules` invariant, on every shipped config)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
import pytest

from harness.cli import THRESHOLD_FAILED, VIOLATIONS_COUNTED, main
from harness.config import load
from harness.engines.virtual import VirtualEngine
from harness.external import EXIT_CODE
from harness.external.generate import ROOT
from harness.running.runner import run
from tests.support.configs import SCENARIOS, runnable, shipped
from tests.support.tiers import heavy

NODE_0 = [sys.executable, str(ROOT / "tests" / "support" / "external_fault_scheduler.py"), "node-0"]

TWO_NODES = """
[run]
duration_s = 20.0
seeds = 1

[[cluster.pools]]
count = 1
cpu_count = 8
cpu_family = "zen3"

[[cluster.pools]]
count = 1
cpu_count = 8
labels = ["ssd"]
cpu_family = "zen4"

[placement]
k = 2

[workload]
arrival = "constant"
rate_per_s = 1.0

[[workload.templates]]
vcpu = 1.0
labels = ["ssd"]
cpu_family = "zen4"
lifetime_s = 5.0
"""
"""Node 0 (zen3, no labels) and node 1 (zen4, ssd); 20 creates that need ssd on zen4."""


def _two_nodes(tmp_path: Path, *sets: str, extra: tuple[str, ...] = ()) -> int:
    config = tmp_path / "two-nodes.toml"
    config.write_text(TWO_NODES)
    args = ["run", str(config), "--out", str(tmp_path / "run"), "--no-report", "--quiet"]
    return main([*args, *extra, *(a for s in sets for a in ("--set", s))])


def test_in_process_every_create_goes_to_the_node_that_keeps_its_rules(tmp_path) -> None:
    assert _two_nodes(tmp_path) == 0
    requests = pd.read_parquet(tmp_path / "run" / "requests.parquet")
    creates = requests[requests["kind"] == "create"]
    assert len(creates) == 20 and set(creates["node_id"]) == {1}
    assert creates["violated"].isna().all()
    summary = pd.read_parquet(tmp_path / "run" / "summary.parquet").iloc[0]
    assert summary["violations"] == 0 and bool(summary["invariants_ok"])


def test_a_scheduler_that_breaks_the_rules_is_counted_per_rule(tmp_path) -> None:
    sets = [f"external.command={json.dumps(NODE_0)}", "external.on_violation=count"]
    assert _two_nodes(tmp_path, *sets, extra=("--accept-violations",)) == 0
    requests = pd.read_parquet(tmp_path / "run" / "requests.parquet")
    creates = requests[requests["kind"] == "create"]
    assert len(creates) == 20 and set(creates["node_id"]) == {0}
    assert set(creates["violated"]) == {"labels+cpu_family"}
    summary = pd.read_parquet(tmp_path / "run" / "summary.parquet").iloc[0]
    assert summary["violations"] == 20
    assert summary["violations_labels"] == summary["violations_cpu_family"] == 20
    assert summary["violations_memory"] == summary["violations_excluded"] == 0
    assert bool(summary["invariants_ok"])  # the scheduler's mistakes, not the harness's


def test_a_threshold_on_violations_fails_the_run(tmp_path, capsys) -> None:
    sets = [f"external.command={json.dumps(NODE_0)}", "external.on_violation=count"]
    assert _two_nodes(tmp_path, *sets, extra=("--threshold", "violations == 0")) == THRESHOLD_FAILED
    memory = ("--threshold", "violations_memory == 0", "--overwrite", "--accept-violations")
    assert _two_nodes(tmp_path, *sets, extra=memory) == 0


def test_a_scheduler_is_named_and_its_counted_violations_fail_the_run(tmp_path, capsys) -> None:
    """The scheduler's own name (its Hello's) heads the story and has a column in the table and
    the report, beside its violations; counted violations exit VIOLATIONS_COUNTED with a line
    on stderr, unless --accept-violations."""
    sets = [f"external.command={json.dumps(NODE_0)}", "external.on_violation=count"]
    config = tmp_path / "two-nodes.toml"
    config.write_text(TWO_NODES)
    args = ["run", str(config), "--out", str(tmp_path / "run"), "--quiet"]
    args += [a for s in sets for a in ("--set", s)]
    assert main(args) == VIOLATIONS_COUNTED
    out, err = capsys.readouterr()
    out = " ".join(out.split())  # the lines as the terminal wrapped them, joined
    assert "Placed by the external scheduler 'faulty-node-0' (the name its Hello gave)" in out
    header = next(line for line in out.split("┃ strategy ┃")[1:2])
    assert header.split("┃")[:2] == [" scheduler ", " violations "]
    assert "│ stale │ faulty-node-0 │ 20 │" in out
    assert err == (
        "harness: the external scheduler faulty-node-0 placed 20 creates against an "
        "eligibility rule (the summary's violations, by rule violations_*); "
        "--accept-violations accepts them\n"
    )
    report = (tmp_path / "run" / "report.html").read_text()
    assert "<th>scheduler</th>" in report and "<td>faulty-node-0</td>" in report
    assert "<th>violations</th>" in report
    assert "Placed by the external scheduler &#x27;faulty-node-0&#x27;" in report
    # The report of this second run is not read: only its exit code and its line are.
    assert main([*args, "--overwrite", "--accept-violations", "--no-report"]) == 0
    assert "; accepted (--accept-violations)" in capsys.readouterr().err


BIG_MEMORY = """
[run]
duration_s = 10.0
seeds = 1

[[cluster.pools]]
count = 2
cpu_count = 64
memory_mib = 1048576

[placement]
strategy = "optimistic"
k = 2

[placement.memory_overcommit]
ratio = 1.0

[workload]
arrival = "constant"
rate_per_s = 1.0
vcpu = 1.0
memory_mib = 600000
lifetime_s = 60.0
"""
"""Two nodes of 1 TiB; creates of 600,000 MiB, so a node holds one: a scheduler that sends all
to node 0 breaks the memory rule with its second."""


def test_memory_in_a_violation_reads_as_a_person_writes_it(tmp_path, capsys) -> None:
    config = tmp_path / "big-memory.toml"
    config.write_text(BIG_MEMORY)
    args = ["run", str(config), "--out", str(tmp_path / "run"), "--no-report", "--quiet"]
    assert main([*args, "--set", f"external.command={json.dumps(NODE_0)}"]) == EXIT_CODE
    err = capsys.readouterr().err
    assert (
        "placed sandbox 1 on node 0, which breaks its memory rule (needs 600,000 MiB; node 0 "
        "has 600,000 of 1 x 1,048,576 MiB allocated, as the replica sees it" in err
    ), err


def test_by_default_a_violation_is_one_line_naming_the_create_node_and_rule(
    tmp_path, capsys
) -> None:
    assert _two_nodes(tmp_path, f"external.command={json.dumps(NODE_0)}") == EXIT_CODE
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith(
        "harness: error: external scheduler 'faulty-node-0': placed sandbox 0 on "
        "node 0, which breaks its labels and cpu_family rule"
    ), err
    assert "needs labels ssd; node 0 has none" in err
    assert "needs CPU family 'zen4'; node 0 is 'zen3'" in err


@pytest.mark.parametrize("path", runnable(SCENARIOS, lambda p: heavy(p.stem)))
def test_the_in_process_pipeline_keeps_the_rules_on_every_shipped_config(tmp_path, path) -> None:
    """One seed of each, shortened where long: `placements_keep_rules` holds, no violation."""
    config = shipped(path, ["run.seeds=1", "run.engine=virtual"])
    run(config, [config.placement.strategy], tmp_path / "run")
    summary = pd.read_parquet(tmp_path / "run" / "summary.parquet")
    assert (summary["violations"] == 0).all()
    checks = json.loads((tmp_path / "run" / "run.json").read_text())
    assert "placements_keep_rules" in json.dumps(checks)


FULL_NODE = """
[run]
duration_s = 5.0
seeds = 1

[cluster]
create_latency_ms = 10.0

[[cluster.pools]]
count = 1
cpu_count = 4
initial_cpu_allocated = [4, 4]

[[cluster.pools]]
count = 1
cpu_count = 4

[placement]
k = 2
r = 1.0
deadline_s = 1.0

[workload]
arrival = "constant"
rate_per_s = 1.0

[[workload.templates]]
vcpu = 1.0
lifetime_s = 2.0
"""
"""Node 0 full from the start, node 1 empty; 5 creates, each with a 1 s deadline and create
RPCs of 10 ms: a scheduler that answers node 0 has each refused about 100 times."""


def _full_node(tmp_path: Path, *sets: str) -> pd.Series:
    config = tmp_path / "full-node.toml"
    config.write_text(FULL_NODE)
    args = ["run", str(config), "--out", str(tmp_path / "run"), "--no-report", "--quiet"]
    sets = (f"external.command={json.dumps(NODE_0)}", *sets)
    assert main([*args, *(a for s in sets for a in ("--set", s))]) == 0
    return pd.read_parquet(tmp_path / "run" / "summary.parquet").iloc[0]


def test_a_scheduler_answering_a_full_node_ends_at_the_deadline_with_the_storm_shown(
    tmp_path,
) -> None:
    """As upstream, a refusal neither excludes the node nor counts an attempt: every create is
    asked about again (told of each refusal first: the scheduler checks) until its deadline,
    and the summary shows how often."""
    summary = _full_node(tmp_path)
    assert summary["requests"] == summary["failed_deadline"] == 5
    assert summary["violations"] == 0  # a full node breaks no eligibility rule: it refuses
    # 1 s of 10 ms round trips: about 100 asks per create.
    assert 90 <= summary["asks_mean"] <= 102 and 90 <= summary["asks_max"] <= 102
    requests = pd.read_parquet(tmp_path / "run" / "requests.parquet")
    creates = requests[requests["kind"] == "create"]
    assert (creates["asks"] == creates["skips"]).all()  # every ask refused, none left to ask


def test_max_asks_ends_a_storm_early(tmp_path) -> None:
    summary = _full_node(tmp_path, "placement.max_asks=5")
    assert summary["requests"] == summary["failed_asks_exhausted"] == 5
    assert summary["asks_max"] == 5 and summary["asks_mean"] == 5.0


def test_the_progress_line_hears_of_creates_stuck_in_refusals(tmp_path) -> None:
    """With a 30 s deadline each create is refused thousands of times: the engine's progress
    calls count the creates in flight refused `REFUSED_AGAIN` times or more."""
    config_path = tmp_path / "full-node.toml"
    config_path.write_text(FULL_NODE)
    sets = [f"external.command={json.dumps([*NODE_0, 'framed'])}", "external.transport=framed"]
    config = load(config_path, [*sets, "placement.deadline_s=30", "run.duration_s=3"])
    seen: list[int] = []
    engine = VirtualEngine()
    try:
        engine.run_seed(config, 0, lambda t, snapshot=None, refused=0: seen.append(refused))
    finally:
        engine.close()
    assert seen and max(seen) >= 1, seen
