"""Pass/fail thresholds on a run's summary, as k6 has them: a CI job fails on numbers, not on
someone reading a table.

    THRESHOLD := [SCOPE "."] METRIC ["_" AGGREGATE] OP NUMBER
    SCOPE     := a strategy name, or "*" (the same as none: every strategy, each on its own)
    METRIC    := a numeric summary column (`cv`, `p99_place_ms`, ...) or a derived metric
    AGGREGATE := mean | median | max | min | pNN (a percentile over seeds, 1 <= NN <= 99);
                 none: every seed must pass on its own
    OP        := < | <= | > | >= | ==

`optimistic.cv_median < 0.05`, `*.p99_place_ms < 50` (every seed of every strategy),
`failed_frac == 0`. A whole column name wins over a split one: `err_over_max` is the column,
`err_over_max_mean` its mean over seeds. Parsing (`parse`) knows only names; evaluation
(`evaluate`) is pandas on the summary frame, one row per (strategy, seed).
"""

from __future__ import annotations

import difflib
import math
import operator
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harness.model.registry import RegistryError
from harness.model.scheduling.strategies import STRATEGIES
from harness.results.summary_columns import OVERLOADED, SUMMARY_COLUMNS

if TYPE_CHECKING:  # pandas is loaded by evaluation only: checking a config needs names alone
    import pandas as pd


def _overloaded(summary: pd.DataFrame) -> pd.Series:
    return (summary["time_keeping"] == OVERLOADED).astype(float)


DERIVED: dict[str, tuple[Callable[[pd.DataFrame], pd.Series], str]] = {
    "failed_frac": (lambda s: s["failed"] / s["requests"], "failed creates / creates"),
    "kills_failed_frac": (lambda s: s["kills_failed"] / s["kills"], "failed kills / kills"),
    "overloaded": (
        _overloaded,
        "1 where an engine in real time could not keep the model's time (`time_keeping`), "
        "else 0 (the virtual engine always keeps it): `overloaded == 0` fails an overloaded run",
    ),
}
"""Metrics computed from summary columns, per seed (NaN where the divisor is 0)."""

COLUMNS = tuple(
    c.name for c in SUMMARY_COLUMNS if c.width in ("i32", "i64", "f64") and c.name != "seed"
)
"""The summary columns a threshold may name: every numeric one but the seed."""
METRICS = (*COLUMNS, *DERIVED)

AGGREGATES: dict[str, Callable[[pd.Series], float]] = {
    "mean": lambda v: v.mean(),
    "median": lambda v: v.median(),
    "max": lambda v: v.max(),
    "min": lambda v: v.min(),
}
PERCENTILE = re.compile(r"p([1-9][0-9]?)")
AGGREGATE_NAMES = "mean, median, max, min, pNN (percentile, e.g. p95)"

OPS: dict[str, Callable[[Any, Any], Any]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
}
EXPRESSION = re.compile(
    r"\s*(?:(?P<scope>\*|[\w.:]+)\.)?(?P<name>\w+)\s*(?P<op><=|>=|==|<|>)\s*(?P<number>\S+)\s*"
)
FORM = "[STRATEGY.]METRIC[_AGGREGATE] OP NUMBER, e.g. optimistic.cv_median < 0.05"
EACH_SEED = "each seed"


class ThresholdError(ValueError):
    """A threshold that does not parse; the config layer names the key or flag it came from."""


@dataclass(frozen=True)
class Threshold:
    strategy: str | None
    """None: every strategy of the run, each checked on its own."""
    metric: str
    aggregate: str | None
    """None: every seed must pass."""
    op: str
    bound: float
    origin: str = field(default="", compare=False)
    """Where it was written (`--threshold`, `thresholds.<selector>`), for error messages."""

    @property
    def selector(self) -> str:
        """The left-hand side, as a `[thresholds]` key: `optimistic.cv_median`, `*.cv`."""
        suffix = f"_{self.aggregate}" if self.aggregate else ""
        return f"{self.strategy or '*'}.{self.metric}{suffix}"

    @property
    def condition(self) -> str:
        """The right-hand side, as a `[thresholds]` value: `< 0.05`."""
        return f"{self.op} {number_text(self.bound)}"

    def __str__(self) -> str:
        return f"{self.selector} {self.condition}"


def number_text(x: float) -> str:
    """The shortest text that reads back as `x`: 50, not 50.0."""
    text = repr(float(x))
    return text.removesuffix(".0")


def _close(word: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(known), n=1)
    return f"; did you mean {close[0]}?" if close else ""


def _is_aggregate(name: str) -> bool:
    return name in AGGREGATES or PERCENTILE.fullmatch(name) is not None


NAMES = (*METRICS, *(f"{metric}_{aggregate}" for metric in METRICS for aggregate in AGGREGATES))
"""Every name a threshold may take but the percentiles: what a misspelt one is likened to."""


def metric_and_aggregate(name: str) -> tuple[str, str | None]:
    if name in METRICS:
        return name, None
    metric, _, aggregate = name.rpartition("_")
    if metric in METRICS:
        if _is_aggregate(aggregate):
            return metric, aggregate
        close = _close(name, NAMES)  # the likeliest slip is in the whole name: failed_fraq
        known = f" (aggregates: {AGGREGATE_NAMES})" if close else f"; known: {AGGREGATE_NAMES}"
        raise ThresholdError(f"unknown aggregate {aggregate!r}{close}{known}")
    if _is_aggregate(aggregate):
        raise ThresholdError(f"unknown metric {metric!r}{_close(metric, METRICS)}")
    raise ThresholdError(f"unknown metric {name!r}{_close(name, NAMES)}")


def parse(text: str, origin: str = "") -> Threshold:
    """One threshold expression, checked against the summary columns and the strategies."""
    match = EXPRESSION.fullmatch(text)
    if match is None:
        raise ThresholdError(f"expected {FORM}; got {text!r}")
    scope = match["scope"]
    if scope not in (None, "*"):
        try:
            STRATEGIES.resolve(scope)
        except RegistryError:
            raise ThresholdError(f"unknown strategy {scope!r}{_close(scope, STRATEGIES)}") from None
    metric, aggregate = metric_and_aggregate(match["name"])
    try:
        bound = float(match["number"])
    except ValueError:
        raise ThresholdError(f"{match['number']!r} is not a number (in {text!r})") from None
    if not math.isfinite(bound):
        raise ThresholdError(f"the bound must be a finite number, got {match['number']!r}")
    strategy = None if scope in (None, "*") else scope
    return Threshold(strategy, metric, aggregate, match["op"], bound, origin)


def not_run(thresholds: Iterable[Threshold], strategies: Iterable[str]) -> list[Threshold]:
    """The thresholds naming a strategy that does not run: never checked, they would pass
    unseen, so the caller refuses them."""
    run = set(strategies)
    return [t for t in thresholds if t.strategy is not None and t.strategy not in run]


# -- evaluation -------------------------------------------------------------------------------


def _values(summary: pd.DataFrame, metric: str) -> pd.Series:
    """The metric per seed (index: seed), as floats; missing values are NaN."""
    import pandas as pd

    values = DERIVED[metric][0](summary) if metric in DERIVED else summary[metric]
    return pd.Series(values.to_numpy(dtype=float), index=summary["seed"].to_numpy())


def _aggregate(values: pd.Series, aggregate: str) -> float:
    percentile = PERCENTILE.fullmatch(aggregate)
    if percentile:
        return float(values.quantile(int(percentile[1]) / 100))
    return float(AGGREGATES[aggregate](values))


def aggregated(summary: pd.DataFrame, metric: str, aggregate: str) -> float:
    """A metric of one strategy's rows aggregated over its seeds, as a threshold takes it (a
    search's objective, `harness.config.search_file`); NaN if any seed lacks a value."""
    values = _values(summary, metric)
    return math.nan if values.isna().any() else _aggregate(values, aggregate)


def _worst(values: pd.Series, t: Threshold) -> float:
    """The seed value farthest on the failing side of the bound (closest to it if all pass)."""
    if t.op in ("<", "<="):
        return float(values.max())
    if t.op in (">", ">="):
        return float(values.min())
    return float(values.iloc[(values - t.bound).abs().to_numpy().argmax()])


def check(t: Threshold, summary: pd.DataFrame) -> dict[str, Any]:
    """One threshold on one strategy's rows. A seed without a value (NaN: nothing placed, a
    column the engine does not measure) fails it: a gate must not pass on no data."""
    values = _values(summary, t.metric)
    missing = values.isna()
    if t.aggregate is None:
        failing = values.index[~OPS[t.op](values, t.bound)]  # NaN compares false: fails
        value = math.nan if missing.any() else _worst(values, t)
        passed = failing.empty
    else:
        failing = values.index[missing]
        value = math.nan if missing.any() else _aggregate(values, t.aggregate)
        passed = not math.isnan(value) and bool(OPS[t.op](value, t.bound))
    return {
        "threshold": str(t),
        "strategy": str(summary["strategy"].iloc[0]),
        "over": t.aggregate or EACH_SEED,
        "value": None if math.isnan(value) else value,
        "passed": passed,
        "seeds": len(values),
        "failed_seeds": [int(s) for s in failing],
    }


def evaluate(thresholds: Iterable[Threshold], summary: pd.DataFrame) -> list[dict[str, Any]]:
    """Every threshold on every strategy of `summary` it applies to, in order: one record each
    (threshold, strategy, over, value, passed, seeds, failed_seeds), as run.json keeps them."""
    records = []
    strategies = list(dict.fromkeys(summary["strategy"]))
    for t in thresholds:
        for strategy in [t.strategy] if t.strategy else strategies:
            rows = summary[summary["strategy"] == strategy]
            if not rows.empty:
                records.append(check(t, rows))
    return records
