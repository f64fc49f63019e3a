"""What a person sees in the terminal: histograms of the herd, tables over seeds, progress."""

from __future__ import annotations

import itertools
import math
import sys
import time
from typing import Any

import numpy as np
import pandas as pd
from rich.columns import Columns
from rich.console import Console, Group
from rich.live import Live
from rich.panel import Panel
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from harness.analysis import by_strategy, cv, median_seed
from harness.engine import Snapshot


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


def strategy_table(summary: pd.DataFrame, requests: pd.DataFrame, title: str) -> Table:
    """The table over seeds, a row per strategy; rates and latency percentiles are pooled over
    every request of every seed (`harness.analysis.pooled_load`)."""
    table = Table(
        title=title,
        title_justify="left",
        caption="err: believed minus true allocated vCPU per node and replica; |err| is its mean, "
        "time-weighted, over and under the worst over all seeds, err % the share of "
        "node-time with any error",
        caption_justify="left",
    )
    table.add_column("strategy", no_wrap=True)
    for col in (
        "seeds",
        "CV mean",
        "CV 95% CI",
        "CV med",
        "max",
        "min",
        "placed",
        "failed",
        "creates/s",
        "p50 ms",
        "p99 ms",
        "|err|",
        "over",
        "under",
        "err %",
    ):
        table.add_column(col, justify="right", no_wrap=True)
    rows = by_strategy(summary, requests)
    ray = {  # the fidelity of an engine in real time (null for the virtual engine)
        label: column
        for label, column in (
            ("RPC p99", "create_rpc_p99_ms"),
            ("late p99", "heartbeat_late_p99_ms"),
        )
        if rows[column].notna().any()
    }
    for label in ray:
        table.add_column(label, justify="right", no_wrap=True)
    for _, r in rows.iterrows():
        table.add_row(
            r["strategy"],
            str(r["seeds"]),
            _fmt(r["cv_mean"]),
            f"{_fmt(r['cv_lo'])}-{_fmt(r['cv_hi'])}",
            _fmt(r["cv_median"]),
            f"{r['max_count']:.1f}",
            f"{r['min_count']:.1f}",
            f"{r['placed']:.1f}",
            f"{r['failed']:.1f}",
            _fmt(r["creates_per_s"], 1),
            _fmt(r["p50_place_ms"], 2),
            _fmt(r["p99_place_ms"], 2),
            _fmt(r["err_mean_abs"], 2),
            _fmt(r["err_over_max"], 1),
            _fmt(r["err_under_max"], 1),
            "-" if math.isnan(r["err_nonzero_frac"]) else f"{100 * r['err_nonzero_frac']:.1f}%",
            *(_fmt(r[column], 2) for column in ray.values()),
        )
    return table


def print_run(meta: dict[str, Any], frames: dict[str, pd.DataFrame], console: Console) -> None:
    """Histograms of each strategy's median-CV seed side by side, then the table over seeds."""
    summary, nodes = frames["summary"], frames["nodes"]
    if summary.empty:
        console.print("[yellow]no seed finished: nothing to show[/yellow]")
        return
    panels = []
    for strategy in summary["strategy"].unique():
        seed = median_seed(summary, strategy)
        picked = nodes[(nodes["strategy"] == strategy) & (nodes["seed"] == seed)]
        counts = picked.sort_values("node_id")["sandboxes"].tolist()
        row = summary[(summary["strategy"] == strategy) & (summary["seed"] == seed)].iloc[0]
        body = (
            histogram(counts, width=30)
            if len(counts) <= 40
            else (f"{len(counts)} nodes: max {max(counts)}, min {min(counts)}")
        )
        panels.append(
            Panel(
                body,
                title=f"{strategy}: seed {seed}, CV {row['cv']:.3f}",
                subtitle="median-CV seed",
                expand=False,
            )
        )
    console.print(Columns(panels))
    state = "" if meta.get("completed") else " [red](INCOMPLETE run)[/red]"
    cfg = meta.get("config", {})
    title = (
        f"{cfg.get('run', {}).get('name', '')}: {meta.get('engine')} engine, "
        f"{summary['nodes'].iloc[0]} nodes, K={summary['k'].iloc[0]}{state}"
    )
    console.print(strategy_table(summary, frames["requests"], title))


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


class LazyProgress:
    """A progress bar that appears only once a run has taken more than `delay` seconds; engines
    in real time add a live view of the current seed under it."""

    def __init__(self, description: str, delay: float = 1.5) -> None:
        self.description = description
        self.delay = delay
        self.start = time.monotonic()
        self.bar: Progress | None = None
        self.live: Live | None = None
        self.task: Any = None

    def __call__(
        self, done: int, total: int, fraction: float, snapshot: Snapshot | None = None
    ) -> None:
        if self.bar is None:
            if time.monotonic() - self.start < self.delay:
                return
            self.bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                TextColumn("{task.fields[units]}"),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
            )
            self.task = self.bar.add_task(self.description, total=total, units="")
            self.live = Live(
                self.bar, console=Console(file=sys.stderr), transient=True, refresh_per_second=4
            )
            self.live.start()
        self.bar.update(
            self.task, completed=done + min(fraction, 1.0), units=f"{done}/{total} seeds"
        )
        if snapshot is not None:
            self.live.update(Group(self.bar, live_detail(snapshot)))

    def close(self) -> None:
        if self.live is not None:
            self.live.stop()


class SweepBar:
    """Cells complete, cells failed and time left of a sweep, on stderr; it appears with the
    first report, so an error found before the sweep starts is not drawn under a bar."""

    def __init__(self, description: str) -> None:
        self.started = False
        self.bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.fields[cells]}"),
            TimeElapsedColumn(),
            TextColumn("left"),
            TimeRemainingColumn(),
            console=Console(file=sys.stderr),
        )
        self.task = self.bar.add_task(description, total=None, cells="")

    def __call__(self, done: int, failed: int, total: int) -> None:
        if not self.started:
            self.bar.start()
            self.started = True
        cells = f"{done}/{total} cells" + (f" [red]{failed} failed[/red]" if failed else "")
        self.bar.update(self.task, completed=done + failed, total=total, cells=cells)

    def close(self) -> None:
        if self.started:
            self.bar.stop()


def print_sweep(meta: dict[str, Any], summary: pd.DataFrame, console: Console) -> None:
    """One row per complete cell (CV over its seeds), then the failed cells with their errors."""
    keys = meta["keys"]
    cells = meta["cells"]
    done = sum(c["status"] == "complete" for c in cells)
    table = Table(
        title=f"{meta['name']}: {done}/{len(cells)} cells complete, {len(meta['seeds'])} seeds",
        title_justify="left",
    )
    table.add_column("cell", justify="right")
    for key in keys:
        table.add_column(key, justify="right", no_wrap=True)
    for col in ("CV mean", "CV 95% CI", "max", "min", "failed"):
        table.add_column(col, justify="right", no_wrap=True)
    for cell, group in summary.groupby("cell", sort=True):
        row = by_strategy(group).iloc[0]
        values = meta["cells"][cell]["values"]
        table.add_row(
            str(cell),
            *(str(values[k]) for k in keys),
            _fmt(row["cv_mean"]),
            f"{_fmt(row['cv_lo'])}-{_fmt(row['cv_hi'])}",
            f"{row['max_count']:.1f}",
            f"{row['min_count']:.1f}",
            f"{row['failed']:.1f}",
        )
    console.print(table)
    for c in cells:
        if c["status"] == "failed":
            console.print(f"[red]cell {c['cell']} failed[/red] {c['values']}: {c['error']}")
