"""What a person sees in the terminal: histograms of the herd, tables over seeds, the live view
of a seed played in real time (progress itself: `harness.presentation.progress`)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from rich.columns import Columns
from rich.console import Console, Group, JustifyMethod, RenderableType
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from harness.config.key_tables import (
    defaults_table,
    entry_keys_table,
    fault_keys_table,
    plugin_keys_table,
)
from harness.engines import Snapshot
from harness.presentation.headline import headline, plugins_line
from harness.presentation.placer import per_strategy, placed_by
from harness.results.seed_figures import cv
from harness.results.statistics import (
    by_strategy,
    contrasts,
    median_seed,
    utilisation_varies,
)
from harness.results.thresholds import (
    AGGREGATE_NAMES,
    DERIVED,
    EACH_SEED,
    FORM,
    METRICS,
    number_text,
)
from harness.results.time_keeping import OVERLOADED, kept_by_strategy, line, mark, run_verdict


def bars(labels: list[str], values: list[int], width: int = 40) -> str:
    """One `label |####  | value` line per value, scaled to the largest."""
    top = max(values, default=0) or 1
    pad = max((len(label) for label in labels), default=0)
    return "\n".join(
        f"{label:>{pad}} |{'#' * round(v * width / top):<{width}}| {v}"
        for label, v in zip(labels, values, strict=True)
    )


def histogram(counts: list[int], width: int = 40) -> str:
    """Sandboxes per node as bars, as the reference benchmark prints them."""
    digits = len(str(len(counts) - 1))
    return bars([f"node {i:>{digits}}" for i in range(len(counts))], counts, width)


def _fmt(x: float, digits: int = 3) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def _interval(lo: float, hi: float) -> str:
    """A 95% interval as `lo-hi`; `-` when there is none (one seed)."""
    return "-" if math.isnan(lo) else f"{_fmt(lo)}-{_fmt(hi)}"


def _counts(values: pd.Series) -> list[str]:
    """Counts (or their means over seeds): whole numbers as integers, else one decimal, the
    same for the whole column so that it lines up."""
    whole = bool(((values % 1) == 0).all())
    return ["-" if math.isnan(v) else f"{v:.0f}" if whole else f"{v:.1f}" for v in values]


def _number(x: float | None) -> str:
    """A measured value of any size, in full: 500, 0.01523, 1234.6."""
    if x is None or math.isnan(x):
        return "-"
    if float(x).is_integer():
        return f"{x:.0f}"
    return f"{x:.1f}" if abs(x) >= 1000 else f"{x:.4g}"


def _text(value: Any) -> str:
    """A config value as its column header or cell (markup escaped): 0.1, 10000, stale."""
    return escape(number_text(value) if isinstance(value, float) else str(value))


@dataclass(frozen=True)
class Column:
    """One column of a terminal table: its header and cells as rich markup, lines stacked
    with newlines; it is never wrapped or cut, so its width is its longest line."""

    header: str
    cells: list[str]
    justify: JustifyMethod = "right"

    @property
    def width(self) -> int:
        lines = (ln for text in (self.header, *self.cells) for ln in text.split("\n"))
        return max(Text.from_markup(line).cell_len for line in lines)


def _table_width(columns: list[Column]) -> int:
    """Cells of rich's default table: a border and two spaces of padding per column, plus the
    closing border."""
    return 1 + sum(c.width + 3 for c in columns)


def fitted(
    title: str, keys: list[Column], columns: list[Column], width: int, caption: str = ""
) -> list[RenderableType]:
    """`keys` then `columns`, in order (most important first), as one table if it fits in
    `width`, else as several: each repeats the key columns and takes as many of the rest as
    fit, and a footer says where the others went. Nothing is cut. The title (markup) and the
    caption are lines of their own, wrapped at `width` rather than at the table's edge."""
    groups: list[list[Column]] = [[]]
    for column in columns:
        if groups[-1] and _table_width([*keys, *groups[-1], column]) > width:
            groups.append([])
        groups[-1].append(column)
    moved = [c.header.replace("\n", " ") for group in groups[1:] for c in group]
    parts: list[RenderableType] = []
    for i, group in enumerate(groups):
        notes = [caption] if caption and i == len(groups) - 1 else []
        if i == 0 and moved:
            notes.insert(0, f"Wider than {width} columns: the columns {', '.join(moved)} follow.")
        table = Table()
        for column in [*keys, *group]:
            table.add_column(column.header, justify=column.justify, no_wrap=True)
        for row in zip(*(c.cells for c in [*keys, *group]), strict=True):
            table.add_row(*row)
        lines: list[RenderableType] = [
            Text.from_markup(title if i == 0 else f"{title} (continued)", style="italic"),
            table,
        ]
        if notes:
            lines.append(Text(" ".join(notes), style="dim"))
        parts.append(Group(*lines))
    return parts


def strategy_tables(
    summary: pd.DataFrame, pooled: pd.DataFrame, title: str, width: int
) -> list[RenderableType]:
    """The table over seeds, one row per strategy, fitted to `width`; rates and latency
    percentiles are pooled over every request of every seed
    (`harness.results.statistics.pooled_load`)."""
    rows = by_strategy(summary, pooled).merge(per_strategy(summary), on="strategy")
    columns = [
        *_placer_columns(rows),
        Column("seeds", [str(n) for n in rows["seeds"]]),
        Column("CV\nmean", [_fmt(x) for x in rows["cv_mean"]]),
        Column(
            "CV 95%\nCI",
            [_interval(lo, hi) for lo, hi in zip(rows["cv_lo"], rows["cv_hi"], strict=True)],
        ),
        Column("CV\nmed", [_fmt(x) for x in rows["cv_median"]]),
        Column("CV\ntime", [_fmt(x) for x in rows["cv_time_mean"]]),
        Column("herd\nx", [_fmt(x, 2) for x in rows["herd_ratio"]]),
        *_utilisation_columns(summary, rows),
        Column("max", _counts(rows["max_count"])),
        Column("min", _counts(rows["min_count"])),
        Column("placed", _counts(rows["placed"])),
        Column("failed", _counts(rows["failed"])),
        *_asks_columns(rows),
        Column("creates\n/s", [_fmt(x, 1) for x in rows["creates_per_s"]]),
        Column("p50\nms", [_fmt(x, 2) for x in rows["p50_place_ms"]]),
        Column("p99\nms", [_fmt(x, 2) for x in rows["p99_place_ms"]]),
        Column("|err|", [_fmt(x, 2) for x in rows["err_mean_abs"]]),
        Column("over", [_fmt(x, 1) for x in rows["err_over_max"]]),
        Column("under", [_fmt(x, 1) for x in rows["err_under_max"]]),
        Column(
            "err %",
            ["-" if math.isnan(x) else f"{100 * x:.1f}%" for x in rows["err_nonzero_frac"]],
        ),
    ]
    # The fidelity of an engine in real time (null for the virtual engine).
    for label, column in (
        ("RPC\np99", "create_rpc_p99_ms"),
        ("late\np99", "heartbeat_late_p99_ms"),
    ):
        if rows[column].notna().any():
            columns.append(Column(label, [_fmt(x, 2) for x in rows[column]]))
    keys = [Column("strategy", list(rows["strategy"]), justify="left")]
    kept = kept_by_strategy(summary)
    if kept:  # an engine in real time: each row's seeds, kept in time or not, beside its name
        cells = [_kept(kept.get(s)) for s in rows["strategy"]]
        keys.append(Column("time\nkeeping", cells, justify="left"))
    labels = {c.header.replace("\n", " ") for c in [*keys, *columns]}
    caption = " ".join(text for label, text in CAPTIONS if label is None or label in labels)
    return fitted(title, keys, columns, width, caption)


def _kept(counts: tuple[int, int] | None) -> str:
    """A row's time keeping (`mark`), overloaded in red; `-` for a strategy not measured."""
    if counts is None:
        return "-"
    return f"[bold red]{mark(counts)}[/bold red]" if counts[0] else mark(counts)


def _placer_columns(rows: pd.DataFrame) -> list[Column]:
    """The external scheduler's name and its violations, where they say something
    (`harness.presentation.placer`)."""
    columns = []
    if rows["scheduler"].notna().any():
        columns.append(Column("scheduler", [escape(str(n)) for n in rows["scheduler"]], "left"))
    if rows["violations"].notna().any():
        columns.append(Column("violations", _counts(rows["violations"])))
    return columns


def _asks_columns(rows: pd.DataFrame) -> list[Column]:
    """The asks per create, where a create was asked about more than once."""
    if rows["asks_max"].isna().all():
        return []
    return [
        Column("asks\nmean", [_fmt(x, 2) for x in rows["asks_mean"]]),
        Column("asks\nmax", _counts(rows["asks_max"])),
    ]


def _utilisation_columns(summary: pd.DataFrame, rows: pd.DataFrame) -> list[Column]:
    if not utilisation_varies(summary):
        return []
    return [
        Column("util\nCV", [_fmt(x) for x in rows["util_cv_mean"]]),
        Column(
            "util CV\n95% CI",
            [
                _interval(lo, hi)
                for lo, hi in zip(rows["util_cv_lo"], rows["util_cv_hi"], strict=True)
            ],
        ),
        Column("alloc\nCV", [_fmt(x) for x in rows["alloc_cv_mean"]]),
        Column("util\n%", [_fmt(x, 1) for x in rows["util_mean"]]),
    ]


CAPTIONS: tuple[tuple[str | None, str], ...] = (
    (
        None,
        "CV time: the CV of sandboxes per node over the run, time-weighted, rather than at its "
        "end. herd x: in each report interval, the most chosen node's share of the "
        "placements over what an even spread gives it (1: even).",
    ),
    (
        None,
        "max, min: the busiest and idlest node's sandboxes, placed and failed: creates, each "
        "a mean over seeds. err: believed minus true allocated vCPU per node and replica; "
        "|err| is its mean, time-weighted, over and under the worst over all seeds, err % the "
        "share of node-time with any error.",
    ),
    (
        "scheduler",
        "scheduler: the external scheduler that placed, as its Hello named itself; the "
        "strategy is the harness's ledger of its view.",
    ),
    (
        "violations",
        "violations: creates per seed the scheduler placed against an eligibility rule "
        "(external.on_violation = count).",
    ),
    (
        "asks max",
        "asks: times a create was asked of the scheduler (1, plus one per refusal or failed "
        "RPC), mean over creates, and the most of any create.",
    ),
    (
        "util CV",
        "util CV: the spread (CV) of the nodes' CPU utilisation at the end, alloc CV of their "
        "allocated vCPUs; util %: the mean utilisation.",
    ),
    (
        "time keeping",
        "time keeping: whether each strategy's seeds kept the model's time on an engine in "
        "real time, or how many ran OVERLOADED: its figures may then describe the machine, not "
        "the scheduler.",
    ),
    (
        "RPC p99",
        "RPC p99: the create RPC's round trip, late p99: how late heartbeats arrived, in model "
        "ms (real-time engines only).",
    ),
)
"""What the run table's columns mean, said under it; a column's line only when it is shown
(None: always). The HTML report says the same (`harness.presentation.html_report`)."""


def threshold_table(records: list[dict[str, Any]], width: int) -> list[RenderableType]:
    """The run's threshold checks: pass or fail, with the value that decided."""
    failed = sum(not r["passed"] for r in records)
    title = f"thresholds: {len(records) - failed} of {len(records)} passed"
    columns = [
        Column("strategy", [r["strategy"] for r in records], justify="left"),
        Column("value", [_number(r["value"]) for r in records]),
        Column("result", [_verdict(r) for r in records], justify="left"),
    ]
    caption = "value: over the seeds as named, else the worst seed (each seed must pass)."
    keys = [Column("threshold", [r["threshold"] for r in records], justify="left")]
    return fitted(title, keys, columns, width, caption)


def _verdict(record: dict[str, Any]) -> str:
    if record["passed"]:
        return "[green]pass[/green]"
    failing = len(record["failed_seeds"])
    if record["over"] == EACH_SEED:
        return f"[red]FAIL[/red] on {failing} of {record['seeds']} seeds"
    return "[red]FAIL[/red]" + (f": no value on {failing} seeds" if failing else "")


def print_run(meta: dict[str, Any], frames: dict[str, pd.DataFrame], console: Console) -> None:
    """The run's title and placement pipeline, its headline (what each strategy changed and
    why, `harness.presentation.headline`), histograms of each strategy's median-CV seed side
    by side, the table over seeds, and the threshold checks."""
    summary, nodes = frames["summary"], frames["nodes"]
    if summary.empty:
        console.print("[yellow]no seed finished: nothing to show[/yellow]")
        return
    state = "" if meta.get("completed") else " [red](INCOMPLETE run)[/red]"
    cfg = meta.get("config", {})
    plugins = meta.get("plugins", {})
    k = "" if plugins.get("k") is None else f", K={plugins['k']}"
    console.print(
        f"[bold]{escape(cfg.get('run', {}).get('name', ''))}: {meta.get('engine')} engine, "
        f"{summary['nodes'].iloc[0]} nodes{k}[/bold]{state}"
    )
    pipeline = plugins_line(plugins)
    if pipeline:
        console.print(Text(pipeline, style="dim"))
    found = contrasts(summary, nodes)
    kept = run_verdict(summary)
    lines = headline(found, kept, placed_by(summary), kept_by_strategy(summary))
    for i, told in enumerate(lines):
        loud = i == 0 and kept is not None and kept["verdict"] == OVERLOADED
        console.print(Text(told, style="bold red" if loud else ""))
    panels = []
    for c in found:
        seed = median_seed(summary, c.strategy)
        picked = nodes[(nodes["strategy"] == c.strategy) & (nodes["seed"] == seed)]
        counts = picked.sort_values("node_id")["sandboxes"].tolist()
        row = summary[(summary["strategy"] == c.strategy) & (summary["seed"] == seed)].iloc[0]
        body = (
            histogram(counts, width=30)
            if len(counts) <= 40
            else (f"{len(counts)} nodes: max {max(counts)}, min {min(counts)}")
        )
        same = f" (= {c.same_as})" if c.same_as else ""
        over = " [bold red]OVERLOADED[/bold red]" if row.get("time_keeping") == OVERLOADED else ""
        panels.append(
            Panel(
                body,
                title=f"{c.strategy}{same}: seed {seed}, CV {row['cv']:.3f}{over}",
                subtitle="median-CV seed",
                expand=False,
            )
        )
    console.print(Columns(panels))
    seeds = len(summary["seed"].unique())
    title = f"each strategy over {seeds} seed{'s' if seeds > 1 else ''}"
    tables = strategy_tables(summary, frames["pooled"], title, console.width)
    if meta.get("thresholds"):
        tables += threshold_table(meta["thresholds"], console.width)
    for table in tables:
        console.print(table)


def overload_warning(frames: dict[str, pd.DataFrame], console: Console) -> None:
    """A run in real time that could not keep the model's time says so once more, as the
    command's last line (as Locust warns of its own CPU): its figures may describe the
    machine (`harness.results.time_keeping`)."""
    kept = run_verdict(frames["summary"])
    if kept is not None and kept["verdict"] == OVERLOADED:
        console.print(Text(line(kept), style="bold red"))


def live_detail(snapshot: Snapshot) -> Panel:
    """Elapsed time, load (rates, failures, latency percentiles so far), CV and sandboxes per
    node (bucketed when there are many)."""
    counts = snapshot.counts
    if len(counts) <= 40:
        body = histogram(counts, width=30)
    else:
        nodes, edges = np.histogram(counts, bins=min(10, max(counts) + 1))
        labels = [f"{lo:.0f}-{hi:.0f} sandboxes" for lo, hi in itertools.pairwise(edges)]
        body = bars(labels, nodes.tolist(), width=30) + "\n(nodes per range)"
    load = snapshot.load
    p50, p90, p99 = (_fmt(ms, 1) for ms in load.latency_ms)
    figures = (
        f"{load.creates} creates ({load.rate(load.creates):.1f}/s), {load.failed} failed, "
        f"{load.kills} kills ({load.rate(load.kills):.1f}/s)\n"
        f"placement latency p50 {p50} ms, p90 {p90} ms, p99 {p99} ms\n"
    )
    title = f"{snapshot.elapsed_s:.1f} s elapsed, CV {_fmt(cv(counts))}"
    return Panel(figures + body, title=title, title_align="left", expand=False)


STRATEGY_KEY = "placement.strategy"


def _pivot(meta: dict[str, Any]) -> tuple[list[str], list[str], dict[tuple, dict[tuple, dict]]]:
    """How a sweep's cells lay out as strategy x swept keys: the keys of the rows (the strategy
    first), the keys of the columns (the last grid key and the keys linked to it), and
    {row values: {column values: cell entry of sweep.json}}, in grid order."""
    linked = {key: spec["with"] for key, spec in meta["identity"]["linked"].items()}
    axes = [k for k in meta["grid_keys"] if k != STRATEGY_KEY]
    across = [axes[-1], *(k for k, w in linked.items() if w == axes[-1])] if axes else []
    down = [STRATEGY_KEY, *(k for k in meta["keys"] if k not in across and k != STRATEGY_KEY)]
    strategy = meta["identity"]["base"]["placement"]["strategy"]
    grid: dict[tuple, dict[tuple, dict]] = {}
    for cell in meta["cells"]:
        values = {STRATEGY_KEY: strategy, **cell["values"]}
        row = tuple(values[k] for k in down)
        grid.setdefault(row, {})[tuple(values[k] for k in across)] = cell
    return down, across, grid


def _cv_cell(r: pd.Series, cv: str = "cv") -> str:
    """A cell's CV mean (or that of `cv`, e.g. util_cv), and its 95% interval below it when
    there is one."""
    interval = _interval(r[f"{cv}_lo"], r[f"{cv}_hi"])
    return _fmt(r[f"{cv}_mean"]) + ("" if interval == "-" else f"\n{interval}")


def sweep_tables(meta: dict[str, Any], summary: pd.DataFrame, width: int) -> list[RenderableType]:
    """CV mean (95% interval below it) of every cell, strategies down and the last swept key
    across; failed creates the same way when any cell has some. Fitted to `width`."""
    down, across, grid = _pivot(meta)
    stats = {cell: by_strategy(group).iloc[0] for cell, group in summary.groupby("cell")}
    rows = list(grid)
    heads = list(dict.fromkeys(head for cells in grid.values() for head in cells))

    def tables(title: str, text: Callable[[pd.Series], str]) -> list[RenderableType]:
        def shown(cell: dict | None) -> str:
            status = cell["status"] if cell else "pending"
            if status == "complete":
                return text(stats[cell["cell"]])
            return "[red]failed[/red]" if status == "failed" else "-"

        columns = [
            Column("\n".join(map(_text, head)) or "all", [shown(grid[r].get(head)) for r in rows])
            for head in heads
        ]
        keys = [
            Column(
                "strategy" if k == STRATEGY_KEY else k.replace(".", ".\n"),
                [_text(row[i]) for row in rows],
                justify="left",
            )
            for i, k in enumerate(down)
        ]
        where = f"; across: {', '.join(across)}" if across else ""
        return fitted(title + where, keys, columns, width)

    done = sum(c["status"] == "complete" for c in meta["cells"])
    head = f"{meta['name']}: {done}/{len(meta['cells'])} cells complete, {len(meta['seeds'])} seeds"
    found = tables(
        f"{head}; CV mean over seeds, its 95% interval below",
        _cv_cell,
    )
    if utilisation_varies(summary):
        found += tables(
            f"{head}; utilisation CV (upstream's load imbalance) mean, its 95% interval below",
            lambda r: _cv_cell(r, "util_cv"),
        )
    if not summary.empty and summary["failed"].any():
        found += tables(
            f"{head}; failed creates, mean over seeds",
            lambda r: _counts(pd.Series([r["failed"]]))[0],
        )
    return found


def sweep_threshold_tables(meta: dict[str, Any], width: int) -> list[RenderableType]:
    """How many of the cells' threshold checks passed, and each one that failed with its cell."""
    checked = [(c, r) for c in meta["cells"] for r in c.get("thresholds", [])]
    failing = [(c, r) for c, r in checked if not r["passed"]]
    title = (
        f"thresholds: {len(checked) - len(failing)} of {len(checked)} checks passed in "
        f"{len({c['cell'] for c, _ in checked})} cells"
    )
    if not failing:
        return [Text(title)]
    keys = [k for k in meta["keys"] if k != STRATEGY_KEY]
    columns = [
        Column("value", [_number(r["value"]) for _, r in failing]),
        Column("result", [_verdict(r) for _, r in failing], justify="left"),
        Column("cell", [str(c["cell"]) for c, _ in failing]),
        Column("strategy", [r["strategy"] for _, r in failing], justify="left"),
        *(
            Column(k.replace(".", ".\n"), [_text(c["values"][k]) for c, _ in failing], "left")
            for k in keys
        ),
    ]
    threshold = Column("threshold", [r["threshold"] for _, r in failing], justify="left")
    return fitted(f"{title}; failed:", [threshold], columns, width)


def print_sweep(meta: dict[str, Any], summary: pd.DataFrame, console: Console) -> None:
    """The pivot of the cells, the threshold checks, then the failed cells with their errors."""
    tables = sweep_tables(meta, summary, console.width)
    if any(c.get("thresholds") for c in meta["cells"]):
        tables += sweep_threshold_tables(meta, console.width)
    for table in tables:
        console.print(table)
    for c in meta["cells"]:
        if c["status"] == "failed":
            console.print(f"[red]cell {c['cell']} failed[/red] {c['values']}: {c['error']}")


def print_keys(console: Console, markdown: bool = False) -> None:
    """Every config key with its default and meaning (`harness.config.key_tables`, the source of the
    reference pages), plugins' own settings (installed ones' too) included, then what a threshold
    may name; `markdown` prints the reference's rows."""
    rows = defaults_table() + plugin_keys_table() + entry_keys_table() + fault_keys_table()
    if markdown:
        for key, default, meaning in rows:
            print(f"| `{key}` | `{default}` | {meaning} |")
        return
    table = Table(title="config keys", title_justify="left")
    table.add_column("key", no_wrap=True)
    table.add_column("default", no_wrap=True)
    table.add_column("meaning", ratio=1)
    for row in rows:
        table.add_row(*map(Text, row))
    console.print(table)
    derived = ", ".join(f"{name} ({meaning})" for name, (_, meaning) in DERIVED.items())
    console.print(
        Text(
            f'[thresholds]: "[STRATEGY.]METRIC[_AGGREGATE]" = "OP NUMBER", or --threshold '
            f"{FORM}. METRIC: {', '.join(METRICS)}; of these, derived: {derived}. AGGREGATE "
            f"over seeds: {AGGREGATE_NAMES}; none: every seed must pass. OP: <, <=, >, >=, ==."
        )
    )
