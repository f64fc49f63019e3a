"""Numbers drawn from results: CV, per-seed summaries, intervals over seeds, and theory lines."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from harness.model.registry import RegistryError
from harness.model.scheduling.ledger import Ledger
from harness.model.scheduling.ledgers import LEDGERS
from harness.model.scheduling.placement.eligibility import RULES
from harness.results import percentiles
from harness.results.summary_columns import SKETCHED


def cv(counts: np.ndarray | list[float]) -> float:
    """Coefficient of variation: population std / mean (the reference benchmark's measure)."""
    a = np.asarray(counts, dtype=float)
    mean = a.mean() if a.size else 0.0
    return float(a.std() / mean) if mean > 0 else float("nan")


ERROR_TOLERANCE = 1e-6
"""vCPUs of believed-minus-true below which a sample counts as exact (float residue)."""


def accounting_error(timeline: pa.Table) -> dict[str, float]:
    """How wrong the scheduler's belief was over one run, from the timeline's `cpu_error`.

    Each sample holds until the next sample of the same (replica, node), so the mean and the
    fraction are time-weighted (the last sample of a series closes it and weighs nothing).
    Over- and under-count are reported as positive vCPUs; NaN when nothing was sampled.
    """
    if timeline.num_rows == 0:
        return dict.fromkeys(
            ("err_mean_abs", "err_over_max", "err_under_max", "err_nonzero_frac"), math.nan
        )
    replica = timeline.column("replica").to_numpy()
    node = timeline.column("node_id").to_numpy()
    t = timeline.column("t").to_numpy()
    error = timeline.column("cpu_error").to_numpy()
    order = np.lexsort((t, node, replica))
    replica, node, t, error = replica[order], node[order], t[order], error[order]
    same_series = (replica[1:] == replica[:-1]) & (node[1:] == node[:-1])
    weight = np.append(np.where(same_series, np.diff(t), 0.0), 0.0)
    if weight.sum() <= 0:
        weight = np.ones_like(t)
    wrong = np.abs(error) > ERROR_TOLERANCE
    return {
        "err_mean_abs": float(np.average(np.abs(error), weights=weight)),
        "err_over_max": float(max(0.0, error.max())),  # 0.0 first: never print -0.0
        "err_under_max": float(max(0.0, -error.min())),
        "err_nonzero_frac": float(weight[wrong].sum() / weight.sum()),
    }


FAILURE_REASONS = ("no_candidate", "attempts_exhausted", "deadline", "refused", "asks_exhausted")
"""Why a create failed (`harness.model.scheduling.scheduler`); each has a `failed_<reason>` summary
column."""


def violations(requests: pa.Table, creates: np.ndarray) -> dict[str, int]:
    """Creates whose placement broke an eligibility rule, in all and by rule (a create that
    broke two counts under both): `violated` holds the rules joined by "+"."""
    violated = requests.column("violated")
    found = {
        "violations": int((creates & pc.is_valid(violated).to_numpy(zero_copy_only=False)).sum())
    }
    for rule in RULES:
        hit = pc.fill_null(pc.match_substring_regex(violated, f"(^|\\+){rule}($|\\+)"), False)
        found[f"violations_{rule}"] = int((creates & hit.to_numpy(zero_copy_only=False)).sum())
    return found


def asks(requests: pa.Table, creates: np.ndarray) -> dict[str, float]:
    """How often the scheduler was asked to place a create, on average and at most: a node
    that keeps refusing shows as a create asked about again and again."""
    per_create = requests.column("asks").to_numpy()[creates]
    if not per_create.size:
        return {"asks_mean": math.nan, "asks_max": 0}
    return {"asks_mean": float(per_create.mean()), "asks_max": int(per_create.max())}


def _equals(table: pa.Table, name: str, value: str) -> np.ndarray:
    """Where string column `name` is `value` (a null is not), compared by Arrow: turning the
    column into numpy would first make a Python string of every row."""
    return pc.fill_null(pc.equal(table.column(name), value), False).to_numpy(zero_copy_only=False)


def seed_summary(
    nodes: pa.Table, requests: pa.Table, timeline: pa.Table, duration_s: float
) -> dict[str, Any]:
    """Counts, load, latency and accounting error of one (strategy, seed); sandboxes per node
    are the final true ones. Rates are per second of model time covered: the run's
    `duration_s`, or later if answers kept coming."""
    counts = nodes.column("sandboxes").to_numpy()
    latency = requests.column("latency_ms").to_numpy()
    creates = _equals(requests, "kind", "create")
    kills = _equals(requests, "kind", "kill")
    placed = creates & _equals(requests, "outcome", "placed")
    failed_call = _equals(requests, "outcome", "failed")
    failed = creates & failed_call
    sim_duration = max(duration_s, requests.column("done_at").to_numpy().max(initial=0.0))
    p50, p90, p99 = latency_percentiles(latency[placed])
    return {
        "requests": int(creates.sum()),
        "placed": int(placed.sum()),
        "failed": int(failed.sum()),
        "failed_frac": float(failed.sum() / creates.sum()) if creates.any() else math.nan,
        **{
            f"failed_{r}": int((failed & _equals(requests, "reason", r)).sum())
            for r in FAILURE_REASONS
        },
        **violations(requests, creates),
        **asks(requests, creates),
        "kills": int(kills.sum()),
        "kills_failed": int((kills & failed_call).sum()),
        "creates_per_s": float(creates.sum() / sim_duration),
        "kills_per_s": float(kills.sum() / sim_duration),
        "cv": cv(counts),
        "max_count": int(counts.max()) if counts.size else 0,
        "min_count": int(counts.min()) if counts.size else 0,
        **utilisation(nodes),
        "p50_place_ms": p50,
        "p90_place_ms": p90,
        "p99_place_ms": p99,
        "sim_duration_s": float(sim_duration),
        **accounting_error(timeline),
    }


def utilisation(nodes: pa.Table) -> dict[str, float]:
    """How evenly the nodes' end state spreads: `alloc_cv`, the CV of allocated vCPUs, and the
    CV (upstream's LoadImbalanceCoefficient: population std / mean), mean, min and max of
    utilisation, a node's actual CPU use over its vCPUs in per cent
    (`cpu_percent / 100 / cpu_count * 100`). With sandboxes of one size and one usage all
    three CVs agree; where sizes and usage differ, utilisation is what operators watch."""
    used = nodes.column("cpu_percent").to_numpy() / nodes.column("cpu_count").to_numpy()
    empty = used.size == 0
    return {
        "alloc_cv": cv(nodes.column("cpu_allocated").to_numpy()),
        "util_cv": cv(used),
        "util_mean": math.nan if empty else float(used.mean()),
        "util_min": math.nan if empty else float(used.min()),
        "util_max": math.nan if empty else float(used.max()),
    }


PERCENTILES = (50, 90, 99)
"""The latency percentiles every table and summary reports."""


def latency_percentiles(latency_ms: np.ndarray | pd.Series) -> tuple[float, float, float]:
    """p50, p90 and p99 of latencies (exact, linear interpolation); NaN for none."""
    a = np.asarray(latency_ms, dtype=float)
    if a.size == 0:
        return math.nan, math.nan, math.nan
    p50, p90, p99 = np.percentile(a, PERCENTILES)
    return float(p50), float(p90), float(p99)


def mean_interval(
    values: np.ndarray | list[float], level: float = 0.95, resamples: int = 4000
) -> tuple[float, float, float]:
    """Mean and a bootstrap percentile interval; seeded, so a report is reproducible."""
    a = np.asarray(values, dtype=float)
    a = a[~np.isnan(a)]
    if a.size == 0:
        return math.nan, math.nan, math.nan
    if a.size == 1:
        return float(a[0]), math.nan, math.nan
    rng = np.random.default_rng(0)
    means = rng.choice(a, size=(resamples, a.size), replace=True).mean(axis=1)
    tail = (1 - level) / 2 * 100
    lo, hi = np.percentile(means, [tail, 100 - tail])
    return float(a.mean()), float(lo), float(hi)


def by_strategy(summary: pd.DataFrame, requests: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per strategy (in first-seen order): CV mean with 95% interval, and the rest;
    with `requests`, the load figures pooled over all seeds (`pooled_load`) too."""
    rows = []
    for strategy, group in summary.groupby("strategy", sort=False):
        mean, lo, hi = mean_interval(group["cv"])
        util, util_lo, util_hi = mean_interval(group.get("util_cv", []))
        rows.append(
            {
                "strategy": strategy,
                "seeds": len(group),
                "cv_mean": mean,
                "cv_lo": lo,
                "cv_hi": hi,
                "cv_median": float(group["cv"].median()),
                "util_cv_mean": util,
                "util_cv_lo": util_lo,
                "util_cv_hi": util_hi,
                "alloc_cv_mean": _mean_of(group, "alloc_cv"),
                "util_mean": _mean_of(group, "util_mean"),
                "max_count": float(group["max_count"].mean()),
                "min_count": float(group["min_count"].mean()),
                "placed": float(group["placed"].mean()),
                "failed": float(group["failed"].mean()),
                "err_mean_abs": float(group["err_mean_abs"].mean()),
                "err_over_max": float(group["err_over_max"].max()),
                "err_under_max": float(group["err_under_max"].max()),
                "err_nonzero_frac": float(group["err_nonzero_frac"].mean()),
            }
        )
    table = pd.DataFrame(rows)
    if requests is None:
        return table
    return table.merge(pooled_load(summary, requests), on="strategy", how="left")


def _mean_of(group: pd.DataFrame, column: str) -> float:
    """The mean of a summary column; NaN for a summary written before the column existed."""
    return float(group[column].mean()) if column in group else math.nan


def pooled_load(summary: pd.DataFrame, requests: pd.DataFrame) -> pd.DataFrame:
    """Per strategy, over every finished seed at once: creates and kills per second of model
    time, failed creates, the placed creates' p50/p90/p99 latency over all their requests
    (not a mean of per-seed percentiles), and where the engine measured them (Ray) the create
    RPC and heartbeat lateness p50/p99 of the merged per-seed sketches."""
    finished = summary[["strategy", "seed"]]
    requests = requests.merge(finished, on=["strategy", "seed"])  # not a partial seed's rows
    rows = []
    for strategy, group in summary.groupby("strategy", sort=False):
        mine = requests[requests["strategy"] == strategy]
        creates = mine[mine["kind"] == "create"]
        placed = creates.loc[creates["outcome"] == "placed", "latency_ms"]
        duration = float(group["sim_duration_s"].sum())
        row = {
            "strategy": strategy,
            "creates_per_s": len(creates) / duration if duration > 0 else math.nan,
            "kills_per_s": (len(mine) - len(creates)) / duration if duration > 0 else math.nan,
            "failed_frac": float((creates["outcome"] == "failed").mean())
            if len(creates)
            else math.nan,
            **dict(
                zip(
                    [f"p{p}_place_ms" for p in PERCENTILES],
                    latency_percentiles(placed),
                    strict=True,
                )
            ),
        }
        for figure in SKETCHED:
            found = [percentiles.from_bytes(b) for b in group[f"{figure}_sketch"] if b is not None]
            quantiles = percentiles.quantiles(percentiles.merged(found), (0.5, 0.99))
            row[f"{figure}_p50_ms"], row[f"{figure}_p99_ms"] = quantiles
        rows.append(row)
    return pd.DataFrame(rows)


def median_seed(summary: pd.DataFrame, strategy: str) -> int:
    """The seed whose CV is the median one for this strategy: the run to draw as typical."""
    group = summary[summary["strategy"] == strategy].sort_values(["cv", "seed"])
    return int(group.iloc[(len(group) - 1) // 2]["seed"])


def rank_shares(n: int, k: int) -> list[float]:
    """Share of requests won by the node of rank i (1 = least loaded) with static scores."""
    total = math.comb(n, k)
    return [math.comb(n - i, k - 1) / total for i in range(1, n + 1)]


def uniform_cv(n: int, m: int) -> float:
    """Expected CV of m requests thrown uniformly at random into n nodes."""
    return math.sqrt((n - 1) / m)


def cv_shift(base: pd.DataFrame, other: pd.DataFrame) -> pd.DataFrame:
    """Per strategy, how far CV moves from the `base` run to the `other` one (same seeds, one
    setting changed, e.g. more replicas): the mean per-seed difference with its 95% interval.
    Pairing by seed cancels what both runs share (requests, initial loads), so the interval
    is much tighter than comparing two means."""
    keys = ["strategy", "seed"]
    paired = base[[*keys, "cv"]].merge(other[[*keys, "cv"]], on=keys, suffixes=("_base", ""))
    rows = []
    for strategy, group in paired.groupby("strategy", sort=False):
        mean, lo, hi = mean_interval(group["cv"] - group["cv_base"])
        rows.append(
            {
                "strategy": strategy,
                "seeds": len(group),
                "cv_base": float(group["cv_base"].mean()),
                "cv": float(group["cv"].mean()),
                "shift": mean,
                "shift_lo": lo,
                "shift_hi": hi,
            }
        )
    return pd.DataFrame(rows)


def cv_over_time(timeline: pd.DataFrame, value: str = "sandboxes") -> pd.DataFrame:
    """CV of the true sandboxes per node (or of another per-node column, `value`) at each
    sample, per strategy: mean over seeds with its 95% interval, and the mean total of `value`
    (for sandboxes, the m of the uniform-random line)."""
    true = timeline[timeline["replica"] == timeline["replica"].min()]
    per_seed = true.groupby(["strategy", "seed", "t"], sort=False)[value].agg(
        mean="mean", std=lambda s: s.std(ddof=0), total="sum", nodes="size"
    )
    per_seed["cv"] = (per_seed["std"] / per_seed["mean"]).where(per_seed["mean"] > 0)
    rows = []
    for (strategy, t), group in per_seed.groupby(["strategy", "t"], sort=False):
        mean, lo, hi = mean_interval(group["cv"])
        rows.append(
            {
                "strategy": strategy,
                "t": t,
                "cv_mean": mean,
                "cv_lo": lo,
                "cv_hi": hi,
                "sandboxes": float(group["total"].mean()),
                "nodes": int(group["nodes"].iloc[0]),
            }
        )
    return pd.DataFrame(
        rows, columns=["strategy", "t", "cv_mean", "cv_lo", "cv_hi", "sandboxes", "nodes"]
    )


def utilisation_over_time(timeline: pd.DataFrame, nodes: pd.DataFrame) -> pd.DataFrame:
    """`cv_over_time` of utilisation, each node's `cpu_percent / cpu_count` at each sample (a
    node's vCPUs from the nodes table): how upstream's load imbalance evolves over the run."""
    counts = nodes[["strategy", "seed", "node_id", "cpu_count"]]
    frame = timeline.merge(counts, on=["strategy", "seed", "node_id"])
    frame["utilisation"] = frame["cpu_percent"] / frame["cpu_count"]
    return cv_over_time(frame, "utilisation")


def utilisation_varies(summary: pd.DataFrame) -> bool:
    """Whether utilisation says what sandbox counts do not (sandboxes differ in size or
    usage): then tables and reports show its CV (upstream's LoadImbalanceCoefficient) and the
    allocation's."""
    if "util_cv" not in summary:
        return False
    return bool(((summary["util_cv"] - summary["cv"]).abs() > 1e-9).any())


def accounting_over_time(timeline: pd.DataFrame) -> pd.DataFrame:
    """How far each scheduler's view of a node is from the node's true allocated vCPUs, at each
    sample, per strategy: the mean signed error (+: counted twice, -: invisible) and the mean
    absolute error per node, both averaged over seeds."""
    error = timeline["cpu_error"]
    frame = timeline[["strategy", "seed", "t"]].assign(error=error, abs_error=error.abs())
    per_seed = frame.groupby(["strategy", "seed", "t"], sort=False).mean()
    return per_seed.groupby(["strategy", "t"], sort=False).mean().reset_index()


BIN_WIDTHS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800)
"""Bin widths (s) a chart over time may use: round numbers a reader can count with."""


def bin_width(duration_s: float, bins: int = 50) -> float:
    """The smallest round bin width that cuts `duration_s` into at most `bins` bins."""
    return next((w for w in BIN_WIDTHS if w * bins >= duration_s), BIN_WIDTHS[-1])


def latency_over_time(requests: pd.DataFrame, width: float) -> pd.DataFrame:
    """p50 and p99 of the placed creates' latency by when they were issued, in bins of
    `width` seconds, per strategy, pooled over seeds (every request of a bin at once)."""
    creates = requests[(requests["kind"] == "create") & (requests["outcome"] == "placed")]
    t = (creates["issued_at"] // width) * width
    grouped = creates.groupby([creates["strategy"], t.rename("t")], sort=False)["latency_ms"]
    # Both columns even when nothing was placed (no quantile to unstack).
    frame = grouped.quantile([0.5, 0.99]).unstack().reindex(columns=[0.5, 0.99])
    frame.columns = ["p50", "p99"]
    return frame.reset_index().sort_values("t", kind="stable", ignore_index=True)


def throughput_over_time(requests: pd.DataFrame, width: float) -> pd.DataFrame:
    """Creates placed, creates failed and kills answered per second, by when they were
    answered, in bins of `width` seconds, per strategy: the mean over its seeds."""
    seeds = requests.groupby("strategy", sort=False)["seed"].nunique()
    what = np.where(requests["kind"] == "kill", "kills", "creates_" + requests["outcome"])
    t = (requests["done_at"] // width) * width
    counts = requests.groupby([requests["strategy"], t.rename("t"), what], sort=False).size()
    frame = counts.unstack(fill_value=0).reindex(
        columns=["creates_placed", "creates_failed", "kills"], fill_value=0
    )
    frame = frame.div(frame.index.get_level_values("strategy").map(seeds) * width, axis=0)
    return frame.reset_index().sort_values("t", kind="stable", ignore_index=True)


def cv_by(summary: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """CV mean with its 95% interval over the seeds (and any other cells) at each combination
    of `keys`, with the mean nodes and live sandboxes that give the uniform-random CV."""
    rows = []
    for values, group in summary.groupby(keys, sort=False, dropna=False):
        mean, lo, hi = mean_interval(group["cv"])
        n = float(group["nodes"].mean())
        live = float((group["placed"] - group["kills"]).mean())
        rows.append(
            {
                **dict(zip(keys, values, strict=True)),
                "cv_mean": mean,
                "cv_lo": lo,
                "cv_hi": hi,
                "seeds": len(group),
                "uniform_cv": uniform_cv(round(n), round(live)) if live >= 1 else math.nan,
            }
        )
    return pd.DataFrame(rows)


def in_flight_at_once(requests: pd.DataFrame) -> pd.DataFrame:
    """Per strategy and seed: the most creates of one replica in flight at once (sent, not yet
    answered; `max_in_flight`), the share of creates sent while another of its replica was
    (`in_flight_frac`), and whether every replica had all its creates in flight at once
    (`all_in_flight`: none answered before its last was sent). Creates sent at the same
    instant are in flight together. This is all a strategy that counts creates in progress
    adds to the score, so with at most 1 at once it places as one that does not."""
    sent = requests[(requests["kind"] == "create") & (requests["rpcs"] > 0)]
    rows = []
    for (strategy, seed), group in sent.groupby(["strategy", "seed"], sort=False):
        others, whole = [], True
        for _, mine in group.groupby("replica", sort=False):
            sent_at, done_at = mine["sent_at"].to_numpy(), mine["done_at"].to_numpy()
            starts, ends = np.sort(sent_at), np.sort(done_at)
            # Sent at or before its send and answered after it, less itself (one answered at
            # the instant it was sent was never in flight): the others in flight beside it.
            flying = np.searchsorted(starts, sent_at, "right") - np.searchsorted(
                ends, sent_at, "right"
            )
            mine_others = flying - (done_at > sent_at)
            whole = whole and int(mine_others.max()) + 1 == len(mine)
            others.append(mine_others)
        counts = np.concatenate(others)
        rows.append(
            {
                "strategy": strategy,
                "seed": seed,
                "max_in_flight": int(counts.max()) + 1,
                "in_flight_frac": float((counts > 0).mean()),
                "all_in_flight": whole,
            }
        )
    return pd.DataFrame(rows, columns=["strategy", "seed", *IN_FLIGHT])


IN_FLIGHT = ("max_in_flight", "in_flight_frac", "all_in_flight")
"""What `in_flight_at_once` gives for each strategy and seed."""


def same_placements(summary: pd.DataFrame, nodes: pd.DataFrame) -> dict[str, str]:
    """Each strategy whose every seed ended exactly as an earlier strategy's (the same
    sandboxes on every node, the same creates placed and failed) -> the first such strategy:
    two names for one result, which a reader must be told why."""
    key = ["seed", "node_id"]
    ends = {
        s: (
            g.sort_values(key)[[*key, "sandboxes"]].reset_index(drop=True),
            summary[summary["strategy"] == s]
            .sort_values("seed")[["seed", "placed", "failed", "cv"]]
            .reset_index(drop=True),
        )
        for s, g in nodes.groupby("strategy", sort=False)
        if s in set(summary["strategy"])
    }
    same: dict[str, str] = {}
    for i, (strategy, (counts, figures)) in enumerate(ends.items()):
        for earlier, (their_counts, their_figures) in list(ends.items())[:i]:
            if (
                earlier not in same
                and counts.equals(their_counts)
                and figures.equals(their_figures)
            ):
                same[strategy] = earlier
                break
    return same


@dataclass(frozen=True)
class Change:
    """One figure of the compared strategy and of the strategy it is compared to (the run's
    first): each a mean over seeds."""

    before: float
    after: float

    @property
    def relative(self) -> float:
        """(after - before) / before; NaN from 0."""
        return (self.after - self.before) / self.before if self.before else math.nan


@dataclass(frozen=True)
class Comparison:
    """What a strategy changed against the run's first, and the figures that say why where
    they can: the headline of a run (`harness.presentation.headline`). The first strategy is
    compared to itself (`base == strategy`) to give its own figures."""

    strategy: str
    base: str
    seeds: int
    creates: float
    cv: Change
    cv_shift_lo: float
    cv_shift_hi: float
    busiest: Change
    idlest: Change
    failed: Change
    failed_reasons: dict[str, Change]
    err_mean_abs: Change
    err_under_max: Change
    same_as: str | None
    """The earlier strategy it placed exactly as, if any: its twin."""
    counts_in_progress: dict[str, bool | None]
    """Whether each of the strategy, the base and the twin counts creates in progress in the
    score (None for one not known here)."""
    max_in_flight: int
    """The most creates of one replica in flight at once, over every seed."""
    in_flight_frac: float
    all_in_flight: bool
    """Whether in every seed each replica had all its creates in flight at once."""
    replicas: int
    violations: dict[str, float] = field(default_factory=dict)
    """Creates per seed placed against an eligibility rule, by rule (`violations_<rule>`), and
    in all (`violations`): an external scheduler's mistakes."""
    asks_max: int = 0
    """The most times one create was asked about, over the seeds."""
    asks_mean: float = math.nan

    @property
    def counting_differs(self) -> bool:
        """Whether one of it and the base counts creates in progress and the other not."""
        return self._differ(self.base)

    @property
    def twin_counting_differs(self) -> bool:
        """Whether one of it and its twin counts creates in progress and the other not."""
        return self.same_as is not None and self._differ(self.same_as)

    def _differ(self, other: str) -> bool:
        mine, theirs = self.counts_in_progress[self.strategy], self.counts_in_progress[other]
        return {mine, theirs} == {True, False}

    @property
    def clear(self) -> bool:
        """Whether CV moved beyond the noise: the paired 95% interval of its change over the
        seeds excludes 0 (with one seed, any change counts)."""
        if math.isnan(self.cv_shift_lo):
            return self.cv.after != self.cv.before
        return not self.cv_shift_lo <= 0.0 <= self.cv_shift_hi


def _counts_in_progress(strategy: str) -> bool | None:
    """Whether the strategy adds creates in progress to the score; None for one that is not
    known here (a plugin no longer installed)."""
    try:
        ledger = LEDGERS.resolve(strategy)
    except RegistryError:
        return None
    return issubclass(ledger, Ledger) and ledger.counts_in_progress


def comparisons(
    summary: pd.DataFrame, nodes: pd.DataFrame, requests: pd.DataFrame
) -> list[Comparison]:
    """The run's first strategy with its own figures, then every other against it on the
    same seeds: CV, busiest and idlest node, failed creates (and for what reason), how wrong
    each view was, whether it placed exactly as an earlier strategy, and how many creates were
    ever in flight at once (what counting them in progress could change)."""
    strategies = list(dict.fromkeys(summary["strategy"]))
    base = strategies[0]
    first = summary[summary["strategy"] == base]
    paired = pd.concat([first.assign(strategy=s) for s in strategies])  # base vs each, by seed
    shifts = cv_shift(paired, summary).set_index("strategy")
    flying = in_flight_at_once(requests).groupby("strategy", sort=False)
    same = same_placements(summary, nodes)
    means = summary.groupby("strategy", sort=False).mean(numeric_only=True)
    worst = summary.groupby("strategy", sort=False)["err_under_max"].max()

    def change(column: str, strategy: str, frame: pd.Series | pd.DataFrame = means) -> Change:
        pick = frame[column] if isinstance(frame, pd.DataFrame) else frame
        return Change(float(pick[base]), float(pick[strategy]))

    found = []
    for strategy in strategies:
        mine = flying.get_group(strategy) if strategy in flying.groups else None
        pair = [strategy, base, *([same[strategy]] if strategy in same else [])]
        found.append(
            Comparison(
                strategy=strategy,
                base=base,
                seeds=int((summary["strategy"] == strategy).sum()),
                creates=float(means.loc[strategy, "requests"]),
                cv=change("cv", strategy),
                cv_shift_lo=float(shifts.loc[strategy, "shift_lo"]),
                cv_shift_hi=float(shifts.loc[strategy, "shift_hi"]),
                busiest=change("max_count", strategy),
                idlest=change("min_count", strategy),
                failed=change("failed", strategy),
                failed_reasons={r: change(f"failed_{r}", strategy) for r in FAILURE_REASONS},
                err_mean_abs=change("err_mean_abs", strategy),
                err_under_max=change("err_under_max", strategy, worst),
                same_as=same.get(strategy),
                counts_in_progress={s: _counts_in_progress(s) for s in pair},
                max_in_flight=int(mine["max_in_flight"].max()) if mine is not None else 0,
                in_flight_frac=float(mine["in_flight_frac"].mean()) if mine is not None else 0.0,
                all_in_flight=bool(mine["all_in_flight"].all()) if mine is not None else False,
                replicas=int(requests["replica"].nunique()) if len(requests) else 1,
                violations={
                    c: float(means.loc[strategy, c])
                    for c in ("violations", *(f"violations_{r}" for r in RULES))
                    if c in means.columns
                },
                asks_max=int(summary.loc[summary["strategy"] == strategy, "asks_max"].max())
                if "asks_max" in summary.columns
                else 0,
                asks_mean=float(means.loc[strategy, "asks_mean"])
                if "asks_mean" in means.columns
                else math.nan,
            )
        )
    return found


FLAT_TOLERANCE = 0.01
"""How close (a share of the largest value drawn) every strategy's series must be to the
others' at every point for a chart to be flat: the same for every strategy, so folded away."""


def flat(frame: pd.DataFrame, columns: list[str], tolerance: float = FLAT_TOLERANCE) -> bool:
    """Whether every strategy's series of `columns` over `t` is the same, within `tolerance`
    of the largest value, at the same times: a chart of it says nothing that tells the
    strategies apart. Never with fewer than two strategies (nothing was compared)."""
    if frame["strategy"].nunique() < 2:
        return False
    for column in columns:
        table = frame.pivot(index="t", columns="strategy", values=column)
        missing = table.isna()
        if not missing.eq(missing.iloc[:, 0], axis=0).all(axis=None):
            return False  # one strategy has a point where another has none
        spread = (table.max(axis=1) - table.min(axis=1)).max()
        scale = float(np.nanmax(np.abs(table.to_numpy()))) if table.notna().any(axis=None) else 0
        if spread > tolerance * scale:
            return False
    return True
