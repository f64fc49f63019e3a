"""Numbers drawn from a run's summary rows: intervals over seeds, figures pooled over seeds,
what each strategy changed against the first, and theory lines (a seed's own figures are
`harness.results.seed_figures`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from harness.model.registry import RegistryError
from harness.model.scheduling.placement.eligibility import RULES
from harness.model.scheduling.strategies import STRATEGIES
from harness.model.scheduling.strategy import Strategy
from harness.results import percentiles
from harness.results.order_statistics import grouped_percentiles
from harness.results.seed_figures import FAILURE_REASONS, PERCENTILES
from harness.results.summary_columns import SKETCHED


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


def by_strategy(summary: pd.DataFrame, pooled: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per strategy (in first-seen order): CV mean with 95% interval, and the rest;
    with `pooled` (`pooled_load`), the load figures pooled over all seeds too."""
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
                "cv_time_mean": _mean_of(group, "cv_time_mean"),
                "herd_ratio": _mean_of(group, "herd_ratio"),
            }
        )
    table = pd.DataFrame(rows)
    if pooled is None:
        return table
    return table.merge(pooled, on="strategy", how="left")


def _mean_of(group: pd.DataFrame, column: str) -> float:
    """The mean of a summary column; NaN for a summary written before the column existed."""
    return float(group[column].mean()) if column in group else math.nan


Batches = Callable[[str, Sequence[str]], Iterable[pa.Table]]
"""A run's large table, some columns of it, a batch at a time, finished seeds only
(`harness.results.run_reader.RunFiles.batches`)."""


def pooled_load(summary: pd.DataFrame, batches: Batches) -> pd.DataFrame:
    """Per strategy, over every finished seed at once: creates and kills per second of model
    time, failed creates, the placed creates' p50/p90/p99 latency over all their requests
    (not a mean of per-seed percentiles: exact, read a batch at a time), and where the engine
    measured them (Ray) the create RPC and heartbeat lateness p50/p99 of the merged per-seed
    sketches."""
    strategies = list(dict.fromkeys(summary["strategy"]))
    names = pa.array(strategies, pa.string())

    def placed() -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for batch in batches("requests", ("strategy", "kind", "outcome", "latency_ms")):
            codes = pc.index_in(batch["strategy"], value_set=names)
            keep = pc.and_(
                pc.and_(pc.equal(batch["kind"], "create"), pc.equal(batch["outcome"], "placed")),
                pc.is_valid(codes),
            )
            yield (
                pc.filter(codes, keep).to_numpy(),
                pc.filter(batch["latency_ms"], keep).to_numpy(),
            )

    latency = grouped_percentiles(placed, len(strategies), PERCENTILES)
    rows = []
    for strategy, group in summary.groupby("strategy", sort=False):
        duration = float(group["sim_duration_s"].sum())
        creates, kills = int(group["requests"].sum()), int(group["kills"].sum())
        row = {
            "strategy": strategy,
            "creates_per_s": creates / duration if duration > 0 else math.nan,
            "kills_per_s": kills / duration if duration > 0 else math.nan,
            "failed_frac": float(group["failed"].sum() / creates) if creates else math.nan,
            **dict(
                zip(
                    [f"p{p}_place_ms" for p in PERCENTILES],
                    latency[strategies.index(strategy)],
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


def utilisation_varies(summary: pd.DataFrame) -> bool:
    """Whether utilisation says what sandbox counts do not (sandboxes differ in size or
    usage): then tables and reports show its CV (upstream's LoadImbalanceCoefficient) and the
    allocation's."""
    if "util_cv" not in summary:
        return False
    return bool(((summary["util_cv"] - summary["cv"]).abs() > 1e-9).any())


BIN_WIDTHS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800)
"""Bin widths (s) a chart over time may use: round numbers a reader can count with."""


def bin_width(duration_s: float, bins: int = 50) -> float:
    """The smallest round bin width that cuts `duration_s` into at most `bins` bins."""
    return next((w for w in BIN_WIDTHS if w * bins >= duration_s), BIN_WIDTHS[-1])


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
class Contrast:
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
        ledger = STRATEGIES.resolve(strategy)
    except RegistryError:
        return None
    return issubclass(ledger, Strategy) and ledger.counts_in_progress


def contrasts(summary: pd.DataFrame, nodes: pd.DataFrame) -> list[Contrast]:
    """The run's first strategy with its own figures, then every other against it on the
    same seeds: CV, busiest and idlest node, failed creates (and for what reason), how wrong
    each view was, whether it placed exactly as an earlier strategy, and how many creates were
    ever in flight at once (what counting them in progress could change)."""
    strategies = list(dict.fromkeys(summary["strategy"]))
    base = strategies[0]
    first = summary[summary["strategy"] == base]
    paired = pd.concat([first.assign(strategy=s) for s in strategies])  # base vs each, by seed
    shifts = cv_shift(paired, summary).set_index("strategy")
    flying = summary.groupby("strategy", sort=False)
    same = same_placements(summary, nodes)
    means = summary.groupby("strategy", sort=False).mean(numeric_only=True)
    worst = summary.groupby("strategy", sort=False)["err_under_max"].max()

    def change(column: str, strategy: str, frame: pd.Series | pd.DataFrame = means) -> Change:
        pick = frame[column] if isinstance(frame, pd.DataFrame) else frame
        return Change(float(pick[base]), float(pick[strategy]))

    found = []
    for strategy in strategies:
        mine = flying.get_group(strategy)
        pair = [strategy, base, *([same[strategy]] if strategy in same else [])]
        found.append(
            Contrast(
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
                max_in_flight=int(mine["max_in_flight"].max()),
                in_flight_frac=float(mine["in_flight_frac"].mean()),
                all_in_flight=bool(mine["all_in_flight"].all()),
                replicas=int(summary["replicas"].max()),
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
