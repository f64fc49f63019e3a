"""Things declared once and read in several places: a mismatch between a declaration and what
is built from it is an error, never numbers read wrong.

- the request, timeline and node columns (`harness.model.recording`) and the Arrow schemas the
  results layer derives from them;
- `Report`, built and unpacked by position on the hot path, against the same record built and
  read by field name;
- the protocol's message kinds, dense and each handled by a party.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pyarrow as pa
import pytest
from librt.vecs import append, vec
from mypy_extensions import i32

from harness.model.cluster.heartbeat import Report
from harness.model.cluster.node import Node
from harness.model.protocol import KINDS, PARTY, Kind, kind_names
from harness.model.recording import (
    NODE_FIELDS,
    REQUEST_COLUMNS,
    REQUEST_FIELDS,
    TIMELINE_COLUMNS,
    RequestLog,
    TimelineLog,
    node_columns,
)
from harness.model.scheduling.strategy import NodeView
from harness.model.workload.request import Shape
from harness.results.arrow_schemas import NODES, REQUESTS, TIMELINE, WIDTHS, table

ROOT = Path(__file__).resolve().parents[2]


def _one_request_row() -> dict:
    log = RequestLog()
    log.create((7, "placed", 2, 1, 0, 1, None, None, 1, None, 0), 0, 0, 0.5, 0.5, 0.75)
    return log.take()


def test_schemas_are_the_models_columns_after_strategy_and_seed():
    assert REQUESTS.names == ["strategy", "seed", *REQUEST_COLUMNS]
    assert TIMELINE.names == ["strategy", "seed", *TIMELINE_COLUMNS]
    assert NODES.names == ["strategy", "seed", *(name for name, _ in NODE_FIELDS)]


def test_every_number_column_of_the_request_log_has_its_declared_width():
    columns = _one_request_row()
    assert list(columns) == list(REQUEST_COLUMNS)
    for name, width in REQUEST_FIELDS:
        if width in ("i32", "i64", "f64"):
            view = memoryview(columns[name])
            assert view.itemsize * 8 == WIDTHS[width].bit_width, name
    row = table(REQUESTS, "stale", 0, columns).to_pylist()[0]
    assert (row["sandbox_id"], row["node_id"], row["outcome"]) == (7, 2, "placed")
    assert row["latency_ms"] == pytest.approx(250.0)


def test_a_buffer_of_another_width_is_refused_naming_the_column():
    columns = _one_request_row()
    narrow = append(vec[i32](), 7)  # sandbox_id is declared i64
    columns["sandbox_id"] = narrow
    with pytest.raises(TypeError, match="'sandbox_id'"):
        table(REQUESTS, "stale", 0, columns)


def test_a_column_missing_or_not_declared_is_refused():
    columns = _one_request_row()
    del columns["reason"]
    with pytest.raises(ValueError, match="reason"):
        table(REQUESTS, "stale", 0, columns)
    columns = _one_request_row()
    columns["extra"] = [1]
    with pytest.raises(ValueError, match="extra"):
        table(REQUESTS, "stale", 0, columns)


def test_timeline_and_node_columns_are_the_declared_ones():
    node = Node(0, 8, 1024.0, 4.0, 0.0, 0)
    assert list(node_columns([node])) == [name for name, _ in NODE_FIELDS]
    log = TimelineLog()
    log.sample(0.0, ([0.0], [0], [0.0]), [([0.0], [0], [0.0], [0.0])])
    assert list(log.take()) == list(TIMELINE_COLUMNS)
    assert table(NODES, "s", 0, node_columns([node])).num_rows == 1


def test_a_report_built_by_position_is_the_report_built_by_name():
    node = Node(3, 16, 2048.0, 4.0, 1.0, 0)
    node.create(11, Shape(2.0, 256.0, 0.5))
    report = node.report(1.5, with_ids=True)
    by_name = Report(
        node_id=node.node_id,
        seq=node.seq,
        taken_at=1.5,
        cpu_count=node.cpu_count,
        cpu_allocated=node.cpu_allocated,
        cpu_percent=node.cpu_percent,
        memory_total_mib=node.memory_mib,
        memory_allocated_mib=node.memory_allocated_mib,
        memory_used_mib=node.memory_used_mib,
        sandboxes_running=len(node.sandboxes),
        sandbox_ids=frozenset(node.sandboxes),
    )
    assert report == by_name and type(report) is Report


def test_a_view_unpacks_a_report_as_reading_it_by_name():
    report = Report(4, 9, 2.5, 32, 3.0, 150.0, 4096.0, 1024.0, 512.0, 2, frozenset({1, 2}))
    view = NodeView(0)
    view.overwrite(report)
    for name in ("seq", "taken_at", "cpu_count", "cpu_allocated", "cpu_percent"):
        assert getattr(view, name) == getattr(report, name), name
    assert view.memory_total_mib == report.memory_total_mib
    assert view.memory_allocated_mib == report.memory_allocated_mib
    assert view.sandbox_ids == report.sandbox_ids


def test_message_kinds_are_dense_and_each_has_a_party():
    assert list(KINDS) == sorted(kind_names(Kind)) and set(PARTY) == set(KINDS)

    class Gap:
        A = 0
        B = 2

    with pytest.raises(ValueError, match="without gaps"):
        kind_names(Gap)


def test_arrow_types_cover_every_declared_width():
    declared = {w for fields in (REQUEST_FIELDS, NODE_FIELDS) for _, w in fields}
    assert declared <= set(WIDTHS)
    assert all(isinstance(t, pa.DataType) for t in WIDTHS.values())


def test_every_compiled_module_is_held_to_a_no_ray_contract():
    """The compiled modules are listed once (pyproject.toml, read by setup.py); each must sit
    where a contract keeps Ray out of it: the pure model, or the Ray hosts' hot path."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    compiled = [
        p.removesuffix(".py").replace("/", ".") for p in project["tool"]["herd-harness"]["compiled"]
    ]
    contracts = project["tool"]["importlinter"]["contracts"]
    no_ray = [c["source_modules"] for c in contracts if "ray" in c.get("forbidden_modules", ())]
    held = {m for sources in no_ray for m in sources}
    for module in compiled:
        assert any(module == h or module.startswith(h + ".") for h in held), module
        assert (ROOT / (module.replace(".", "/") + ".py")).is_file(), module


def test_no_two_modules_share_a_name():
    """A reader finds a module by its name alone: none of the package's modules (package
    faces aside) has another's file name."""
    seen: dict[str, Path] = {}
    for path in sorted([*(ROOT / "harness").rglob("*.py"), *(ROOT / "actors").rglob("*.py")]):
        if path.name == "__init__.py":
            continue
        assert path.name not in seen, f"{path} and {seen[path.name]}"
        seen[path.name] = path
