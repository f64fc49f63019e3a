"""`harness report`: one HTML file per run or sweep folder, with its pictures inside as PNG
data URIs and no script or outside link, so it opens in any browser without the harness."""

from __future__ import annotations

import base64
import html
from pathlib import Path

import pandas as pd

from harness import interrupts, testing_signals
from harness.config import Config, stored_config
from harness.config.sweep_file import get_value
from harness.model.cluster.heartbeat import HeartbeatPlan
from harness.model.cluster.phases import PHASES
from harness.model.scheduling.placement.record import drawn
from harness.presentation import plots, series
from harness.presentation.headline import headline, plugins_line, same_as
from harness.presentation.placer import per_strategy, placed_by
from harness.presentation.search_report import search_page
from harness.results.atomic_files import write_text
from harness.results.comparison import FILE as COMPARISON_FILE
from harness.results.comparison import UNCHANGED
from harness.results.comparison import read as read_comparison
from harness.results.folder_policy import marker
from harness.results.run_reader import open_run
from harness.results.search_folder import is_search
from harness.results.statistics import (
    FLAT_TOLERANCE,
    Contrast,
    bin_width,
    by_strategy,
    contrasts,
    cv_by,
    flat,
    median_seed,
    pooled_load,
    utilisation_varies,
)
from harness.results.summary_columns import OVERLOADED
from harness.results.sweep_folder import cell_batches, is_sweep, load_sweep_results, read_cells
from harness.results.time_keeping import kept_by_strategy, line, mark, run_verdict

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1200px; color: #222;
       padding: 0 1em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; }
figure { margin: 1em 0; } img { max-width: 100%; }
figcaption, .note { color: #555; font-size: 0.9em; }
table { border-collapse: collapse; font-size: 0.85em; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.4em; text-align: right; }
td { white-space: nowrap; }
.wide { overflow-x: auto; }
.bad { color: #b00; }
.story { font-size: 1.05em; line-height: 1.5; }
summary { font-size: 1.2em; font-weight: bold; margin-top: 1.5em; cursor: pointer; }
"""
MAX_BEATS = 60
PLACE_MS = ("p50_place_ms", "p90_place_ms", "p99_place_ms")
LATE_MS = ("heartbeat_late_p50_ms", "heartbeat_late_p99_ms")


def write_report(folder: str | Path) -> Path:
    """Write `report.html` into a run's, a sweep's or a search's folder; return its path."""
    folder = Path(folder)
    if is_search(folder):
        title, body = search_page(folder)
    else:
        title, body = _sweep(folder) if is_sweep(folder) else _run(folder)
    page = (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head>"
        f"<body><h1>{html.escape(title)}</h1>\n{body}\n</body></html>\n"
    )
    out = folder / "report.html"
    testing_signals.at("report")
    interrupts.poll()
    write_text(out, page)  # whole or not at all: a full disk leaves the previous report
    return out


def _figure(png: bytes, alt: str, caption: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return (
        f'<figure><img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'
        f"<figcaption>{html.escape(caption)}</figcaption></figure>"
    )


def _table(frame: pd.DataFrame) -> str:
    """A table that scrolls on its own when wider than the window, rather than the page.
    Numbers to 3 decimals, but a column of whole numbers (counts, or their means over equal
    seeds) as integers: 500, not 500.000."""
    whole = [c for c in frame.select_dtypes("float") if (frame[c].dropna() % 1 == 0).all()]
    table = frame.to_html(
        index=False,
        na_rep="-",
        float_format=lambda x: f"{x:.3f}",
        formatters=dict.fromkeys(whole, lambda x: f"{x:.0f}"),
        border=0,
    )
    return f'<div class="wide">{table}</div>'


COUNT = "{:.1f}"
"""The form of a count column (a mean over seeds), unless all its values are whole."""
RUN_COLUMNS = [
    ("strategy", ("strategy",), "{}"),
    ("scheduler", ("scheduler",), "{}"),
    ("violations", ("violations",), COUNT),
    ("seeds", ("seeds",), "{}"),
    ("CV mean", ("cv_mean",), "{:.3f}"),
    ("CV 95% CI", ("cv_lo", "cv_hi"), "{:.3f}-{:.3f}"),
    ("CV median", ("cv_median",), "{:.3f}"),
    ("CV time", ("cv_time_mean",), "{:.3f}"),
    ("herd x", ("herd_ratio",), "{:.2f}"),
    ("util CV mean", ("util_cv_mean",), "{:.3f}"),
    ("util CV 95% CI", ("util_cv_lo", "util_cv_hi"), "{:.3f}-{:.3f}"),
    ("alloc CV", ("alloc_cv_mean",), "{:.3f}"),
    ("util mean %", ("util_mean",), "{:.1f}"),
    ("busiest", ("max_count",), COUNT),
    ("idlest", ("min_count",), COUNT),
    ("placed", ("placed",), COUNT),
    ("failed", ("failed",), COUNT),
    ("asks mean / max", ("asks_mean", "asks_max"), "{:.2f} / {:.0f}"),
    ("creates/s", ("creates_per_s",), "{:.1f}"),
    ("kills/s", ("kills_per_s",), "{:.1f}"),
    ("latency ms p50 / p90 / p99", PLACE_MS, "{:.1f} / {:.1f} / {:.1f}"),
    ("|err| vCPU", ("err_mean_abs",), "{:.2f}"),
    ("err %", ("err_nonzero_frac",), "{:.1%}"),
    ("create RPC ms p50 / p99", ("create_rpc_p50_ms", "create_rpc_p99_ms"), "{:.1f} / {:.1f}"),
    ("beat late ms p50 / p99", LATE_MS, "{:.1f} / {:.1f}"),
]
"""The run table of the report: header, the columns of `by_strategy` it shows, and how.
Means over seeds are of the per-seed figures; rates and latencies are pooled over every
request of every seed. A column with nothing in it (the interval of one seed, the Ray figures
of a virtual run) is left out."""


def _run_table(rows: pd.DataFrame, kept: dict[str, tuple[int, int]]) -> str:
    """The run table; for a run in real time, each strategy's time keeping beside its name
    (`harness.results.time_keeping.by_strategy`), overloaded rows in red."""
    cells = {}
    for header, columns, form in RUN_COLUMNS:
        values = rows[list(columns)]
        known = values.notna().all(axis=1)
        if form == COUNT and (values.dropna() % 1 == 0).all(axis=None):
            form = "{:.0f}"  # counts (or means of equal counts) as integers: 500, not 500.0
        if known.any():
            cells[header] = [
                form.format(*v) if ok else "-"
                for v, ok in zip(values.itertuples(index=False), known, strict=True)
            ]
    if kept:
        marks = [mark(kept[s]) if s in kept else "-" for s in rows["strategy"]]
        cells = {"strategy": cells.pop("strategy"), KEPT: marks, **cells}
    notes = " ".join(text for header, text in RUN_NOTES if header is None or header in cells)
    table = _table(pd.DataFrame(cells)).replace(BAD_CELL, f'<td class="bad">{OVERLOADED.upper()}')
    return table + f'<p class="note">{html.escape(notes)}</p>'


KEPT = "time keeping"
"""The run table's column of each strategy's time keeping (a run in real time only)."""
BAD_CELL = f"<td>{OVERLOADED.upper()}"
"""How a cell of a strategy that ran overloaded begins (`mark`), before it is marked red."""

RUN_NOTES: tuple[tuple[str | None, str], ...] = (
    (
        KEPT,
        "time keeping: whether each strategy's seeds kept the model's time on an engine in real "
        "time, or how many ran OVERLOADED: its figures may then describe the machine, not the "
        "scheduler.",
    ),
    (
        "CV time",
        "CV time: the CV of sandboxes per node over the run, time-weighted, rather than at its "
        "end; herd x: in each report interval, the most chosen node's share of the placements "
        "over what an even spread gives it (1: even).",
    ),
    (
        None,
        "busiest, idlest: the busiest and idlest node's sandboxes at the end; placed, failed: "
        "creates; each a mean over seeds. |err|: believed minus true allocated vCPU per node "
        "and replica, its time-weighted mean; err %: the share of node-time with any error.",
    ),
    (
        "scheduler",
        "scheduler: the external scheduler that placed, as its Hello named itself; the "
        "strategy is the harness's ledger of its view.",
    ),
    (
        "violations",
        "violations: creates per seed the scheduler placed against an eligibility rule.",
    ),
    (
        "asks mean / max",
        "asks: times a create was asked of the scheduler (1, plus one per refusal or failed "
        "RPC), mean over creates and the most of any create.",
    ),
    (
        "util CV mean",
        "util CV: the spread (CV) of the nodes' CPU utilisation at the end, alloc CV of their "
        "allocated vCPUs; util mean %: the mean utilisation.",
    ),
    (
        "create RPC ms p50 / p99",
        "create RPC: the create call's round trip; beat late: how late heartbeats arrived; "
        "model ms, real-time engines only.",
    ),
)
"""What the run table's columns mean, under it; a column's line only when it is shown (None:
always), as the terminal's caption (`harness.presentation.terminal.CAPTIONS`)."""


def _beats(config: Config) -> tuple[list[float], str]:
    """When reports are applied (the run's own heartbeat plan), to mark on time axes, and how
    the caption names them."""
    interval = config.heartbeat.interval_s
    together = PHASES[config.heartbeat.phase].together
    if together and config.run.duration_s / interval > MAX_BEATS:
        # counted before any list of them is made: 1e-9 s over a minute would be 6e10 floats
        return [], f"none drawn: all nodes report every {interval:g} s"
    applied = HeartbeatPlan(config.heartbeat, config.run.duration_s).applied_at()
    if applied is None:
        return [], f"none drawn: each node reports every {interval:g} s at its own phase"
    if len(applied) > MAX_BEATS:
        return [], f"none drawn: all nodes report every {interval:g} s"
    return applied, f"all nodes report every {interval:g} s, the first at t = 0"


def _over_seeds(seeds: int) -> str:
    """How a figure sums up its seeds, true for their number: no band from one seed."""
    if seeds == 1:
        return "One seed, so no band"
    return f"Mean over {seeds} seeds with its 95% bootstrap band"


SAME = (
    "Strategies whose lines are identical are drawn once and named together in the legend "
    '("a = b (identical)"); markers and dashes tell the others apart.'
)


def _chart(title: str, figure: str, same: bool) -> str:
    """A chart under its heading; folded (`<details>`) when it is the same for every strategy,
    its heading saying so."""
    if not same:
        return f"<h2>{html.escape(title)}</h2>\n{figure}"
    return (
        f"<details><summary>{html.escape(title)}: the same for every strategy (within "
        f"{FLAT_TOLERANCE:.0%} at every point)</summary>\n{figure}</details>"
    )


def _scenario(
    summary: pd.DataFrame,
    nodes: pd.DataFrame,
    batches: series.Batches,
    config: Config,
    found: list[Contrast],
    uniform: bool,
) -> str:
    """The pictures of one scenario, every strategy side by side: the herd, then the charts
    over time that tell the strategies apart (CV, how wrong each scheduler's view was,
    latency, throughput), then, folded, those that are the same for every strategy. The
    static-score shares are drawn only when the sampler drew its K candidates `uniform`ly
    (`Sampler.uniform`): they describe no other."""
    strategies = list(dict.fromkeys(summary["strategy"]))
    seeds = int(summary.groupby("strategy")["seed"].nunique().min())
    seeds_text = "the one seed" if seeds == 1 else f"the {seeds} seeds"
    per_seed = "in the one seed" if seeds == 1 else f"mean over the {seeds} seeds"
    palette = plots.colors(strategies)
    panels = []
    for strategy in strategies:
        seed = median_seed(summary, strategy)
        row = summary[(summary["strategy"] == strategy) & (summary["seed"] == seed)].iloc[0]
        picked = nodes[(nodes["strategy"] == strategy) & (nodes["seed"] == seed)]
        panels.append(
            plots.NodeCounts(
                strategy,
                seed,
                float(row["cv"]),
                picked["sandboxes"].tolist(),
                int(row["k"]) if uniform else None,
                int(row["placed"] - row["kills"]),
            )
        )
    # A strategy that equals another says why, under the picture that names them equal.
    caption = "Final sandboxes per node of each strategy's median-CV seed, busiest node first. " + (
        "Dashed: the shares C(n-i, K-1)/C(n, K) a view that never updates gives the node "
        "of rank i (the herd at its worst); dotted: every node equal."
        if uniform
        else "Dotted: every node equal."
    )
    twins = [same_as(c) for c in found if c.same_as]
    parts = [
        "<h2>Sandboxes per node</h2>",
        _figure(
            plots.node_counts(panels, palette),
            "sandboxes per node for each strategy",
            " ".join([caption, *twins]),
        ),
    ]
    charts: list[tuple[str, str, bool]] = []  # (heading, figure, the same for every strategy)
    run = config.run
    samples = series.timeline_samples(batches, nodes, run.sample_interval_s, run.duration_s)
    if not samples.empty:
        beats, note = _beats(config)
        over_time = series.cv_over_time(samples)
        charts.append(
            (
                "CV over time",
                _figure(
                    plots.cv_over_time(over_time, palette, beats),
                    "CV of sandboxes per node over time for each strategy",
                    f"{_over_seeds(seeds)}. Heartbeats: {note}. Dashed: the CV of throwing the "
                    "same number of sandboxes uniformly at random, sqrt((n-1)/m). The value axis "
                    "is logarithmic (and says so) when a strategy's line would sit in the bottom "
                    "tenth of a linear one. " + SAME,
                ),
                flat(over_time, ["cv_mean"]),
            )
        )
        if utilisation_varies(summary):
            utilisation = series.cv_over_time(samples, "util_cv")
            charts.append(
                (
                    "Utilisation CV over time",
                    _figure(
                        plots.cv_over_time(utilisation, palette, beats, "node utilisation"),
                        "CV of node utilisation over time for each strategy",
                        f"{_over_seeds(seeds)}, of each node's actual CPU use over its vCPUs "
                        "(cpu_percent / cpu_count): upstream's load imbalance coefficient as the "
                        "run goes. Sandboxes here differ in size or usage, so it is not the CV "
                        "of their counts. " + SAME,
                    ),
                    flat(utilisation, ["cv_mean"]),
                )
            )
        if samples["error"].notna().any():  # an engine may not know the view
            accounting = series.accounting_over_time(samples)
            charts.append(
                (
                    "Accounting error over time",
                    _figure(
                        plots.accounting(accounting, palette),
                        "accounting error over time for each strategy",
                        "What the scheduler believes a node has allocated minus what it truly "
                        f"has, per node, {per_seed}. Below zero: placed sandboxes it cannot see "
                        "yet; above: sandboxes counted twice or already gone. " + SAME,
                    ),
                    flat(accounting, ["error", "abs_error"]),
                )
            )
    width = bin_width(config.run.duration_s)
    latency, throughput = series.request_series(batches, summary, width)
    if not throughput.empty:
        charts += [
            (
                "Placement latency over time",
                _figure(
                    plots.latency_over_time(latency, palette),
                    "placement latency over time for each strategy",
                    f"p50 and p99 latency of the placed creates issued in each {width:g} s "
                    f"interval, over every request of {seeds_text} at once (read off "
                    f"buckets {series.LATENCY_ACCURACY:.1%} apart). The value axis is "
                    "logarithmic (and says so) when a strategy's line would sit in the bottom "
                    "tenth of a linear one. " + SAME,
                ),
                flat(latency, ["p50", "p99"]),
            ),
            (
                "Throughput over time",
                _figure(
                    plots.throughput_over_time(throughput, palette),
                    "throughput over time for each strategy",
                    f"Creates placed, creates failed and kills answered per second in each "
                    f"{width:g} s interval, {per_seed}; a kind that never "
                    "happened has no panel. " + SAME,
                ),
                flat(throughput, list(plots.THROUGHPUT)),
            ),
        ]
    parts += [_chart(*chart) for chart in charts if not chart[2]]
    if samples.empty:
        parts.append('<p class="note">No timeline was recorded (run.sample_interval_s = 0).</p>')
    parts += [_chart(*chart) for chart in charts if chart[2]]
    return "\n".join(parts)


def _run(folder: Path) -> tuple[str, str]:
    run = open_run(folder)
    meta = run.meta
    config = stored_config(meta["config"], folder / marker("run"))
    summary, nodes = run.frame("summary"), run.frame("nodes")
    title = f"{config.run.name}: {meta.get('engine')} engine, {config.cluster.node_count} nodes"
    state = "" if meta.get("completed") else ' <span class="bad">(incomplete run)</span>'
    plugins = meta.get("plugins", {})
    k = "" if plugins.get("k") is None else f", K = {plugins['k']}"
    head = f"<p>{len(meta.get('seeds', []))} seeds{k}{state}</p>"
    if summary.empty:
        return title, head + '<p class="bad">No seed finished: nothing to show.</p>'
    found = contrasts(summary, nodes)
    pipeline = plugins_line(plugins)
    kept, marks = run_verdict(summary), kept_by_strategy(summary)
    # The time keeping before every claim drawn from the seeds, in red when overloaded.
    verdict = line(kept)
    if verdict:
        loud = ' class="bad"' if kept is not None and kept["verdict"] == OVERLOADED else ""
        head += f"<p{loud}><strong>{html.escape(verdict)}</strong></p>"
    story = "".join(
        f"<li>{html.escape(told)}</li>" for told in headline(found, None, placed_by(summary), marks)
    )
    head += (f'<p class="note">{html.escape(pipeline)}</p>' if pipeline else "") + (
        f'<ul class="story">{story}</ul>'
    )
    table = _run_table(
        by_strategy(summary, pooled_load(summary, run.batches)).merge(
            per_strategy(summary), on="strategy"
        ),
        marks,
    )
    scenario = _scenario(
        summary,
        nodes,
        run.batches,
        config,
        found,
        bool(plugins.get("uniform")),
    )
    return title, "\n".join([head, table, _baseline(folder), scenario])


def _sweep(folder: Path) -> tuple[str, str]:
    meta, summary = load_sweep_results(folder)
    base = stored_config(meta["identity"]["base"], folder / marker("sweep"))
    cells = meta["cells"]
    done = [c for c in cells if c["status"] == "complete"]
    title = f"Sweep {meta['name']}"
    parts = [
        f"<p>{len(done)} of {len(cells)} cells complete, {len(meta['seeds'])} seeds each; "
        f"varied: {html.escape(', '.join(meta['keys']))}.</p>"
    ]
    failed = [c for c in cells if c["status"] == "failed"]
    if failed:
        rows = pd.DataFrame(
            [{"cell": c["cell"], **c["values"], "error": c["error"]} for c in failed]
        )
        parts += ['<h2 class="bad">Failed cells</h2>', _table(rows)]
    if summary.empty:
        return title, "\n".join([*parts, '<p class="bad">No cell complete: nothing to show.</p>'])
    strategies = list(dict.fromkeys(summary["strategy"]))
    palette = plots.colors(strategies)
    axes = [k for k in meta["grid_keys"] if k != "placement.strategy"]
    linked = meta["identity"]["linked"]
    if len(axes) == 2:
        parts += [
            "<h2>CV across the grid</h2>",
            _figure(
                plots.heatmaps(cv_by(summary, ["strategy", *axes]), *axes),
                "heat maps of CV mean per strategy",
                f"CV mean over {len(meta['seeds'])} seeds for each {axes[0]} (rows) and "
                f"{axes[1]} (columns).",
            ),
        ]
    else:
        for key in axes:
            along = [k for k, spec in linked.items() if spec["with"] == key]
            name = key + (f" (with {', '.join(along)})" if along else "")
            others = [k for k in axes if k != key]
            lines = cv_by(summary, ["strategy", key])
            runs = int(lines["seeds"].min())  # seeds, times the cells pooled over `others`
            pooled = f" Each point pools the seeds of every {', '.join(others)}." if others else ""
            parts += [
                f"<h2>CV against {html.escape(key)}</h2>",
                _figure(
                    plots.sweep_lines(lines, key, name, palette),
                    f"CV against {key} for each strategy",
                    f"{_over_seeds(runs)}.{pooled} Dashed: uniform random placement of the "
                    "same sandboxes, sqrt((n-1)/m). The value axis is logarithmic (and says "
                    "so) when a strategy's line would sit in the bottom tenth of a linear "
                    "one. " + SAME,
                ),
            ]
    featured, why = _featured(done, axes, base)
    chosen = [c["cell"] for c in featured]
    config = base.with_values(featured[0]["values"])
    parts.append(f"<h2>One point of the grid</h2><p>{html.escape(why)}</p>")
    featured_summary = summary[summary["cell"].isin(chosen)]
    nodes = read_cells(folder, "nodes", chosen)
    parts.append(
        _scenario(
            featured_summary,
            nodes,
            cell_batches(folder, chosen),
            config,
            contrasts(featured_summary, nodes),
            bool(drawn(config.placement, config.cluster.node_count, config.external.active)[1]),
        )
    )
    parts += ["<h2>Every cell</h2>", _table(cv_by(summary, ["cell", *meta["keys"]]))]
    return title, "\n".join([*parts, _baseline(folder)])


def _baseline(folder: Path) -> str:
    """The section of a folder compared with a baseline (`harness compare`, `harness run
    --baseline`): what was compared and how, a forest plot of the changes, and the changes
    judged; nothing when the folder was never compared."""
    path = folder / COMPARISON_FILE
    if not path.is_file():
        return ""
    rows, said = read_comparison(path)
    if rows.empty:
        return ""
    lines = [f"Against {said.get('base', 'a baseline')}.", *said.get("notes", [])]
    notes = "".join(f'<p class="note">{html.escape(str(line))}</p>' for line in lines)
    notes += "".join(
        f'<p class="bad">warning: {html.escape(str(w))}</p>' for w in said.get("warnings", [])
    )
    unchanged = int((rows["verdict"] == UNCHANGED).sum())
    judged = rows[rows["verdict"] != UNCHANGED]
    shown = ["cell_values", "strategy", "column", "base", "new", "change", "change_lo"]
    shown += ["change_hi", "p", "verdict"]
    if not judged["cell_values"].astype(bool).any():
        shown.remove("cell_values")
    table = _table(judged[shown]) if len(judged) else "<p>No column changed.</p>"
    caption = (
        f"Change of each column from the baseline's mean, with its 95% interval; "
        f"{unchanged} of {len(rows)} compared figures unchanged (~)."
    )
    return "\n".join(
        [
            "<h2>Against the baseline</h2>",
            notes,
            _figure(plots.forest(rows), "changes from the baseline", caption),
            table,
        ]
    )


def _featured(done: list[dict], axes: list[str], base: Config) -> tuple[list[dict], str]:
    """The complete cells (one per strategy) at the base config's values of the swept keys,
    else at the first complete cell's: the scenario drawn in detail."""
    if not axes:
        return done, "Every cell: only the strategy varies."
    at_base = {k: get_value(base, k) for k in axes}
    matching = [c for c in done if all(c["values"][k] == v for k, v in at_base.items())]
    if matching:
        where = ", ".join(f"{k} = {plots.label(v)}" for k, v in at_base.items())
        return matching, f"Cells at {where} (the base config's values)."
    first = {k: done[0]["values"][k] for k in axes}
    where = ", ".join(f"{k} = {plots.label(v)}" for k, v in first.items())
    return [c for c in done if all(c["values"][k] == v for k, v in first.items())], (
        f"Cells at {where} (the base config's values are not among the complete cells)."
    )
