"""`harness compare` in a terminal: what was compared and how, then per (cell,) strategy the
columns that changed, verdicts first, in 80 columns; the unchanged folded into a count."""

from __future__ import annotations

import math
import textwrap

import pandas as pd

from harness.results.comparison import UNCHANGED, UNJUDGED, VERDICTS, Result
from harness.results.summary_columns import BY_NAME

WIDTH = 80


def _number(x: float) -> str:
    """A mean in at most 8 characters."""
    if math.isnan(x):
        return "-"
    if abs(x) >= 1e6:
        return f"{x:.3g}"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.4g}"


def _relative(row: pd.Series) -> bool:
    """Whether the change reads best as a share of the base (the column's noise band is one)."""
    return BY_NAME[row["column"]].kind.relative and row["base"] != 0


def change_text(row: pd.Series) -> tuple[str, str]:
    """The change and its interval, as a share of the base or in the column's unit."""
    if _relative(row):
        scale = 100 / abs(row["base"])
        return (
            f"{row['change'] * scale:+.1f}%",
            f"{row['change_lo'] * scale:+.1f}..{row['change_hi'] * scale:+.1f}%",
        )
    return f"{row['change']:+.3g}", f"{row['change_lo']:+.3g}..{row['change_hi']:+.3g}"


def _p(p: float) -> str:
    return "<.001" if p < 0.001 else f"{p:.3f}"


def comparison_lines(result: Result) -> list[str]:
    """The comparison as lines of at most WIDTH characters (a column name of over 25
    characters, none today, would widen its rows)."""
    said = [
        f"compare {result.base.folder} -> {result.new.folder}",
        *result.notes,
        *(f"warning: {w}" for w in [*result.overloaded, *result.warnings]),
    ]
    lines = [part for line in said for part in textwrap.wrap(line, WIDTH, subsequent_indent="  ")]
    rows = result.rows
    if rows.empty:
        return [*lines, "nothing to compare: no column has values on both sides"]
    name_width = max(12, *(len(c) for c in rows["column"]))
    header = (
        f"{'column':<{name_width}} {'base':>8} {'new':>8} {'change':>7} "
        f"{'95% interval':>14} {'p':>5} verdict"
    )
    order = {v: i for i, v in enumerate(VERDICTS)}
    flagged = False
    for (values, strategy), group in rows.groupby(["cell_values", "strategy"], sort=False):
        test = "/".join(dict.fromkeys(group["test"]))
        seeds = f"{int(group['n_new'].max())} seeds"
        where = f"cell {values}: " if values else ""
        lines += ["", f"{where}{strategy} ({seeds}, {test})"]
        shown = group[~group["verdict"].isin((UNCHANGED, UNJUDGED))]
        if not shown.empty:
            lines.append(header)
        shown = shown.assign(_order=shown["verdict"].map(order)).sort_values(
            "_order", kind="stable"
        )
        for _, row in shown.iterrows():
            change, interval = change_text(row)
            mark = "!" if row["machine_warning"] else ""
            flagged |= bool(mark)
            lines.append(
                f"{row['column']:<{name_width}} {_number(row['base']):>8} "
                f"{_number(row['new']):>8} {change:>7} {interval:>14} {_p(row['p']):>5} "
                f"{row['verdict']}{mark}"
            )
        unchanged = int((group["verdict"] == UNCHANGED).sum())
        if unchanged:
            more = " more" if len(shown) else ""
            lines.append(f"{unchanged}{more} columns unchanged (~)")
        unjudged = int((group["verdict"] == UNJUDGED).sum())
        if unjudged:
            lines.append(f"{unjudged} columns not judged: overloaded seeds")
    if flagged:
        lines.append("!: depends on the machine, and the machines differ")
    return lines


def summary_line(result: Result) -> str:
    """One line: how many verdicts of each kind."""
    counts = result.rows["verdict"].value_counts()
    parts = [f"{int(counts.get(v, 0))} {v}" for v in VERDICTS if counts.get(v, 0)]
    return "verdicts: " + (", ".join(parts) if parts else "none")
