"""A search's results for people: the terminal summary (best, minimal,
confirmation, top ten) and the HTML report's page (objective over trials with the best so far,
the top ten, which keys matter)."""

from __future__ import annotations

import html
import math
from pathlib import Path
from typing import Any

import pandas as pd
from rich.console import Console
from rich.table import Table

from harness.presentation import plots
from harness.results.search_folder import COMPLETE, best_so_far, load_search_results

TOP = 10


def _fmt(x: Any) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x:.4g}" if isinstance(x, float) else str(x)


def _value(x: Any) -> str:
    """A key's value as a person reads it: a float to 4 digits (the files hold it whole)."""
    return _fmt(x) if isinstance(x, float) else repr(x)


def top(meta: dict[str, Any], trials: pd.DataFrame, n: int = TOP) -> pd.DataFrame:
    """The `n` best finished trials: number, objective and the searched keys."""
    done = trials[trials["state"] == COMPLETE]
    ascending = meta["direction"] == "minimize"
    ranked = done.sort_values(["objective", "trial"], ascending=[ascending, True], kind="stable")
    return ranked[["trial", "objective", *meta["keys"]]].head(n)


def _share(x: float) -> str:
    """A share as a percentage that is never shown as 0% unless it is 0."""
    if x == 0 or abs(x) >= 0.01:
        return f"{x:.0%}"
    return f"{x:.1%}" if abs(x) >= 0.001 else ("<0.1%" if x > 0 else ">-0.1%")


def bias_text(entry: dict[str, Any]) -> str:
    """How far the searched value lies from the fresh seeds' value, in words that read right
    whichever its sign: `0.159 above (10%)`, `0.159 below (-10%)`, `equal`."""
    bias, share = entry["bias"], entry["bias_frac"]
    if bias == 0:
        return "the search's value is equal"
    side = "above" if bias > 0 else "below"
    percent = "" if share is None or math.isnan(share) else f" ({_share(share)})"
    return f"the search's value is {_fmt(abs(bias))} {side}{percent}"


def confirmation_lines(meta: dict[str, Any]) -> list[str]:
    """Best and minimal: the searched objective beside the fresh seeds' with its interval."""
    lines = []
    for label, entry in (meta.get("confirmed") or {}).items():
        if "error" in entry:
            lines.append(f"{label}: failed on fresh seeds: {entry['error']}")
            continue
        seeds = entry["seeds"]
        lines.append(
            f"{label}: searched {_fmt(entry['searched'])}, on {len(seeds)} fresh seeds "
            f"{_fmt(entry['fresh'])} (95% CI {_fmt(entry['lo'])}-{_fmt(entry['hi'])}); "
            f"{bias_text(entry)}"
        )
    return lines


def outcome_line(meta: dict[str, Any], trials: pd.DataFrame) -> str | None:
    """The one line said instead of a best trial when the search has none: no trial finished,
    none gave a number, or the objective was the same on every one; None when there is a best."""
    if meta.get("best") is not None:
        return None
    done = trials[trials["state"] == COMPLETE]
    if done.empty:
        return "no trial finished"
    if meta.get("constant") is not None:
        return (
            f"the objective was {_fmt(meta['constant'])} on every one of {len(done)} finished "
            "trials: no scenario of the space is worse than another, so there is nothing to "
            "shrink or confirm"
        )
    if done["objective"].astype(float).isna().all():
        return (
            f"no trial gave a value of the objective ({meta['objective']}): its column has no "
            "value on these trials' seeds"
        )
    return "the search stopped before it chose its best: harness search --resume goes on"


def mattering(meta: dict[str, Any]) -> str | None:
    """What each key the minimal scenario needs matters there: how its objective moves with
    that key alone back at its base value (every one beyond the shrink's tolerance)."""
    minimal = meta.get("minimal") or {}
    without = minimal.get("without") or {}
    if not without:
        return None
    objective, base = minimal["objective"], meta["base_values"]

    def change(score: float) -> str:
        if math.isnan(score):
            return "not a valid scenario"
        if not objective:
            return _fmt(score)
        share = (score - objective) / abs(objective)
        return f"+{_share(share)}" if share > 0 else _share(share)

    parts = [
        f"{key} {_value(minimal['values'][key])}->{_value(base[key])}: {change(score)}"
        for key, score in without.items()
    ]
    return "what matters, each needed key alone back at its base: " + ", ".join(parts)


def print_search(meta: dict[str, Any], trials: pd.DataFrame, console: Console) -> None:
    """Best, minimal (which keys it needs), the confirmation, and the top ten."""
    console.print(f"{meta['name']}: {meta['objective']}, {len(trials)} trials", markup=False)
    said = outcome_line(meta, trials)
    if said is not None:
        console.print(said, markup=False, soft_wrap=True)
        return
    best = meta["best"]
    moved = ", ".join(f"{k}={_value(v)}" for k, v in best["values"].items())
    console.print(f"best: trial {best['trial']}, {_fmt(best['objective'])}: {moved}", markup=False)
    minimal = meta.get("minimal")
    if minimal is not None:
        needs = ", ".join(f"{k}={_value(minimal['values'][k])}" for k in minimal["needs"])
        console.print(
            f"minimal: {_fmt(minimal['objective'])}, needs {needs or 'none'} (the rest as the "
            "base)",
            markup=False,
        )
    for line in confirmation_lines(meta):
        console.print(line, markup=False)
    table = Table(title=f"top {TOP}")
    frame = top(meta, trials)
    for column in frame.columns:
        table.add_column(column, justify="right")
    for row in frame.itertuples(index=False):
        table.add_row(*(_fmt(v) for v in row))
    console.print(table)
    matters = mattering(meta)
    if matters is not None:
        console.print(matters, markup=False)


def objective_over_trials(meta: dict[str, Any], trials: pd.DataFrame) -> bytes:
    """Each trial's objective as a dot, the best so far as a line."""
    fig = plots.new_figure(8, 3.5)
    ax = fig.subplots()
    ax.plot(trials["trial"], trials["objective"], "o", ms=3, alpha=0.6, label="trial")
    ax.plot(trials["trial"], best_so_far(trials, meta["direction"]), "-", label="best so far")
    ax.set_xlabel("trial")
    ax.set_ylabel(meta["objective"].split(" ", 1)[1])
    ax.legend(loc="lower right")
    return plots._png(fig)


def search_page(folder: Path) -> tuple[str, str]:
    """(title, body) of a search folder's report.html."""
    import base64

    meta, trials = load_search_results(folder)
    title = f"{meta['name']}: {meta['objective']}"
    parts = [f"<p class='story'>{len(trials)} trials.</p>"]
    if not trials.empty:
        png = base64.b64encode(objective_over_trials(meta, trials)).decode("ascii")
        parts.append(
            f'<figure><img alt="objective over trials" src="data:image/png;base64,{png}">'
            "<figcaption>objective of each trial, and the best so far</figcaption></figure>"
        )
    said = outcome_line(meta, trials)
    lines = confirmation_lines(meta) if said is None else [said]
    if meta.get("minimal"):
        needs = ", ".join(meta["minimal"]["needs"]) or "none"
        lines.insert(0, f"minimal scenario (minimal.toml) needs: {needs}")
    parts += [f"<p>{html.escape(line)}</p>" for line in lines]
    parts.append("<h2>Top ten</h2>")
    table = top(meta, trials).to_html(index=False, na_rep="-", border=0)
    parts.append(f'<div class="wide">{table}</div>')
    matters = mattering(meta)
    if matters is not None:
        parts += ["<h2>What matters</h2>", f"<p>{html.escape(matters)}</p>"]
    return title, "\n".join(parts)
