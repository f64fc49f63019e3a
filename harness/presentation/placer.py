"""Who placed a run's creates and how its answers fared: an external scheduler's own name (its
Hello's), the creates it placed against an eligibility rule and the asks a create took. The
terminal table, the report's table and the headline show them where they say something: a
scheduler other than the harness, a rule broken, a create asked about more than once."""

from __future__ import annotations

import math

import pandas as pd

from harness.results.summary_columns import IN_PROCESS

PLACER = ("scheduler", "violations", "asks_mean", "asks_max")
"""The columns `per_strategy` gives, beside `strategy`."""


def _names(values: pd.Series) -> str | None:
    """The external schedulers' names among `values` (a summary's `scheduler`), joined."""
    names = sorted({str(v) for v in values.dropna()} - {IN_PROCESS})
    return " + ".join(names) or None


def per_strategy(summary: pd.DataFrame) -> pd.DataFrame:
    """One row per strategy, in first-seen order: the scheduler that placed (None in process),
    violations per seed and the asks per create (mean over seeds, most of any seed). A column
    that says nothing for any strategy (no external scheduler, no violation, no create asked
    twice; a summary written before the column existed) is NaN throughout, which the tables
    leave out."""
    rows = []
    for strategy, group in summary.groupby("strategy", sort=False):
        rows.append(
            {
                "strategy": strategy,
                "scheduler": _names(group["scheduler"]) if "scheduler" in group else None,
                **{
                    column: float(group[column].agg(how)) if column in group else math.nan
                    for column, how in (
                        ("violations", "mean"),
                        ("asks_mean", "mean"),
                        ("asks_max", "max"),
                    )
                },
            }
        )
    table = pd.DataFrame(rows, columns=["strategy", *PLACER])
    telling = {
        "scheduler": table["scheduler"].notna().any(),
        "violations": (table["violations"] > 0).any(),
        "asks_mean": (table["asks_max"] > 1).any(),
        "asks_max": (table["asks_max"] > 1).any(),
    }
    for column, told in telling.items():
        if not told:
            table[column] = math.nan if column != "scheduler" else None
    return table


def placed_by(summary: pd.DataFrame) -> str:
    """`Placed by the external scheduler 'x' ...`, the headline's first sentence for a run
    whose creates an external scheduler placed; empty in process."""
    names = _names(summary["scheduler"]) if "scheduler" in summary else None
    if names is None:
        return ""
    return (
        f"Placed by the external scheduler {names!r} (the name its Hello gave); each strategy "
        "below is the ledger the harness keeps of its view (placement.strategy), not its own."
    )
