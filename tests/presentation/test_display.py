"""Terminal output that fits: every table at 80 and 120 columns, nothing cut (no `…`, every
number in full), counts as integers; the progress line; `harness keys` and `--version`."""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
import pytest
from rich.cells import cell_len
from rich.console import Console

import harness
from harness.cli import main
from harness.config.key_tables import (
    defaults_table,
    entry_keys_table,
    fault_keys_table,
    plugin_keys_table,
)
from harness.config.sweep_file import load_sweep
from harness.model.scheduling.strategies import STRATEGIES
from harness.presentation.html_report import _table
from harness.presentation.progress import SweepBar, clock
from harness.presentation.terminal import print_keys, print_run, print_sweep
from harness.results.run_reader import load_run, open_run
from harness.results.statistics import by_strategy, pooled_load
from harness.results.sweep_folder import SweepStore, load_sweep_results
from harness.running.sweep_runner import run_seed
from tests.support.configs import CONFIGS

WIDTHS = (80, 120)
THRESHOLDS = ["optimistic.cv_median < 0.05", "*.p99_place_ms < 50", "cv < 0.5", "failed_frac==0"]
CONFIG_PAGE = (Path(__file__).parents[2] / "docs" / "reference" / "config.md").read_text()


def _render(draw, width: int) -> str:
    console = Console(width=width, file=io.StringIO(), record=True, color_system=None)
    draw(console)
    return console.export_text()


def _fits(text: str, width: int) -> None:
    assert "…" not in text
    assert max(cell_len(line) for line in text.splitlines()) <= width


@pytest.fixture(scope="module")
def every_strategy(tmp_path_factory) -> Path:
    """A run of every strategy (the longest names), 2 seeds, with thresholds failing some."""
    out = tmp_path_factory.mktemp("run") / "out"
    flags = [f for t in THRESHOLDS for f in ("--threshold", t)]
    argv = [
        "run",
        str(CONFIGS / "seed-herd.toml"),
        "--compare",
        ",".join(STRATEGIES),
        "--seeds",
        "2",
    ]
    argv += ["--set", "run.duration_s=5", *flags, "--out", str(out), "--quiet", "--no-report"]
    assert main(argv) == 99  # the tables are printed from the folder: no report is read
    return out


@pytest.mark.parametrize("width", WIDTHS)
def test_the_run_tables_fit_and_show_every_number(every_strategy, width):
    meta, frames = load_run(every_strategy, ("summary", "nodes"))
    frames["pooled"] = pooled_load(frames["summary"], open_run(every_strategy).batches)
    text = _render(lambda console: print_run(meta, frames, console), width)
    _fits(text, width)
    rows = by_strategy(frames["summary"], frames["pooled"])
    for _, r in rows.iterrows():
        for number in (
            r["strategy"],
            f"{r['cv_mean']:.3f}",
            f"{r['cv_lo']:.3f}-{r['cv_hi']:.3f}",
            f"{r['p99_place_ms']:.2f}",
            f"{r['err_mean_abs']:.2f}",
            f"{100 * r['err_nonzero_frac']:.1f}%",
        ):
            assert number in text
    placed = rows["placed"]
    assert (placed % 1 == 0).all()  # seed-herd places every create: whole means, shown as integers
    assert all(f" {p:.0f} " in text for p in placed) and f"{placed.iloc[0]:.1f}" not in text
    for record in meta["thresholds"]:
        assert record["threshold"] in text
    assert "thresholds: " in text and "FAIL" in text and "pass" in text
    if width == 80:
        assert "Wider than 80 columns" in text  # the columns that did not fit, named


@pytest.fixture(scope="module")
def sweep_folder(tmp_path_factory) -> Path:
    """Every strategy x 2 cluster sizes (rate linked) x 3 heartbeat intervals, one seed, run
    here without Ray (the task body, cell by cell); one cell recorded as failed."""
    tmp = tmp_path_factory.mktemp("sweep")
    path = tmp / "sweep.toml"
    path.write_text(
        f'[sweep]\nbase = "{CONFIGS / "seed-herd.toml"}"\nseeds = 1\n'
        '[set]\n"run.duration_s" = 3.0\n'
        '[grid]\n"placement.strategy" = "all"\n"cluster.nodes" = [10, 20]\n'
        '"heartbeat.interval_s" = [0.5, 2.5, 20]\n'
        '[linked]\n"workload.rate_per_s" = { with = "cluster.nodes", values = [20, 40] }\n'
        '[thresholds]\n"*.cv_max" = "< 0.5"\n'
    )
    sweep = load_sweep(path)
    store = SweepStore(tmp / "out", sweep)
    for cell in sweep.cells[1:]:
        store.add_cell(cell, [run_seed(cell.config, seed)[0] for seed in sweep.seeds], 0.0)
    store.fail_cell(sweep.cells[0], "RuntimeError: injected", "trace")
    store.close()
    return tmp / "out"


@pytest.mark.parametrize("width", WIDTHS)
def test_the_sweep_tables_fit_and_show_every_cell(sweep_folder, width):
    meta, summary = load_sweep_results(sweep_folder)
    text = _render(lambda console: print_sweep(meta, summary, console), width)
    _fits(text, width)
    for _, group in summary.groupby("cell"):
        r = by_strategy(group).iloc[0]
        assert f"{r['cv_mean']:.3f}" in text
    assert all(name in text for name in STRATEGIES)
    assert "failed" in text and "cell 0 failed" in text
    assert "across: heartbeat.interval_s" in text
    failed_checks = sum(not r["passed"] for c in meta["cells"] for r in c.get("thresholds", []))
    assert 0 < failed_checks < len(meta["cells"]) - 1
    assert f"{len(meta['cells']) - 1 - failed_checks} of {len(meta['cells']) - 1} checks" in text


def test_the_sweep_pivot_puts_strategies_down_and_the_last_key_across(sweep_folder):
    meta, summary = load_sweep_results(sweep_folder)
    text = _render(lambda console: print_sweep(meta, summary, console), 200)
    lines = text[: text.index("thresholds:")].splitlines()
    header = next(line for line in lines if "strategy" in line)
    assert [h.strip() for h in header.split("┃")[-4:-1]] == ["0.5", "2.5", "20"]
    stale = [line for line in lines if "│ stale " in line]
    assert len(stale) == 2  # one row per cluster size, the linked rate beside it
    assert "│ 10 " in stale[0] and "│ 20 " in stale[0] and "│ 40 " in stale[1]


def test_the_progress_line_names_elapsed_and_eta_and_fits():
    assert [clock(s) for s in (None, 8, 754.4, 3723)] == ["-:--", "0:08", "12:34", "1:02:03"]
    bar = SweepBar("sweep-heartbeat")
    bar.bar.update(bar.task, completed=42, total=56, cells="42/56 cells [red]2 failed[/red]")
    text = _render(lambda console: console.print(bar.bar.make_tasks_table(bar.bar.tasks)), 80)
    _fits(text, 80)
    assert "42/56 cells 2 failed elapsed 0:00, ETA " in text


@pytest.mark.parametrize("width", WIDTHS)
def test_harness_keys_lists_every_key_and_fits(width):
    text = _render(print_keys, width)
    _fits(text, width)
    rows = defaults_table() + plugin_keys_table() + entry_keys_table() + fault_keys_table()
    for key, default, _ in rows:
        assert key in text and default in text


def test_keys_markdown_is_the_reference_page(capsys):
    assert main(["keys", "--markdown"]) == 0
    rows = capsys.readouterr().out.splitlines()
    tables = (defaults_table, plugin_keys_table, entry_keys_table, fault_keys_table)
    assert len(rows) == sum(len(table()) for table in tables)
    assert all(row in CONFIG_PAGE.splitlines() for row in rows)


def test_version(capsys):
    with pytest.raises(SystemExit) as caught:
        main(["--version"])
    assert caught.value.code == 0
    assert capsys.readouterr().out == f"harness {harness.__version__} ({harness.PATH})\n"


def test_html_tables_show_counts_as_integers():
    frame = pd.DataFrame({"strategy": ["stale"], "placed": [500.0], "cv": [0.6021], "x": [None]})
    page = _table(frame.astype({"x": float}))
    assert "<td>500</td>" in page and "<td>0.602</td>" in page and "<td>-</td>" in page


def test_the_run_table_caption_explains_the_utilisation_columns_only_when_shown(
    tmp_path, capsys, monkeypatch
):
    """upstream-comparison varies its nodes' usage, so the utilisation columns are shown and
    their meaning is said under the table; seed-herd's are not, and neither is their line."""
    monkeypatch.setenv("COLUMNS", "200")
    for name, shown in (("upstream-comparison", True), ("seed-herd", False)):
        out = tmp_path / name
        argv = ["run", str(CONFIGS / f"{name}.toml"), "--seeds", "2", "--no-report"]
        assert main([*argv, "--quiet", "--out", str(out)]) == 0
        text = capsys.readouterr().out
        assert ("util CV: the spread (CV)" in text) is shown, text
