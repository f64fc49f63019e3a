"""The run table's columns about who placed and how often a create was asked: shown where they
say something (a create asked about again, an external scheduler, a violation), never else."""

from __future__ import annotations

import contextlib
import io

import pandas as pd
import pytest

from harness.cli import main
from tests.support.configs import CONFIGS


def _table_header(out: str) -> list[str]:
    """The run table's header cells, each with its two lines joined."""
    top, bottom = (line for line in out.splitlines() if line.startswith("┃"))
    return [
        f"{a.strip()} {b.strip()}".strip()
        for a, b in zip(top.split("┃")[1:-1], bottom.split("┃")[1:-1], strict=True)
    ]


@pytest.mark.parametrize(
    ("config", "asked_again"), [("faults-rpc-error", True), ("seed-herd", False)]
)
def test_asks_are_shown_where_a_create_was_asked_again(tmp_path, monkeypatch, config, asked_again):
    monkeypatch.setenv("COLUMNS", "250")  # one table
    args = ["run", str(CONFIGS / f"{config}.toml"), "--seeds", "1", "--quiet", "--no-report"]
    with contextlib.redirect_stdout(io.StringIO()) as out:
        assert main([*args, "--out", str(tmp_path / "run")]) == 0
    header = _table_header(out.getvalue())
    summary = pd.read_parquet(tmp_path / "run" / "summary.parquet").iloc[0]
    assert (summary["asks_max"] > 1) == asked_again
    assert ("asks mean" in header and "asks max" in header) == asked_again
    assert "scheduler" not in header and "violations" not in header  # in process, none
    if asked_again:
        strategy = f"│ {summary['strategy']} "
        row = next(line for line in out.getvalue().splitlines() if line.startswith(strategy))
        cells = dict(zip(header, (c.strip() for c in row.split("│")[1:-1]), strict=True))
        assert cells["asks max"] == str(summary["asks_max"])
        assert cells["asks mean"] == f"{summary['asks_mean']:.2f}"
