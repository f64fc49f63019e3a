"""The story of a run in a few sentences, the same in the terminal and the report: what each
strategy changed against the first and by how much, and why where the data says why
(`harness.results.statistics.comparisons` computes every figure; this only words them)."""

from __future__ import annotations

import math

from harness.results.statistics import Change, Comparison

REASONS = {
    "no_candidate": "no node passed the filters",
    "attempts_exhausted": "every attempt failed",
    "deadline": "out of time",
}
"""What each failure reason (`harness.results.statistics.FAILURE_REASONS`) means, in words."""


def _count(*values: float) -> list[str]:
    """Means of counts over seeds, in one form: whole numbers as integers, else one decimal."""
    whole = all(float(v).is_integer() for v in values)
    return [f"{v:.0f}" if whole else f"{v:.1f}" for v in values]


def _arrow(change: Change) -> str:
    """`108.3 -> 51.4`, or the one value when it did not move."""
    before, after = _count(change.before, change.after)
    return before if before == after else f"{before} -> {after}"


def _percent(relative: float) -> str:
    """` (-97%)`; a change under 10% to a tenth of a percent (` (-0.3%)`, never `-0%`)."""
    if math.isnan(relative):
        return ""
    return f" ({relative:+.1%})" if abs(relative) < 0.1 else f" ({relative:+.0%})"


def _nodes(c: Comparison) -> str:
    return f"busiest node {_arrow(c.busiest)} sandboxes, idlest {_arrow(c.idlest)}"


def _failures(c: Comparison) -> str:
    if c.failed.before == c.failed.after == 0:
        return "no create failed"
    return f"failed creates {_arrow(c.failed)} per seed" + _percent(
        c.failed.relative if c.failed.after != c.failed.before else math.nan
    )


def _in_flight(c: Comparison) -> str:
    """Why counting creates in progress made no (or little) difference: how many were ever in
    flight at once."""
    if c.max_in_flight == 0:
        return "creates in flight at once: 0, so counting creates in progress changes nothing here"
    return (
        f"creates in flight at once: at most {c.max_in_flight} ({c.in_flight_frac:.1%} of creates "
        "were sent with another in flight), so counting creates in progress changes little here"
    )


def same_as(c: Comparison) -> str:
    """The one line a strategy that equals another gets where it is shown, with why when the
    data says."""
    seeds = "the one seed" if c.seeds == 1 else f"all {c.seeds} seeds"
    line = f"{c.strategy} equals {c.same_as} to every digit in {seeds}"
    if c.counting_differs and c.max_in_flight == 0:
        return f"{line}: {_in_flight(c)}."
    return f"{line}: the same sandboxes on every node."


def _more_failures(c: Comparison) -> str:
    """Why a strategy fails more creates than the first, where the data says: the reason the
    extra failures share, and a view closer to the truth that lets its filters refuse nodes
    the first's older view still shows with room."""
    extra = c.failed.after - c.failed.before
    reason, grew = max(
        ((r, ch.after - ch.before) for r, ch in c.failed_reasons.items()), key=lambda x: x[1]
    )
    if grew <= 0:
        return ""
    share = "All the extra failures are" if grew >= extra else f"{_count(grew)[0]} per seed are"
    line = f" {share} {reason} ({REASONS.get(reason, reason)})"
    err = c.err_mean_abs
    if reason == "no_candidate" and err.after < err.before:
        line += (
            f": its view is closer to the truth (|err| {err.before:.2f} -> {err.after:.2f} vCPU "
            f"per node), so its filters turn away nodes that {c.base}'s view, up to "
            f"{c.err_under_max.before:.0f} vCPU short, still shows with room"
        )
    return line + "."


def sentence(c: Comparison) -> str:
    """One strategy's headline: its own figures for the first, else what it changed."""
    if c.strategy == c.base:
        seeds = "1 seed" if c.seeds == 1 else f"{c.seeds} seeds"
        return f"{c.strategy}: CV {c.cv.after:.3f} over {seeds}; {_nodes(c)}; {_failures(c)}."
    if c.same_as is not None:
        return same_as(c)
    if not c.clear:
        line = (
            f"{c.strategy}: no clear change from {c.base}: CV {c.cv.before:.3f} -> "
            f"{c.cv.after:.3f} (paired 95% interval of the change {c.cv_shift_lo:+.3f} to "
            f"{c.cv_shift_hi:+.3f}); {_nodes(c)}; {_failures(c)}."
        )
        return line + (f" {_in_flight(c).capitalize()}." if c.counting_differs else "")
    verb = "cuts" if c.cv.after < c.cv.before else "raises"
    line = (
        f"{c.strategy} {verb} CV from {c.cv.before:.3f} to {c.cv.after:.3f}"
        f"{_percent(c.cv.relative)}; {_nodes(c)}; {_failures(c)}."
    )
    return line + (_more_failures(c) if c.failed.after > c.failed.before else "")


def headline(found: list[Comparison]) -> list[str]:
    """The run's story, a sentence per strategy: the first's figures, then each comparison."""
    return [sentence(c) for c in found]


def _part(entry: dict) -> str:
    """`reference`, `idle_first=0.5 (from idle_first:IdleFirst)`: a plugin as a config names
    it, and where it comes from unless built in."""
    weight = entry.get("weight", 1.0)
    text = entry["name"] + ("" if weight == 1.0 else f"={weight:g}")
    return text + ("" if entry["from"] == "harness" else f" (from {entry['from']})")


def plugins_line(plugins: dict) -> str:
    """The placement pipeline a run used, part by part, and any strategy not built in; empty
    for a run that did not record it."""
    groups: dict[str, list[str]] = {}
    for entry in plugins.get("parts", []):
        if entry["kind"] != "strategy" or entry["from"] != "harness":
            groups.setdefault(entry["kind"], []).append(_part(entry))
    if not groups:
        return ""
    plural = {"filter": "filters", "scorer": "scorers", "strategy": "strategies"}
    return "placement: " + "; ".join(
        f"{plural.get(kind, kind) if len(parts) > 1 else kind} {', '.join(parts)}"
        for kind, parts in groups.items()
    )
