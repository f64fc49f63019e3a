"""The report's pictures, as PNG bytes. Figures are drawn on matplotlib's Agg canvas directly
(no pyplot, no display, no global state), so reports can be made anywhere, even in workers."""

from __future__ import annotations

import io
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from harness.analysis import rank_shares

THEORY = {"color": "0.35", "linestyle": "--", "linewidth": 1.2}


def colors(strategies: list[str]) -> dict[str, dict]:
    """Line style per strategy, in the order they are listed: its own colour, and a width that
    shrinks down the list so a strategy drawn over an identical one leaves it visible."""
    palette = colormaps["tab10"]
    return {
        s: {"color": palette(i % 10), "linewidth": max(1.2, 3.5 - 0.7 * i)}
        for i, s in enumerate(strategies)
    }


def label(value: object) -> str:
    """A swept value as a tick label: 0.1 rather than 0.1000, names as they are."""
    return f"{value:g}" if isinstance(value, float) else str(value)


def _png(fig: Figure) -> bytes:
    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    return buf.getvalue()


def _grid(n: int, width: float, height: float, cols: int = 4) -> tuple[Figure, list]:
    cols = min(n, cols)
    rows = math.ceil(n / cols)
    fig = Figure(figsize=(width * cols, height * rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False, sharey=True)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, list(axes.flat[:n])


@dataclass
class NodeCounts:
    """One strategy's final sandboxes per node in one seed, with what the theory needs."""

    strategy: str
    seed: int
    cv: float
    counts: list[int]
    k: int
    placed: int


def node_counts(panels: list[NodeCounts], palette: dict[str, dict]) -> bytes:
    """Sandboxes per node, busiest first, one panel per strategy side by side: the herd is a
    tall left edge. Dashed: the static-score shares C(n-i, K-1)/C(n, K) of the placed ones
    (a view that never updates); dotted: the even spread."""
    fig, axes = _grid(len(panels), 4.2, 3.2)
    for ax, p in zip(axes, panels, strict=True):
        counts = np.sort(np.asarray(p.counts))[::-1]
        ranks = np.arange(1, len(counts) + 1)
        if len(counts) <= 100:
            ax.bar(ranks, counts, width=0.85, color=palette[p.strategy]["color"])
        else:
            ax.fill_between(ranks, counts, step="mid", color=palette[p.strategy]["color"])
        shares = np.asarray(rank_shares(len(counts), min(p.k, len(counts)))) * p.placed
        ax.plot(ranks, shares, label="static-score shares", **THEORY)
        ax.axhline(p.placed / len(counts), color="0.35", linestyle=":", label="even spread")
        ax.set_title(f"{p.strategy}: seed {p.seed}, CV {p.cv:.3f}", fontsize=10)
        ax.set_xlabel("nodes, busiest first")
    axes[0].set_ylabel("sandboxes on the node")
    axes[0].legend(fontsize=8, loc="upper right")
    return _png(fig)


def cv_over_time(frame: pd.DataFrame, palette: dict[str, dict], beats: list[float]) -> bytes:
    """CV of sandboxes per node over the run, per strategy (mean over seeds, 95% band), with
    heartbeat times as vertical lines and the uniform-random CV sqrt((n-1)/m) dashed."""
    fig = Figure(figsize=(9, 4), layout="constrained")
    ax = fig.subplots()
    for t in beats:
        ax.axvline(t, color="0.8", linewidth=0.8, zorder=0)
    for strategy, g in frame.groupby("strategy", sort=False):
        ax.plot(g["t"], g["cv_mean"], label=strategy, **palette[strategy])
        ax.fill_between(g["t"], g["cv_lo"], g["cv_hi"], color=palette[strategy]["color"], alpha=0.2)
    theory = frame.groupby("t")[["sandboxes", "nodes"]].mean()
    theory = theory[theory["sandboxes"] >= 1]
    ax.plot(
        theory.index,
        np.sqrt((theory["nodes"] - 1) / theory["sandboxes"]),
        label="uniform random",
        **THEORY,
    )
    ax.set_xlabel("time (s); grey lines: heartbeats applied")
    ax.set_ylabel("CV of sandboxes per node")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    return _png(fig)


def accounting(frame: pd.DataFrame, palette: dict[str, dict]) -> bytes:
    """Believed minus true allocated vCPUs per node over the run, signed and absolute."""
    fig = Figure(figsize=(9, 3.4), layout="constrained")
    signed, absolute = fig.subplots(1, 2)
    for strategy, g in frame.groupby("strategy", sort=False):
        signed.plot(g["t"], g["error"], label=strategy, **palette[strategy])
        absolute.plot(g["t"], g["abs_error"], label=strategy, **palette[strategy])
    signed.axhline(0, color="0.5", linewidth=0.8)
    signed.set_title("mean (view - true) per node, vCPU", fontsize=10)
    absolute.set_title("mean |view - true| per node, vCPU", fontsize=10)
    for ax in (signed, absolute):
        ax.set_xlabel("time (s)")
    signed.legend(fontsize=8)
    return _png(fig)


def _positions(values: list) -> tuple[np.ndarray, bool]:
    """x positions of a swept key's values, and whether a log axis shows them best."""
    try:
        x = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        return np.arange(len(values), dtype=float), False
    return x, bool(np.all(x > 0) and x.max() / x.min() >= 20)


def sweep_lines(frame: pd.DataFrame, key: str, title: str, palette: dict[str, dict]) -> bytes:
    """CV (mean over seeds, 95% band) against one swept key, a line per strategy, and the
    uniform-random CV for the same nodes and sandboxes."""
    fig = Figure(figsize=(9, 4.2), layout="constrained")
    ax = fig.subplots()
    values = list(dict.fromkeys(frame[key]))
    x, log = _positions(values)
    where = {v: x[i] for i, v in enumerate(values)}
    for strategy, g in frame.groupby("strategy", sort=False):
        gx = [where[v] for v in g[key]]
        ax.plot(gx, g["cv_mean"], marker="o", label=strategy, **palette[strategy])
        ax.fill_between(gx, g["cv_lo"], g["cv_hi"], color=palette[strategy]["color"], alpha=0.2)
    theory = frame.groupby(key, sort=False)["uniform_cv"].mean()
    ax.plot([where[v] for v in theory.index], theory.values, label="uniform random", **THEORY)
    if log:
        ax.set_xscale("log")
    ax.set_xticks(x, [label(v) for v in values])
    ax.minorticks_off()
    ax.set_xlabel(title)
    ax.set_ylabel("CV of sandboxes per node")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    return _png(fig)


def heatmaps(frame: pd.DataFrame, rows: str, cols: str) -> bytes:
    """CV mean over seeds for every pair of two swept keys, one map per strategy, one scale."""
    strategies = list(dict.fromkeys(frame["strategy"]))
    fig, axes = _grid(len(strategies), 4.4, 3.6, cols=3)
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
        ax.set_title(strategy, fontsize=10)
        ax.set_xlabel(cols)
    axes[0].set_ylabel(rows)
    fig.colorbar(image, ax=axes, label="CV mean")
    return _png(fig)
