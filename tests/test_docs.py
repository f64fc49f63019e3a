"""The README is the user's reference: every config key and result column must be in it."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.config.key_tables import defaults_table, entry_keys_table, fault_keys_table
from harness.config.trace_file import COLUMNS
from harness.results.arrow_schemas import TABLES

README = (Path(__file__).parent.parent / "README.md").read_text()


@pytest.mark.parametrize("key", [row[0] for row in defaults_table()])
def test_every_config_key_is_documented(key):
    assert f"`{key}`" in README


@pytest.mark.parametrize(
    "table,column", [(t, c) for t, s in TABLES.items() for c in s.names], ids=str
)
def test_every_result_column_is_documented(table, column):
    row = next(line for line in README.splitlines() if line.startswith(f"| `{table}.parquet`"))
    assert column in row.replace(" ", "").replace("`", "").split("|")[-2].split(",")


@pytest.mark.parametrize("key", [row[0] for row in fault_keys_table()])
def test_every_fault_key_is_documented(key):
    assert f"`{key}`" in README


@pytest.mark.parametrize("key", [row[0] for row in entry_keys_table()])
def test_every_key_of_a_list_of_tables_is_documented(key):
    assert f"| `{key}` |" in README


@pytest.mark.parametrize("column", COLUMNS)
def test_every_trace_column_is_documented(column):
    section = README.split("### Trace replay", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    assert any(f"`{column}`" in row.split("|")[1] for row in rows)
