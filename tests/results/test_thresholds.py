"""Thresholds: the grammar, evaluation over seeds, the `[thresholds]` table, and the exit codes
of `harness run` (99 when one fails, 2 when one is malformed)."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from harness.cli import THRESHOLD_FAILED, main
from harness.config import ConfigError, from_dict, load
from harness.results.thresholds import ThresholdError, evaluate, parse
from tests.support.configs import CONFIGS

HERD = str(CONFIGS / "seed-herd.toml")


@pytest.mark.parametrize(
    "text,strategy,metric,aggregate,op,bound",
    [
        ("optimistic.cv_median < 0.05", "optimistic", "cv", "median", "<", 0.05),
        ("*.p99_place_ms<50", None, "p99_place_ms", None, "<", 50.0),
        ("failed_frac == 0", None, "failed_frac", None, "==", 0.0),
        ("stale.max_count_p95 >= 1e2", "stale", "max_count", "p95", ">=", 100.0),
        ("err_over_max <= 3", None, "err_over_max", None, "<=", 3.0),  # the column, whole
        ("err_over_max_mean > 0.5", None, "err_over_max", "mean", ">", 0.5),
    ],
)
def test_expressions_parse_into_their_parts(text, strategy, metric, aggregate, op, bound):
    t = parse(text)
    assert (t.strategy, t.metric, t.aggregate, t.op, t.bound) == (
        strategy,
        metric,
        aggregate,
        op,
        bound,
    )
    assert parse(str(t)) == t  # the canonical text reads back the same


@pytest.mark.parametrize(
    "text,message",
    [
        ("optimstic.cv_median < 0.05", "unknown strategy 'optimstic'; did you mean optimistic?"),
        ("cvv < 1", "unknown metric 'cvv'; did you mean cv?"),
        ("cvv_median < 1", "unknown metric 'cvv'"),
        ("cv_average < 1", "unknown aggregate 'average'"),
        ("cv_p100 < 1", "unknown aggregate 'p100'"),
        ("cv_mediam < 1", "unknown aggregate 'mediam'; did you mean cv_median?"),
        ("failed_fraq == 0", "unknown aggregate 'fraq'; did you mean failed_frac?"),
        ("p99_place_msmax < 1", "unknown metric 'p99_place_msmax'; did you mean p99_place_ms_max?"),
        ("cv < abc", "'abc' is not a number"),
        ("cv < inf", "finite"),
        ("cv = 1", "expected [STRATEGY.]METRIC[_AGGREGATE] OP NUMBER"),
        ("cv < 1 and cv > 0", "expected"),
        ("seed < 3", "unknown metric 'seed'"),
        ("strategy == 1", "unknown metric 'strategy'"),
    ],
)
def test_malformed_expressions_say_why(text, message):
    with pytest.raises(ThresholdError) as caught:
        parse(text)
    assert message in str(caught.value)


SUMMARY = pd.DataFrame(
    {
        "strategy": ["stale"] * 3 + ["optimistic"] * 3,
        "seed": [0, 1, 2] * 2,
        "cv": [0.1, 0.2, 0.6, 0.01, 0.02, 0.03],
        "p99_place_ms": [1.0, 2.0, 3.0, 1.0, math.nan, 1.0],  # optimistic seed 1: no value
        "requests": [100] * 6,
        "failed": [0, 0, 5, 0, 0, 0],
    }
)


def _check(text: str) -> list[tuple[str, float | None, bool, list[int]]]:
    """(strategy, value, passed, failed seeds) of each check of one threshold on SUMMARY."""
    return [
        (r["strategy"], r["value"], r["passed"], r["failed_seeds"])
        for r in evaluate([parse(text)], SUMMARY)
    ]


def test_without_an_aggregate_every_seed_must_pass_and_the_worst_is_shown():
    assert _check("cv < 0.5") == [("stale", 0.6, False, [2]), ("optimistic", 0.03, True, [])]
    assert _check("cv > 0.015") == [("stale", 0.1, True, []), ("optimistic", 0.01, False, [0])]
    assert _check("failed_frac == 0") == [
        ("stale", 0.05, False, [2]),
        ("optimistic", 0.0, True, []),
    ]


def test_aggregates_over_seeds():
    assert _check("stale.cv_mean < 0.31") == [("stale", pytest.approx(0.3), True, [])]
    assert _check("stale.cv_median <= 0.2") == [("stale", 0.2, True, [])]
    assert _check("stale.cv_max < 0.6") == [("stale", 0.6, False, [])]
    assert _check("stale.cv_min > 0.1") == [("stale", 0.1, False, [])]
    assert _check("stale.cv_p50 == 0.2") == [("stale", 0.2, True, [])]
    assert _check("optimistic.cv_p95 < 0.03") == [("optimistic", pytest.approx(0.029), True, [])]


def test_a_seed_without_a_value_fails_the_threshold():
    assert _check("optimistic.p99_place_ms < 10") == [("optimistic", None, False, [1])]
    assert _check("optimistic.p99_place_ms_mean < 10") == [("optimistic", None, False, [1])]


def test_a_threshold_on_a_strategy_not_in_the_frame_is_not_checked():
    assert evaluate([parse("reconcile.cv < 1")], SUMMARY) == []


# -- in a config ------------------------------------------------------------------------------


def test_a_thresholds_table_in_a_config(tmp_path):
    path = tmp_path / "gate.toml"
    path.write_text(
        '[thresholds]\n"optimistic.cv_median" = "< 0.05"\nfailed_frac = ["== 0", "<= 0"]\n'
        'stale.cv = "> 0.1"\n'  # a bare dotted key is a nested table in TOML: read as one
    )
    config = load(path, thresholds=["*.p99_place_ms < 50"])
    assert [str(t) for t in config.thresholds] == [
        "optimistic.cv_median < 0.05",
        "*.failed_frac == 0",
        "*.failed_frac <= 0",
        "stale.cv > 0.1",
        "*.p99_place_ms < 50",
    ]
    assert from_dict(config.to_dict()).thresholds == config.thresholds
    assert config.with_value("placement.k", 2).thresholds == config.thresholds


@pytest.mark.parametrize(
    "table,key,reason",
    [
        ({"optimistic.cvv": "< 1"}, "thresholds.optimistic.cvv", "unknown metric 'cvv'"),
        ({"bogus.cv": "< 1"}, "thresholds.bogus.cv", "unknown strategy 'bogus'"),
        ({"cv": "1"}, "thresholds.cv", "expected"),
        ({"cv": 1}, "thresholds.cv", "must be a condition"),
        ({"cv": []}, "thresholds.cv", "must be a condition"),
    ],
)
def test_a_bad_thresholds_table_names_the_key(table, key, reason):
    with pytest.raises(ConfigError) as caught:
        from_dict({"thresholds": table})
    assert caught.value.key == key and reason in caught.value.reason


# -- the CLI ----------------------------------------------------------------------------------


def _run(tmp_path, *extra: str) -> int:
    out = tmp_path / "out"
    common = ["--seeds", "2", "--set", "run.duration_s=5", "--out", str(out), "--quiet"]
    return main(["run", HERD, "--compare", "stale,optimistic", *common, "--no-report", *extra])


def test_a_passing_threshold_exits_0_and_is_written_to_run_json(tmp_path, capsys):
    assert _run(tmp_path, "--threshold", "optimistic.cv_median < 0.5") == 0
    printed = capsys.readouterr().out
    assert "thresholds: 1 of 1 passed" in printed
    (record,) = json.loads((tmp_path / "out" / "run.json").read_text())["thresholds"]
    assert record["threshold"] == "optimistic.cv_median < 0.5" and record["passed"] is True


def test_a_failing_threshold_exits_99(tmp_path, capsys):
    code = _run(tmp_path, "--threshold", "*.cv < 0.5", "--threshold", "failed_frac == 0")
    assert code == THRESHOLD_FAILED == 99
    captured = capsys.readouterr()
    assert "thresholds: 3 of 4 passed" in captured.out
    assert captured.err == "harness: 1 of 4 threshold checks failed\n"
    records = json.loads((tmp_path / "out" / "run.json").read_text())["thresholds"]
    assert [(r["strategy"], r["passed"]) for r in records] == [
        ("stale", False),
        ("optimistic", True),
        ("stale", True),
        ("optimistic", True),
    ]
    assert records[0]["failed_seeds"] == [0, 1]


@pytest.mark.parametrize(
    "argv,message",
    [
        (["{herd}", "--threshold", "cv_avg < 1"], "--threshold: unknown aggregate 'avg'"),
        (["{herd}", "--threshold", "cv"], "--threshold: expected [STRATEGY.]METRIC"),
        (
            ["{herd}", "--compare", "stale,optimistic", "--threshold", "reconcile.cv < 1"],
            "--threshold: reconcile.cv < 1 names reconcile, which does not run (stale, optimistic)",
        ),
        (["{herd}", "--set", "thresholds.cv=1"], "thresholds.cv: thresholds are set in"),
        (["{gate}"], "thresholds.optimistic.cv_mediam: unknown aggregate 'mediam'"),
    ],
)
def test_threshold_mistakes_give_one_line_and_exit_2(tmp_path, capsys, argv, message):
    gate = tmp_path / "gate.toml"
    gate.write_text('[thresholds]\n"optimistic.cv_mediam" = "< 1"\n')
    out = tmp_path / "out"
    argv = [a.format(herd=HERD, gate=gate) for a in argv]
    assert main(["run", *argv, "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"harness: error: {message}") and err.count("\n") == 1
    assert not out.exists()


def test_a_threshold_can_name_a_strategy_plugin_by_import_path() -> None:
    threshold = parse("tests.model.scheduling.placement.test_pipeline:OwnOptimistic.cv_mean < 0.1")
    assert threshold.strategy == "tests.model.scheduling.placement.test_pipeline:OwnOptimistic"
    assert (threshold.metric, threshold.aggregate) == ("cv", "mean")
