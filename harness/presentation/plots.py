"""The report's pictures, as PNG bytes. Figures are drawn on matplotlib's Agg canvas directly
(no pyplot, no display, no global state), so reports can be made anywhere, even in workers."""

from __future__ import annotations

import io
import math
import textwrap
from dataclasses import dataclass

import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.layout_engine import TightLayoutEngine
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from harness import interrupts
from harness.results.statistics import rank_shares

THEORY = {"color": "0.35", "linestyle": "--", "linewidth": 1.2}
MARKERS = "osD^vPX*<>"
LINESTYLES = ("-", "--", "-.", ":")
MARKS_PER_LINE = 12
"""Markers drawn along a long line: enough to tell lines apart, few enough to see the line."""
DWARFED = 10.0
"""A value axis turns logarithmic when another series' highest value is this many times a
series' median: on a linear axis that series would sit in the bottom tenth."""


def colors(strategies: list[str]) -> dict[str, dict]:
    """Style per strategy, in the order they are listed: its own colour, marker and dash
    pattern, so lines that run close stay apart in print and for colour-blind readers."""
    palette = colormaps["tab10"]
    return {
        s: {
            "color": palette(i % 10),
            "marker": MARKERS[i % len(MARKERS)],
            "linestyle": LINESTYLES[i % len(LINESTYLES)],
            "linewidth": 1.6,
            "markersize": 6,
            "markerfacecolor": "none",  # hollow: a marker drawn on another leaves it visible
            "markeredgewidth": 1.3,
        }
        for i, s in enumerate(strategies)
    }


def identical(frame: pd.DataFrame, columns: list[str]) -> list[list[str]]:
    """Strategies grouped by identical series (the same values of `columns`, row by row, in
    the frame's order), in first-seen order: each group is drawn once and named as one."""
    groups: list[tuple[pd.DataFrame, list[str]]] = []
    for strategy, g in frame.groupby("strategy", sort=False):
        values = g[columns].reset_index(drop=True)
        same = next((members for seen, members in groups if seen.equals(values)), None)
        if same is None:
            groups.append((values, [strategy]))
        else:
            same.append(strategy)
    return [members for _, members in groups]


LEGEND_WIDTH = 34
"""Characters per line of a legend entry: a long group wraps rather than squeezing the plot."""


def group_label(members: list[str]) -> str:
    """A legend entry for strategies drawn as one line: `a = b (identical)`, wrapped."""
    text = members[0] if len(members) == 1 else " = ".join(members) + " (identical)"
    return textwrap.fill(text, LEGEND_WIDTH)


def _line(
    ax: Axes, x: pd.Series, y: pd.Series, style: dict, label: str | None, index: int = 0
) -> None:
    """A line with its markers thinned out on long series, offset by `index` so the markers
    of lines drawn over each other do not land on the same points."""
    n = len(x)
    step = max(1, n // MARKS_PER_LINE)
    ax.plot(x, y, label=label, markevery=(index % step, step), **style)


def _log_if_dwarfed(ax: Axes, series: list[np.ndarray], name: str) -> None:
    """A log value axis when another series' top is DWARFED times a series' median (positive
    values), so the small ones are not squashed into the bottom of the axis; says so in its
    label."""
    drawn = [v[v > 0] for v in series if np.any(v > 0)]
    tops = [float(np.nanmax(v)) for v in drawn]
    if any(
        DWARFED * np.nanmedian(v) <= max(tops[:i] + tops[i + 1 :], default=0.0)
        for i, v in enumerate(drawn)
    ):
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))  # 0.05, not 5e-2
        ax.yaxis.set_minor_formatter(NullFormatter())
        name += " (log scale)"
    ax.set_ylabel(name)


def _from_zero(ax: Axes, series: list[np.ndarray]) -> None:
    """A linear value axis from 0 with room above the highest value, so that a flat line is
    not drawn on the frame of the axes (a log axis is left as it is)."""
    if ax.get_yscale() != "linear":
        return
    top = max((float(np.nanmax(v)) for v in series if np.any(np.isfinite(v))), default=0.0)
    ax.set_ylim(0, max(ax.get_ylim()[1], 1.1 * top) or 1.0)


def _legend_outside(fig: Figure, ax: Axes) -> None:
    """One legend for the figure, in its top right corner; `_png` keeps the panels left of
    it, so it is never over the data."""
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper right", fontsize=8)


def label(value: object) -> str:
    """A swept value as a tick label: 0.1 rather than 0.1000, names as they are."""
    return f"{value:g}" if isinstance(value, float) else str(value)


DPI = 100
"""Pixels per inch of every figure, measured and drawn (whatever a matplotlibrc says)."""
PAD = 0.4
"""Room around the panels' labels and between panels, in font sizes."""


def new_figure(width: float, height: float) -> Figure:
    """A figure of `width` x `height` inches with no layout engine: `_png` fits its panels
    once, where an engine would fit them again at every draw, and savefig draws twice."""
    return Figure(figsize=(width, height), dpi=DPI)


def _title(ax: Axes, text: str) -> None:
    """A panel's title at its fixed place above the panel: matplotlib would otherwise measure
    the x axis at every draw to lift the title over top ticks, and these have none."""
    ax.set_title(text, fontsize=10, y=1.0)


def _lay_out(fig: Figure) -> None:
    """Panels fitted once around their titles, labels and tick labels (a tight layout), left
    of the figure's legends, which so stay outside every panel."""
    renderer = FigureCanvasAgg(fig).get_renderer()
    for ax in fig.axes:  # a frame lies on its panel's edge, its ticks within PAD: not measured
        for spine in ax.spines.values():
            spine.set_in_layout(False)
    room = max(
        (
            lg.get_window_extent(renderer).width
            + lg.borderaxespad * renderer.points_to_pixels(lg.prop.get_size_in_points())
            for lg in fig.legends
        ),
        default=0.0,
    )
    TightLayoutEngine(pad=PAD, rect=(0, 0, 1 - room / fig.bbox.width, 1)).execute(fig)


COMPRESS = 3
"""zlib's level for the PNGs: below its default 6, which costs more time than the bytes it
saves are worth in a report (docs/performance.md, the report's drawing)."""


def _png(fig: Figure) -> bytes:
    interrupts.poll()  # a stop asked for is acted on between pictures
    _lay_out(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, pil_kwargs={"compress_level": COMPRESS})
    return buf.getvalue()


BAR = 0.05
"""A colour bar's width, as a share of a panel's."""


def _grid(
    n: int, width: float, height: float, cols: int = 4, bar: bool = False
) -> tuple[Figure, list[Axes], Axes | None]:
    """`n` panels of `width` x `height` inches in rows of `cols`, one value axis shared (its
    tick labels on the first panel of each row), and with `bar` a narrow column right of them
    all for a colour bar: in the grid, so that fitting the panels leaves it room."""
    cols = min(n, cols)
    rows = math.ceil(n / cols)
    fig = new_figure(width * cols, height * rows)
    grid = fig.add_gridspec(rows, cols + bar, width_ratios=[1] * cols + [BAR] * bar)
    axes: list[Axes] = []
    for i in range(n):
        ax = fig.add_subplot(grid[i // cols, i % cols], sharey=axes[0] if axes else None)
        ax.yaxis.set_tick_params(labelleft=i % cols == 0)
        axes.append(ax)
    return fig, axes, fig.add_subplot(grid[:, cols]) if bar else None


@dataclass
class NodeCounts:
    """One strategy's final sandboxes per node in one seed, with what the theory needs."""

    strategy: str
    seed: int
    cv: float
    counts: list[int]
    k: int | None
    """The K of a sampler that draws uniformly (`Sampler.uniform`); None: no theory applies."""
    placed: int


def node_counts(panels: list[NodeCounts], palette: dict[str, dict]) -> bytes:
    """Sandboxes per node, busiest first, one panel per strategy side by side: the herd is a
    tall left edge. Dashed, for a uniform sampler of K (`NodeCounts.k`): the static-score
    shares C(n-i, K-1)/C(n, K) of the placed ones (a view that never updates); dotted: the
    even spread. A panel identical to an earlier one (same seed, same counts) says so in its
    title."""
    fig, axes, _ = _grid(len(panels), 4.2, 3.2)
    for i, (ax, p) in enumerate(zip(axes, panels, strict=True)):
        counts = np.sort(np.asarray(p.counts))[::-1]
        ranks = np.arange(1, len(counts) + 1)
        if len(counts) <= 100:
            ax.bar(ranks, counts, width=0.85, color=palette[p.strategy]["color"])
        else:
            ax.fill_between(ranks, counts, step="mid", color=palette[p.strategy]["color"])
        if p.k is not None:
            shares = np.asarray(rank_shares(len(counts), min(p.k, len(counts)))) * p.placed
            ax.plot(ranks, shares, label="static-score shares", **THEORY)
        ax.axhline(p.placed / len(counts), color="0.35", linestyle=":", label="even spread")
        twin = next((q for q in panels[:i] if (q.seed, q.counts) == (p.seed, p.counts)), None)
        same = f" (= {twin.strategy})" if twin else ""
        _title(ax, f"{p.strategy}{same}\nseed {p.seed}, CV {p.cv:.3f}")
        ax.set_xlabel("nodes, busiest first")
    axes[0].set_ylabel("sandboxes on the node")
    _legend_outside(fig, axes[0])
    return _png(fig)


def cv_over_time(
    frame: pd.DataFrame,
    palette: dict[str, dict],
    beats: list[float],
    of: str = "sandboxes per node",
) -> bytes:
    """CV of sandboxes per node (or of what `of` names: then no theory line) over the run,
    per strategy (mean over seeds, 95% band), with heartbeat times as vertical lines (none
    where nodes report at phases of their own) and the uniform-random CV sqrt((n-1)/m)
    dashed."""
    fig = new_figure(10, 4)
    ax = fig.subplots()
    for t in beats:
        ax.axvline(t, color="0.8", linewidth=0.8, zorder=0)
    series = []
    for i, members in enumerate(identical(frame, ["t", "cv_mean", "cv_lo", "cv_hi"])):
        g = frame[frame["strategy"] == members[0]]
        style = palette[members[0]]
        _line(ax, g["t"], g["cv_mean"], style, group_label(members), i)
        ax.fill_between(g["t"], g["cv_lo"], g["cv_hi"], color=style["color"], alpha=0.2)
        series.append(g["cv_mean"].to_numpy())
    if of == "sandboxes per node":
        theory = frame.groupby("t")[["sandboxes", "nodes"]].mean()
        theory = theory[theory["sandboxes"] >= 1]
        ax.plot(
            theory.index,
            np.sqrt((theory["nodes"] - 1) / theory["sandboxes"]),
            label="uniform random",
            **THEORY,
        )
    ax.set_xlabel("time (s); grey lines: heartbeats applied" if beats else "time (s)")
    _log_if_dwarfed(ax, series, f"CV of {of}")
    _from_zero(ax, series)
    _legend_outside(fig, ax)
    return _png(fig)


def accounting(frame: pd.DataFrame, palette: dict[str, dict]) -> bytes:
    """Believed minus true allocated vCPUs per node over the run, signed and absolute."""
    fig = new_figure(10, 3.4)
    signed, absolute = fig.subplots(1, 2)
    series = []
    for i, members in enumerate(identical(frame, ["t", "error", "abs_error"])):
        g = frame[frame["strategy"] == members[0]]
        style, name = palette[members[0]], group_label(members)
        _line(signed, g["t"], g["error"], style, name, i)
        _line(absolute, g["t"], g["abs_error"], style, None, i)
        series.append(g["abs_error"].to_numpy())
    signed.axhline(0, color="0.5", linewidth=0.8)
    _title(signed, "mean (view - true) per node")
    _title(absolute, "mean |view - true| per node")
    signed.set_ylabel("vCPU")
    _log_if_dwarfed(absolute, series, "vCPU")
    for ax in (signed, absolute):
        ax.set_xlabel("time (s)")
    _legend_outside(fig, signed)
    return _png(fig)


def latency_over_time(frame: pd.DataFrame, palette: dict[str, dict]) -> bytes:
    """p50 and p99 placement latency by when the creates were issued, per strategy, side by
    side on one value axis (`harness.results.statistics.latency_over_time`)."""
    fig = new_figure(10, 3.6)
    axes = fig.subplots(1, 2, sharey=True)
    series = []
    for i, members in enumerate(identical(frame, ["t", "p50", "p99"])):
        g = frame[frame["strategy"] == members[0]]
        style = palette[members[0]]
        for ax, column in zip(axes, ("p50", "p99"), strict=True):
            _line(ax, g["t"], g[column], style, group_label(members) if ax is axes[0] else None, i)
            series.append(g[column].to_numpy())
    for ax, column in zip(axes, ("p50", "p99"), strict=True):
        _title(ax, f"{column} of the creates issued in each interval")
        ax.set_xlabel("time issued (s)")
    _log_if_dwarfed(axes[0], series, "placement latency (ms)")
    _from_zero(axes[0], series)
    _legend_outside(fig, axes[0])
    return _png(fig)


THROUGHPUT = {
    "creates_placed": "creates placed per second",
    "creates_failed": "creates failed per second",
    "kills": "kills answered per second",
}


def throughput_over_time(frame: pd.DataFrame, palette: dict[str, dict]) -> bytes:
    """Creates placed, creates failed and kills answered per second, by when they were
    answered, a panel each (`harness.results.statistics.throughput_over_time`); a kind that never
    happened gets no panel."""
    shown = [c for c in THROUGHPUT if frame[c].any()] or ["creates_placed"]
    fig = new_figure(3.6 * len(shown) + 2.5, 3.4)
    axes = fig.subplots(1, len(shown), squeeze=False)[0]
    for i, members in enumerate(identical(frame, ["t", *shown])):
        g = frame[frame["strategy"] == members[0]]
        for ax, column in zip(axes, shown, strict=True):
            name = group_label(members) if ax is axes[0] else None
            _line(ax, g["t"], g[column], palette[members[0]], name, i)
    for ax, column in zip(axes, shown, strict=True):
        _title(ax, THROUGHPUT[column])
        ax.set_xlabel("time answered (s)")
        _from_zero(ax, [frame[column].to_numpy()])
    axes[0].set_ylabel("per second, mean over seeds")
    _legend_outside(fig, axes[0])
    return _png(fig)


def _positions(values: list) -> tuple[np.ndarray, bool]:
    """x positions of a swept key's values, and whether a log axis shows them best."""
    try:
        x = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        return np.arange(len(values), dtype=float), False
    return x, bool(np.all(x > 0) and x.max() / x.min() >= 20)


def sweep_lines(frame: pd.DataFrame, key: str, title: str, palette: dict[str, dict]) -> bytes:
    """CV (mean over seeds, 95% band) against one swept key, a line per strategy (identical
    ones as one), and the uniform-random CV for the same nodes and sandboxes."""
    fig = new_figure(10, 4.2)
    ax = fig.subplots()
    values = list(dict.fromkeys(frame[key]))
    x, log = _positions(values)
    where = {v: x[i] for i, v in enumerate(values)}
    series = []
    for members in identical(frame, [key, "cv_mean", "cv_lo", "cv_hi"]):
        g = frame[frame["strategy"] == members[0]]
        gx = [where[v] for v in g[key]]
        style = palette[members[0]]
        ax.plot(gx, g["cv_mean"], label=group_label(members), **style)
        ax.fill_between(gx, g["cv_lo"], g["cv_hi"], color=style["color"], alpha=0.2)
        series.append(g["cv_mean"].to_numpy())
    theory = frame.groupby(key, sort=False)["uniform_cv"].mean()
    ax.plot([where[v] for v in theory.index], theory.values, label="uniform random", **THEORY)
    if log:
        ax.set_xscale("log")
    ax.set_xticks(x, [label(v) for v in values])
    ax.minorticks_off()
    ax.set_xlabel(title)
    _log_if_dwarfed(ax, series, "CV of sandboxes per node")
    _from_zero(ax, series)
    _legend_outside(fig, ax)
    return _png(fig)


def heatmaps(frame: pd.DataFrame, rows: str, cols: str) -> bytes:
    """CV mean over seeds for every pair of two swept keys, one map per strategy, one scale."""
    strategies = list(dict.fromkeys(frame["strategy"]))
    fig, axes, bar = _grid(len(strategies), 4.4, 3.6, cols=3, bar=True)
    top = float(np.nanmax(frame["cv_mean"])) if len(frame) else 1.0
    row_values = list(dict.fromkeys(frame[rows]))
    col_values = list(dict.fromkeys(frame[cols]))
    image = None
    for ax, strategy in zip(axes, strategies, strict=True):
        g = frame[frame["strategy"] == strategy]
        grid = np.full((len(row_values), len(col_values)), np.nan)
        for _, r in g.iterrows():
            grid[row_values.index(r[rows]), col_values.index(r[cols])] = r["cv_mean"]
        image = ax.imshow(grid, vmin=0, vmax=top or 1.0, cmap="viridis", aspect="auto")
        for (i, j), v in np.ndenumerate(grid):
            if not np.isnan(v):
                ink = "k" if v > 0.6 * top else "w"  # readable on viridis's light end
                ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=7, color=ink)
        ax.set_xticks(range(len(col_values)), [label(v) for v in col_values], fontsize=8)
        ax.set_yticks(range(len(row_values)), [label(v) for v in row_values], fontsize=8)
        _title(ax, strategy)
        ax.set_xlabel(cols)
    axes[0].set_ylabel(rows)
    fig.colorbar(image, cax=bar, label="CV mean")
    return _png(fig)


VERDICT_COLORS = {
    "worse": "#c0392b",
    "better": "#1e8449",
    "changed": "#7d3c98",
    "~": "0.55",
    "overloaded": "0.75",  # comparison.UNJUDGED: drawn, never judged
}
FOREST_ROWS = 40
"""At most this many changes drawn: the verdicts first, then the unchanged."""


def forest(rows: pd.DataFrame) -> bytes:
    """Each compared (cell, strategy, column) as its change from the baseline, a share of the
    base's mean, with its 95% interval: a dot and a bar per row, coloured by verdict, the
    verdicts at the top. Rows without a relative change (a base of 0) are left out."""
    order = {v: i for i, v in enumerate(VERDICT_COLORS)}
    shown = rows[rows["base"] != 0].assign(_order=rows["verdict"].map(order))
    shown = shown.sort_values("_order", kind="stable").head(FOREST_ROWS).iloc[::-1]
    scale = 100 / shown["base"].abs()
    change, lo, hi = (shown[c] * scale for c in ("change", "change_lo", "change_hi"))
    y = np.arange(len(shown))
    fig = new_figure(8, 1 + 0.28 * max(len(shown), 1))
    ax = fig.subplots()
    ax.axvline(0, **THEORY)
    for verdict, color in VERDICT_COLORS.items():
        mine = (shown["verdict"] == verdict).to_numpy()
        if mine.any():
            ax.errorbar(
                change[mine],
                y[mine],
                xerr=np.clip([(change - lo)[mine], (hi - change)[mine]], 0, None),  # float residue
                fmt="o",
                color=color,
                capsize=3,
                label=verdict,
            )
    where = [f"{v}: " if v else "" for v in shown["cell_values"].fillna("")]
    labels = [
        f"{w}{s} {c}" for w, s, c in zip(where, shown["strategy"], shown["column"], strict=True)
    ]
    ax.set_yticks(y, labels, fontsize=8)
    ax.set_xlabel("change from the baseline, % of its mean (95% interval)")
    ax.legend(loc="best", fontsize=8)
    return _png(fig)
