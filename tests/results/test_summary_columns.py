"""The summary's columns are declared once (`harness.results.summary_columns`): the Arrow schema,
the reference and what each part of the summary computes all agree with that declaration, so a
column added in one place only fails here."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from ddsketch import DDSketch

from harness.engines.virtual import VirtualEngine
from harness.model.cluster.faults import COUNTS
from harness.results.arrow_schemas import SUMMARY, WIDTHS, summary_table
from harness.results.column_docs import COLUMNS, COMMON
from harness.results.invariants import check
from harness.results.seed_figures import seed_summary
from harness.results.seed_result import _sketched
from harness.results.summary_columns import (
    KINDS,
    SKETCHED,
    SUMMARY_COLUMNS,
    Column,
    Direction,
    Source,
    names,
)
from tests.support.configs import scenario

ROOT = Path(__file__).parents[2]


def test_every_column_is_declared_once_with_a_direction_kind_and_source():
    declared = [c.name for c in SUMMARY_COLUMNS]
    assert len(declared) == len(set(declared)), "a summary column declared twice"
    for c in SUMMARY_COLUMNS:
        assert isinstance(c, Column)
        assert isinstance(c.direction, Direction), c.name
        assert isinstance(c.source, Source), c.name
        assert c.kind in KINDS, c.name
        assert c.width in WIDTHS, c.name
        assert c.unit and c.meaning, c.name
        if c.direction is Direction.IDENTITY:  # labels and config echoes are not compared
            assert not c.kind.compared, c.name


def test_the_arrow_schema_is_the_declaration():
    assert SUMMARY.names == [c.name for c in SUMMARY_COLUMNS]
    for c in SUMMARY_COLUMNS:
        assert SUMMARY.field(c.name).type == WIDTHS[c.width], c.name


def test_the_reference_documents_each_column_as_declared():
    documented = {**COMMON, **COLUMNS["summary"]}
    assert set(documented) - {"run_id"} == {c.name for c in SUMMARY_COLUMNS}
    for c in SUMMARY_COLUMNS:
        assert documented[c.name] == (c.unit, c.meaning), c.name


def test_the_fault_columns_are_the_fault_kinds_counters():
    assert names(Source.FAULTS) == COUNTS


def test_a_virtual_seed_computes_exactly_the_columns_its_parts_declare():
    """Each part computes the columns that name it as their source, no more and no fewer."""
    config = scenario(cluster={"nodes": 4}, run={"duration_s": 1.0, "seeds": 1})
    result = VirtualEngine().run_seed(config, 0)
    seed_parts = seed_summary(result.nodes, result.rows, 1.0, config.heartbeat.interval_s)
    assert set(seed_parts) == set(names(Source.SEED))
    before = set(result.summary)
    check(config, result)
    assert set(result.summary) - before == set(names(Source.INVARIANTS))
    virtual = (Source.RUN, Source.SEED, Source.ENGINE, Source.FAULTS, Source.INVARIANTS)
    assert set(result.summary) == {n for s in virtual for n in names(s)}
    table = summary_table([result.summary])
    nulls = {c.name for c in SUMMARY_COLUMNS if table.column(c.name).null_count}
    in_real_time = (Source.REAL_TIME, Source.SKETCH, Source.TIME_KEEPING)
    assert nulls == {n for s in in_real_time for n in names(s)}


def test_the_sketched_figures_make_exactly_the_sketch_columns():
    sketches = {figure: DDSketch() for figure in SKETCHED}
    for sketch in sketches.values():
        sketch.add(1.0)
    assert set(_sketched(sketches)) == set(names(Source.SKETCH))


def test_the_ray_engine_hands_over_exactly_the_real_time_columns():
    """Read from the Ray engine's source (Ray need not be installed): the `extra` figures it
    hands to `seed_result`."""
    tree = ast.parse((ROOT / "actors" / "engine.py").read_text())
    extras = [
        k.arg
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        for k in node.keywords
        if k.arg == "extra"
    ]
    assert extras == ["extra"], "one seed_result call with extra figures"
    (given,) = [
        k.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        for k in node.keywords
        if k.arg == "extra"
    ]
    assert isinstance(given, ast.Dict)
    assert {ast.literal_eval(key) for key in given.keys} == set(names(Source.REAL_TIME))


@pytest.mark.parametrize("direction", list(Direction))
def test_each_direction_is_used(direction):
    assert any(c.direction is direction for c in SUMMARY_COLUMNS)


def test_a_figure_without_a_declared_column_is_refused():
    with pytest.raises(ValueError, match="not_declared"):
        summary_table([{"engine": "virtual", "strategy": "x", "seed": 0, "not_declared": 1}])
