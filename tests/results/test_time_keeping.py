"""A run in real time knows when it could not keep the model's time
(`harness.results.time_keeping`): each figure the engine measured against the scenario's own
time scale, the verdict naming the figure that broke and the time scale that would fit, the run's
verdict in run.json, the headline, the last line and a threshold."""

from __future__ import annotations

import contextlib
import io
import json
import math

import pandas as pd
import pyarrow as pa
import pytest

from harness.cli import main
from harness.config import load
from harness.results import thresholds
from harness.results.arrow_schemas import REQUESTS
from harness.results.seed_rows import SeedRows
from harness.results.time_keeping import (
    CHOICE_GAPS,
    DRIVER_CPU,
    FAITHFUL,
    INTERVAL_SHARE,
    OVERLOADED,
    REPORT_GAPS,
    RPC_GAPS,
    Figure,
    fitting_scale,
    kept_by_strategy,
    line,
    mark,
    run_verdict,
    seed_verdict,
)
from tests.support.configs import CONFIGS

HERD = load(CONFIGS / "seed-herd.toml", ["run.engine=ray", "run.time_scale=0.2"])
"""20 creates a second for 25 s (a gap of 50 ms), reports every 20 s, 1 ms create RPCs,
`stale`: only reports move its view."""
OPTIMISTIC = HERD.with_values({"placement.strategy": "optimistic"})
"""The same, `optimistic`: it counts creates in progress and adds each on its answer."""
GAP_MS = 50.0
INTERVAL_MS = 20_000.0


def _requests(delay_s: float, creates: int = 500, gap_s: float = 0.05) -> SeedRows:
    """Creates issued every `gap_s`, each sent `delay_s` later."""
    issued = [i * gap_s for i in range(creates)]
    columns = {name: [None] * creates for name in REQUESTS.names}
    columns |= {
        "kind": ["create"] * creates,
        "issued_at": issued,
        "sent_at": [t + delay_s for t in issued],
        "done_at": [t + delay_s + 0.001 for t in issued],
        "rpcs": [1] * creates,
    }
    rows = SeedRows("stale", 0)
    rows.add("requests", pa.table({name: columns[name] for name in REQUESTS.names}, REQUESTS))
    return rows


def _summary(**figures: float) -> dict[str, float]:
    """What the seed's summary holds when its verdict is made: its figures, and its 500
    creates (`_requests`)."""
    quiet = {
        "heartbeat_late_p99_ms": 2.0,
        "report_late_p99_ms": 3.0,
        "submit_late_p99_ms": 4.0,
        "create_rpc_p99_ms": 20.0,
        "driver_cpu": 0.05,
    }
    return {"time_scale": 0.2, "host_load": 0.5, "requests": 500, **quiet, **figures}


def test_a_quiet_seed_is_faithful():
    for config in (HERD, OPTIMISTIC):
        verdict = seed_verdict(config, _summary(), _requests(0.005))
        assert verdict["time_keeping"] == FAITHFUL
        assert verdict["overload_figure"] is None and math.isnan(verdict["fitting_time_scale"])
        assert verdict["send_delay_p99_ms"] == pytest.approx(5.0)


@pytest.mark.parametrize(
    ("config", "figure", "summary", "delay_s", "limit"),
    [
        (HERD, "report_lateness_ms", {"report_late_p99_ms": 150.0}, 0.005, REPORT_GAPS * GAP_MS),
        (HERD, "report_lateness_ms", {"heartbeat_late_p99_ms": 150.0}, 0.005, REPORT_GAPS * GAP_MS),
        (HERD, "choice_lateness_ms", {}, 0.3, CHOICE_GAPS * GAP_MS),
        (HERD, "choice_lateness_ms", {"submit_late_p99_ms": 300.0}, 0.005, CHOICE_GAPS * GAP_MS),
        (HERD, "rpc_excess_ms", {"create_rpc_p99_ms": 6000.0}, 0.005, INTERVAL_SHARE * INTERVAL_MS),
        (OPTIMISTIC, "rpc_excess_ms", {"create_rpc_p99_ms": 150.0}, 0.005, RPC_GAPS * GAP_MS),
        (HERD, "driver_cpu", {"driver_cpu": 1.8}, 0.005, DRIVER_CPU),
    ],
)
def test_each_figure_beyond_its_limit_makes_the_seed_overloaded_and_names_it(
    config, figure, summary, delay_s, limit
):
    verdict = seed_verdict(config, _summary(**summary), _requests(delay_s))
    assert verdict["time_keeping"] == OVERLOADED
    assert verdict["overload_figure"] == figure
    assert verdict["overload_limit"] == pytest.approx(limit)
    ratio = verdict["overload_value"] / verdict["overload_limit"]
    # The time scale that fits brings the figure under its limit, delays fixed in wall time.
    assert 0.2 * ratio * (1 - 1e-9) <= verdict["fitting_time_scale"] <= 0.2 * ratio * 1.1


def test_a_create_rpc_answered_late_competes_with_the_gap_where_answers_count():
    """The issue's seed-herd seed beside a hog: create RPC p99 1,043 ms, 21 gaps between creates.
    `optimistic` counts the creates in flight and adds each on its answer, so one answered
    after the 20 s report was applied is counted twice until the end: its results depend on
    answers within a gap, and the seed is overloaded. `stale` ignores answers (only reports
    move its view): the same RPC is judged against the report interval, and keeps time."""
    figures = _summary(create_rpc_p99_ms=1043.0)
    optimistic = seed_verdict(OPTIMISTIC, figures, _requests(0.005))
    assert optimistic["time_keeping"] == OVERLOADED
    assert optimistic["overload_figure"] == "rpc_excess_ms"
    assert optimistic["overload_limit"] == pytest.approx(RPC_GAPS * GAP_MS)
    assert seed_verdict(HERD, figures, _requests(0.005))["time_keeping"] == FAITHFUL


def test_a_report_delivered_late_makes_the_seed_overloaded_though_its_heartbeat_was_on_time():
    """The faults-crash seed that left its conformance band (CV 0.483 against [0.287, 0.432])
    while called faithful: heartbeat lateness p99 38 ms, create RPC p99 498 ms, send delay p99
    148 ms, all within the old limits, but placements 2.4 s late at the median, the scheduler
    replica's loop seconds behind, and with it the reports reaching it. A report applied late
    by 1-2 s moves the CV that far on the virtual engine (docs/performance.md, "Time keeping"):
    the delivery's lateness is measured at the replica and judged with the heartbeat's."""
    crash = load(CONFIGS / "faults-crash.toml", ["run.engine=ray", "run.time_scale=0.1"])
    figures = _summary(
        heartbeat_late_p99_ms=38.0, create_rpc_p99_ms=498.0, report_late_p99_ms=2000.0, requests=600
    )
    verdict = seed_verdict(crash, figures, _requests(0.010, creates=600))
    assert verdict["time_keeping"] == OVERLOADED
    assert verdict["overload_figure"] == "report_lateness_ms"
    assert verdict["overload_value"] == pytest.approx(2038.0)
    assert verdict["overload_limit"] == pytest.approx(REPORT_GAPS * GAP_MS)  # 30 s / 600


def test_the_gap_is_between_the_creates_of_one_replica():
    """Two replicas share the creates: each chooses every other one, so its gap is twice the
    run's."""
    two = OPTIMISTIC.with_values({"placement.replicas": 2})
    verdict = seed_verdict(two, _summary(create_rpc_p99_ms=250.0), _requests(0.005))
    assert verdict["overload_limit"] == pytest.approx(RPC_GAPS * 2 * GAP_MS)


def test_where_creates_are_sparse_a_share_of_the_report_interval_bounds_every_lateness():
    """4 creates in 25 s: a gap of 6.25 s, but a report 2 gaps late would be staler than
    modelled by more than half the interval; the interval's share is the limit, 5 s."""
    sparse = _summary(report_late_p99_ms=6000.0, requests=4)
    verdict = seed_verdict(HERD, sparse, _requests(0.005, creates=4, gap_s=6.25))
    assert verdict["overload_figure"] == "report_lateness_ms"
    assert verdict["overload_limit"] == pytest.approx(INTERVAL_SHARE * INTERVAL_MS)


def test_a_burst_has_no_gap_to_miss_only_its_report_interval():
    """500 creates at one instant, chosen before any answer and with no report until the
    20 s beat (the run lasts 5 s): no delay moves a create across another's answer or a
    report, whatever the mean gap of 10 ms says. Only a share of the interval bounds them."""
    burst = load(CONFIGS / "seed-burst.toml", ["run.engine=ray", "run.time_scale=0.1"])
    burst_optimistic = burst.with_values({"placement.strategy": "optimistic"})
    late = _summary(submit_late_p99_ms=200.0, create_rpc_p99_ms=51.0)
    for config in (burst, burst_optimistic):
        assert seed_verdict(config, late, _requests(0.03, gap_s=0.0))["time_keeping"] == FAITHFUL
    stalled = seed_verdict(burst, _summary(submit_late_p99_ms=6000.0), _requests(0.0, gap_s=0.0))
    assert (stalled["overload_figure"], stalled["overload_limit"]) == ("choice_lateness_ms", 5000.0)


def test_the_figure_furthest_beyond_its_limit_is_named():
    summary = _summary(heartbeat_late_p99_ms=101.0, create_rpc_p99_ms=601.0)
    verdict = seed_verdict(OPTIMISTIC, summary, _requests(0.005))
    assert verdict["overload_figure"] == "rpc_excess_ms"
    assert verdict["fitting_time_scale"] == pytest.approx(1.2)  # 0.2 x 600 / 100, up


def test_fitting_scale_rounds_up_to_two_significant_digits():
    assert fitting_scale(0.1, []) == 0.1
    assert fitting_scale(0.2, [_figure(3.01)]) == pytest.approx(0.61)
    assert fitting_scale(0.1, [_figure(1.0001)]) == pytest.approx(0.11)


def _figure(ratio: float) -> Figure:
    return Figure("choice_lateness_ms", ratio * 100.0, 100.0)


def _frame(*verdicts: dict) -> pd.DataFrame:
    rows = [
        {"strategy": "stale", "seed": i, "time_scale": 0.2, "host_load": 1.5, "driver_cpu": 0.1} | v
        for i, v in enumerate(verdicts)
    ]
    return pd.DataFrame(rows)


def test_the_run_is_overloaded_if_any_seed_was_and_names_the_worst():
    fine = seed_verdict(HERD, _summary(), _requests(0.005))
    late = seed_verdict(HERD, _summary(heartbeat_late_p99_ms=140.0), _requests(0.005))
    worse = seed_verdict(HERD, _summary(driver_cpu=2.7), _requests(0.005))
    verdict = run_verdict(_frame(fine, late, worse))
    assert verdict["verdict"] == OVERLOADED
    assert verdict["overloaded_seeds"] == [
        {"strategy": "stale", "seed": 1},
        {"strategy": "stale", "seed": 2},
    ]
    assert verdict["figure"] == "driver_cpu"  # 3x its limit, against 1.4x
    assert verdict["fitting_time_scale"] == pytest.approx(0.6)
    said = line(verdict)
    assert said.startswith("time keeping: OVERLOADED in 2 of 3 seeds: driver CPU 270% of a core")
    assert "--set run.time_scale=0.6" in said and "host load 1.5 per core" in said
    assert "\n" not in said
    assert run_verdict(_frame(fine, fine))["verdict"] == FAITHFUL
    assert run_verdict(pd.DataFrame({"seed": [0], "time_keeping": [None]})) is None  # virtual
    assert line(None) == ""


def test_each_strategy_is_marked_with_its_overloaded_seeds():
    fine = seed_verdict(HERD, _summary(), _requests(0.005))
    late = seed_verdict(HERD, _summary(heartbeat_late_p99_ms=140.0), _requests(0.005))
    frame = _frame(fine, late, fine, fine)
    frame["strategy"] = ["stale", "stale", "optimistic", "optimistic"]
    kept = kept_by_strategy(frame)
    assert kept == {"stale": (1, 2), "optimistic": (0, 2)}
    assert [mark(kept[s]) for s in kept] == ["OVERLOADED 1 of 2", FAITHFUL]
    assert kept_by_strategy(pd.DataFrame({"strategy": ["stale"], "seed": [0]})) == {}


def test_a_threshold_fails_an_overloaded_seed():
    fine = seed_verdict(HERD, _summary(), _requests(0.005))
    late = seed_verdict(HERD, _summary(heartbeat_late_p99_ms=7000.0), _requests(0.005))
    gate = thresholds.parse("overloaded == 0")
    (record,) = thresholds.evaluate([gate], _frame(fine, late))
    assert not record["passed"] and record["failed_seeds"] == [1]
    (record,) = thresholds.evaluate([gate], _frame(fine, fine))
    assert record["passed"]


def test_a_virtual_run_keeps_time_by_construction(tmp_path):
    """No verdict on the virtual engine (null columns, none in run.json), and the threshold
    holds."""
    out = tmp_path / "run"
    args = ["run", str(CONFIGS / "seed-burst.toml"), "--seeds", "1", "--out", str(out)]
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        code = main([*args, "--quiet", "--no-report", "--threshold", "overloaded == 0"])
    assert code == 0
    assert json.loads((out / "run.json").read_text())["time_keeping"] is None
    assert "time keeping" not in printed.getvalue()


@pytest.mark.ray
@pytest.mark.shares_machine  # a load beside it only makes the run later: more overloaded
def test_a_ray_run_too_fast_for_the_machine_says_overloaded_and_names_the_figure(tmp_path):
    """seed-herd at 1/500 of real time: 25 model s in 50 ms of wall, where a Ray hop of a few
    ms is seconds of model time. The run says so: every seed overloaded, the figure named, a
    slower time scale that would fit; in run.json, the headline and the last line, and the
    threshold on it fails the run."""
    out = tmp_path / "fast"
    args = ["run", str(CONFIGS / "seed-herd.toml"), "--engine", "ray", "--seeds", "1"]
    args += ["--set", "run.time_scale=0.002", "--set", "run.sample_interval_s=0"]
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        code = main(
            [*args, "--out", str(out), "--quiet", "--no-report", "--threshold", "overloaded == 0"]
        )
    assert code == 99  # the threshold on the verdict failed
    verdict = json.loads((out / "run.json").read_text())["time_keeping"]
    assert verdict["verdict"] == OVERLOADED and verdict["seeds"] == 1
    assert verdict["value"] > verdict["limit"]
    assert verdict["fitting_time_scale"] > 0.002
    summary = pd.read_parquet(out / "summary.parquet").iloc[0]
    assert summary["time_keeping"] == OVERLOADED
    assert summary["overload_figure"] == verdict["figure"]
    text = " ".join(printed.getvalue().split())
    said = line(verdict)
    assert text.count(said) == 2  # in the headline, and the last word
    assert text.rstrip().endswith(said)
