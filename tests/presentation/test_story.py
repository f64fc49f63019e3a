"""The story up front: the headline a run opens with (terminal and report), the line that says
why two strategies are equal, the charts folded because they are the same for every strategy,
and the plugins named."""

from __future__ import annotations

import contextlib
import io
import json
import re
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from harness.cli import main
from harness.results.run_reader import load_run
from harness.results.statistics import by_strategy, flat
from tests.support.configs import CONFIGS

EQUAL = (
    "in_progress equals stale to every digit in all 2 seeds: no create was sent while another "
    "was in flight, so counting creates in progress changes nothing here."
)


@pytest.fixture(scope="module")
def herd(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """seed-herd shortened, its three strategies, with the report: the folder and what the
    terminal printed."""
    out = tmp_path_factory.mktemp("herd") / "run"
    args = ["--seeds", "2", "--set", "run.duration_s=8", "--out", str(out), "--quiet"]
    compare = ["--compare", "stale,in_progress,optimistic"]
    printed = _printed(lambda: main(["run", str(CONFIGS / "seed-herd.toml"), *compare, *args]))
    return out, printed


def _printed(command: Callable[[], int]) -> str:
    """What a `main` call printed to stdout, lines unwrapped (rich wraps at the width)."""
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert command() == 0
    return " ".join(buffer.getvalue().split())


def test_the_terminal_opens_with_the_headline_and_says_why_two_are_equal(herd):
    out, printed = herd
    _, frames = load_run(out)
    rows = by_strategy(frames["summary"]).set_index("strategy")
    stale, optimistic = rows.loc["stale"], rows.loc["optimistic"]
    change = (optimistic["cv_mean"] - stale["cv_mean"]) / stale["cv_mean"]
    cuts = (
        f"optimistic cuts CV from {stale['cv_mean']:.3f} to {optimistic['cv_mean']:.3f} "
        f"({change:+.0%}); busiest node {stale['max_count']:.1f} -> "
        f"{optimistic['max_count']:.1f} sandboxes"
    )
    assert cuts in printed
    assert EQUAL in printed
    # The headline comes before the histograms and the table.
    assert printed.index(cuts) < printed.index("median-CV seed") < printed.index("CV 95%")
    assert "in_progress (= stale): seed" in printed  # its histogram names its twin


def test_the_report_opens_with_the_headline_and_folds_the_flat_charts(herd):
    out, _ = herd
    page = (out / "report.html").read_text()
    story = page.index('<ul class="story">')
    assert story < page.index("<table")  # before the table over seeds
    assert "optimistic cuts CV from" in page[story:]
    assert page.count(EQUAL) == 2  # in the headline, and under the picture naming them equal
    # At 20/s with 1 ms creates every strategy has the same latency and throughput: folded,
    # after the charts that differ; CV and accounting error differ: shown.
    folded = re.findall(r"<details><summary>([^<]*): the same for every strategy", page)
    assert folded == ["Placement latency over time", "Throughput over time"]
    shown = re.findall(r"<h2>([^<]*)</h2>", page)
    assert shown == ["Sandboxes per node", "CV over time", "Accounting error over time"]
    assert page.index("Accounting error over time") < page.index("<details>")


def test_a_strategy_that_fails_more_creates_says_why_where_the_data_does(tmp_path):
    """heterogeneous.toml: optimistic's exact view makes the memory filter refuse nodes that
    stale's stale view still shows with room, so it fails more creates, all no_candidate."""
    args = ["--seeds", "1", "--set", "run.duration_s=30", "--compare", "stale,optimistic"]
    out = ["--out", str(tmp_path / "run"), "--quiet", "--no-report"]
    printed = _printed(lambda: main(["run", str(CONFIGS / "heterogeneous.toml"), *args, *out]))
    assert re.search(
        r"optimistic cuts CV from [0-9.]+ to [0-9.]+ \(-\d+%\); .*failed creates 0 -> \d+ per "
        r"seed\. All the extra failures are no_candidate \(no candidate node was left\): its "
        r"view is closer to the truth \(\|err\| [0-9.]+ -> 0\.00 vCPU per node\), so its "
        r"filters turn away nodes that stale's view, up to \d+ vCPU short, still shows with room",
        printed,
    )


def test_the_run_names_its_placement_pipeline_and_where_each_plugin_is_from(tmp_path):
    out = tmp_path / "run"
    pipeline = "tests.model.scheduling.placement.test_pipeline"  # the plugins' module
    scorers = f'placement.scorers=["reference", "{pipeline}:PreferHighIds=0.5"]'
    own = f"{pipeline}:OwnOptimistic"
    args = ["--seeds", "1", "--set", "run.duration_s=2", "--set", scorers, "--compare"]
    run = ["run", str(CONFIGS / "seed-herd.toml"), *args, f"stale,{own}", "--out", str(out)]
    printed = _printed(lambda: main([*run, "--quiet", "--no-report"]))
    plugins = json.loads((out / "run.json").read_text())["plugins"]
    assert (plugins["algorithm"], plugins["k"], plugins["uniform"]) == ("best_of_k", 3, True)
    assert plugins["parts"][0] == {"kind": "sampler", "name": "best_of_k", "from": "harness"}
    assert {"kind": "strategy", "name": own, "from": own} in plugins["parts"]
    assert (
        f"scorers reference, {pipeline}:PreferHighIds=0.5 (from "
        f"{pipeline}:PreferHighIds); selector lowest; strategy "
        f"{own} (from {own})"
    ) in printed


def _series(values: dict[str, list[float]]) -> pd.DataFrame:
    return pd.concat(
        pd.DataFrame({"strategy": s, "t": range(len(v)), "y": v}) for s, v in values.items()
    )


def test_a_chart_is_flat_only_when_every_strategy_draws_the_same_line():
    assert flat(_series({"a": [1.0, 2.0, 3.0], "b": [1.0, 2.0, 3.0]}), ["y"])
    assert flat(_series({"a": [1.0, 2.0, 3.0], "b": [1.0, 2.0, 3.02]}), ["y"])  # within 1%
    assert not flat(_series({"a": [1.0, 2.0, 3.0], "b": [1.0, 2.0, 3.1]}), ["y"])
    assert not flat(_series({"a": [1.0, 2.0, 3.0], "b": [1.0, 2.0]}), ["y"])  # a point missing
    assert not flat(_series({"a": [1.0, 2.0, 3.0]}), ["y"])  # nothing compared
