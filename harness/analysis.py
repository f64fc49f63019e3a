"""Numbers drawn from results: CV, per-seed summaries, intervals over seeds, and theory lines."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa


def cv(counts: np.ndarray | list[float]) -> float:
    """Coefficient of variation: population std / mean (the reference benchmark's measure)."""
    a = np.asarray(counts, dtype=float)
    mean = a.mean() if a.size else 0.0
    return float(a.std() / mean) if mean > 0 else float("nan")


def seed_summary(nodes: pa.Table, requests: pa.Table) -> dict[str, Any]:
    """Counts and latency of one (strategy, seed); sandboxes per node are the final true ones."""
    counts = nodes.column("sandboxes").to_numpy()
    kind = requests.column("kind").to_numpy(zero_copy_only=False)
    outcome = requests.column("outcome").to_numpy(zero_copy_only=False)
    latency = requests.column("latency_ms").to_numpy()
    creates = kind == "create"
    placed = creates & (outcome == "placed")
    placed_latency = latency[placed]
    p50, p99 = (
        np.percentile(placed_latency, [50, 99]) if placed_latency.size else (math.nan, math.nan)
    )
    return {
        "requests": int(creates.sum()),
        "placed": int(placed.sum()),
        "failed": int((creates & (outcome == "failed")).sum()),
        "kills": int((kind == "kill").sum()),
        "cv": cv(counts),
        "max_count": int(counts.max()) if counts.size else 0,
        "min_count": int(counts.min()) if counts.size else 0,
        "p50_place_ms": float(p50),
        "p99_place_ms": float(p99),
    }


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


def by_strategy(summary: pd.DataFrame) -> pd.DataFrame:
    """One row per strategy (in first-seen order): CV mean with 95% interval, and the rest."""
    rows = []
    for strategy, group in summary.groupby("strategy", sort=False):
        mean, lo, hi = mean_interval(group["cv"])
        rows.append(
            {
                "strategy": strategy,
                "seeds": len(group),
                "cv_mean": mean,
                "cv_lo": lo,
                "cv_hi": hi,
                "cv_median": float(group["cv"].median()),
                "max_count": float(group["max_count"].mean()),
                "min_count": float(group["min_count"].mean()),
                "placed": float(group["placed"].mean()),
                "failed": float(group["failed"].mean()),
                "p99_place_ms": float(group["p99_place_ms"].mean()),
            }
        )
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


def cv_over_time(timeline: pd.DataFrame) -> pd.DataFrame:
    """CV of the true sandboxes per node at each sample, per strategy: mean over seeds with its
    95% interval, and the mean sandboxes in all (the m of the uniform-random line)."""
    true = timeline[timeline["replica"] == timeline["replica"].min()]
    per_seed = true.groupby(["strategy", "seed", "t"], sort=False)["sandboxes"].agg(
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


def accounting_over_time(timeline: pd.DataFrame) -> pd.DataFrame:
    """How far each scheduler's view of a node is from the node's true allocated vCPUs, at each
    sample, per strategy: the mean signed error (+: counted twice, -: invisible) and the mean
    absolute error per node, both averaged over seeds."""
    error = timeline["view_cpu_allocated"] - timeline["cpu_allocated"]
    frame = timeline[["strategy", "seed", "t"]].assign(error=error, abs_error=error.abs())
    per_seed = frame.groupby(["strategy", "seed", "t"], sort=False).mean()
    return per_seed.groupby(["strategy", "t"], sort=False).mean().reset_index()


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
