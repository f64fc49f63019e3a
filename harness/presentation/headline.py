"""The story of a run in a few sentences, the same in the terminal and the report: what each
strategy changed against the first and by how much, and why where the data says why
(`harness.results.statistics.contrasts` computes every figure; this only words them)."""

from __future__ import annotations

import math

from harness.results import time_keeping
from harness.results.seed_figures import FAILURE_REASONS
from harness.results.statistics import Change, Contrast
from harness.results.summary_columns import SUMMARY_COLUMNS

FAILED = "Failed creates: "
"""How the meaning of each `failed_<reason>` summary column begins."""


def _reason(meaning: str) -> str:
    """A `failed_<reason>` column's meaning as the headline words it: what happened and the key
    behind it, without the prefix, the code marks and an aside in brackets."""
    text = meaning.removeprefix(FAILED).split(" (")[0].rstrip(".")
    return text.replace("`", "")


REASONS = {
    c.name.removeprefix("failed_"): _reason(c.meaning)
    for c in SUMMARY_COLUMNS
    if c.name.removeprefix("failed_") in FAILURE_REASONS
}
"""What each failure reason (`harness.results.statistics.FAILURE_REASONS`) means, in words:
from its column's meaning (`harness.results.summary_columns`), said once."""


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


def _nodes(c: Contrast) -> str:
    return f"busiest node {_arrow(c.busiest)} sandboxes, idlest {_arrow(c.idlest)}"


def _failures(c: Contrast) -> str:
    if c.failed.before == c.failed.after == 0:
        return "no create failed"
    return f"failed creates {_arrow(c.failed)} per seed" + _percent(
        c.failed.relative if c.failed.after != c.failed.before else math.nan
    )


def why_failed(c: Contrast) -> str:
    """`, all deadline (still unplaced at placement.deadline_s)`, or each reason's count per
    seed, most first: why a strategy's own creates failed; empty when none did."""
    counts = sorted(
        ((ch.after, r) for r, ch in c.failed_reasons.items() if ch.after > 0), reverse=True
    )
    if not counts:
        return ""
    if len(counts) == 1:
        return f", all {counts[0][1]} ({REASONS[counts[0][1]]})"
    return ": " + ", ".join(f"{_count(n)[0]} {r} ({REASONS[r]})" for n, r in counts)


def _flying(c: Contrast) -> str:
    """`at most 3 creates of a seed were in flight at once (12.5% of creates were sent with
    another in flight)`, or `all 500 ... were`: what counting creates in progress acts on."""
    whose = "a seed" if c.replicas == 1 else "one replica"
    if c.all_in_flight:
        every = f"all {c.max_in_flight}" if c.creates == c.max_in_flight * c.replicas else "all"
        each = "each seed" if c.replicas == 1 else "each replica"
        return (
            f"{every} creates of {each} were in flight at once (none answered before the last "
            "was sent)"
        )
    return (
        f"at most {c.max_in_flight} creates of {whose} were in flight at once "
        f"({c.in_flight_frac:.1%} of creates were sent with another in flight)"
    )


def _in_flight(c: Contrast) -> str:
    """Why counting creates in progress made no (or little) difference: how many were ever in
    flight at once."""
    if c.max_in_flight <= 1:
        return (
            "no create was sent while another was in flight, so counting creates in progress "
            "changes nothing here"
        )
    return f"{_flying(c)}, so counting creates in progress changes little here"


def _counter(c: Contrast, other: str) -> str:
    """`in_progress counts them where stale does not`: which of the pair counts creates in
    progress."""
    counts, not_counting = (
        (c.strategy, other) if c.counts_in_progress[c.strategy] else (other, c.strategy)
    )
    return f"{counts} counts them where {not_counting} does not"


def same_as(c: Contrast) -> str:
    """The one line a strategy that equals another gets where it is shown, with why when the
    data says: from the pair itself, whatever the first strategy is. Against an earlier
    strategy that is not the first, it also says what both changed from the first."""
    twin = c.same_as
    seeds = "the one seed" if c.seeds == 1 else f"all {c.seeds} seeds"
    if twin == c.base or not c.clear:
        line = f"{c.strategy} equals {twin} to every digit in {seeds}"
    else:
        line = (
            f"{c.strategy} {_verb(c)} CV from {c.cv.before:.3f} to {c.cv.after:.3f}"
            f"{_percent(c.cv.relative)} as {twin} does, equal to it to every digit in {seeds}"
        )
    both = c.counts_in_progress[c.strategy] and c.counts_in_progress.get(twin)
    if c.twin_counting_differs:
        if c.max_in_flight <= 1:
            return f"{line}: {_in_flight(c)}."
        return f"{line}: {_flying(c)}, and {_counter(c, twin)}, yet no placement changed."
    if both and c.all_in_flight and c.max_in_flight > 1:
        return (
            f"{line}: both count creates in flight, and {_flying(c)}, so both placed every "
            "create with all the earlier ones counted."
        )
    return f"{line}: the same sandboxes on every node."


def _verb(c: Contrast) -> str:
    return "cuts" if c.cv.after < c.cv.before else "raises"


def _opening(clause: str) -> str:
    """A clause as a sentence's start: its first letter upper case, the rest as it was (a
    strategy's name keeps its case)."""
    return clause[:1].upper() + clause[1:]


def _more_failures(c: Contrast) -> str:
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


def violations(c: Contrast) -> str:
    """The scheduler's answers that broke an eligibility rule, per seed and by rule; empty
    when none did (always in process)."""
    total = c.violations.get("violations", 0.0)
    if not total:
        return ""
    rules = [
        f"{rule.removeprefix('violations_')} {_count(n)[0]}"
        for rule, n in c.violations.items()
        if rule != "violations" and n
    ]
    return (
        f" Broke the create's eligibility rules: {_count(total)[0]} creates per seed "
        f"({', '.join(rules)})."
    )


def sentence(c: Contrast) -> str:
    """One strategy's headline: its own figures for the first, else what it changed; then the
    scheduler's broken rules, if any."""
    return _sentence(c) + violations(c)


def _sentence(c: Contrast) -> str:
    if c.strategy == c.base:
        seeds = "1 seed" if c.seeds == 1 else f"{c.seeds} seeds"
        return (
            f"{c.strategy}: CV {c.cv.after:.3f} over {seeds}; {_nodes(c)}; {_failures(c)}"
            f"{why_failed(c)}."
        )
    if c.same_as is not None:
        return same_as(c)
    if not c.clear:
        line = (
            f"{c.strategy}: no clear change from {c.base}: CV {c.cv.before:.3f} -> "
            f"{c.cv.after:.3f} (paired 95% interval of the change {c.cv_shift_lo:+.3f} to "
            f"{c.cv_shift_hi:+.3f}); {_nodes(c)}; {_failures(c)}."
        )
        return line + (f" {_opening(_in_flight(c))}." if c.counting_differs else "")
    line = (
        f"{c.strategy} {_verb(c)} CV from {c.cv.before:.3f} to {c.cv.after:.3f}"
        f"{_percent(c.cv.relative)}; {_nodes(c)}; {_failures(c)}."
    )
    line += _more_failures(c) if c.failed.after > c.failed.before else ""
    if c.counting_differs and c.max_in_flight > 1:
        line += f" {_opening(_flying(c))}, and {_counter(c, c.base)}."
    return line


def overloaded(c: Contrast, kept: dict[str, tuple[int, int]]) -> str:
    """`[OVERLOADED: optimistic in 2 of 3 seeds, stale in 3 of 3] `: the seeds that ran
    overloaded among those a sentence draws on (the strategy's, and the first's it is compared
    with), before the claim; empty when none did (`kept`:
    `harness.results.time_keeping.kept_by_strategy`)."""
    drawn = [(s, kept[s]) for s in dict.fromkeys((c.strategy, c.base)) if kept.get(s, (0, 0))[0]]
    if not drawn:
        return ""
    parts = [f"{s} in {over} of {seeds}" for s, (over, seeds) in drawn]
    return f"[OVERLOADED: {', '.join(parts)} seeds] "


def headline(
    found: list[Contrast], kept: dict | None = None, placed: str = "", marks: dict | None = None
) -> list[str]:
    """The run's story, a sentence per strategy. For a run in real time, first whether it kept
    the model's time (`kept`, the run's `harness.results.time_keeping.run_verdict`): every
    claim after it is drawn from its seeds, and one drawn from seeds that ran overloaded says
    so before it (`marks`, `harness.results.time_keeping.kept_by_strategy`). Then who placed, when
    an external scheduler did (`placed`, `harness.presentation.placer.placed_by`), the first
    strategy's figures, then each comparison."""
    told = time_keeping.line(kept)
    story = [overloaded(c, marks or {}) + sentence(c) for c in found]
    return [told] * bool(told) + [placed] * bool(placed) + story


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
