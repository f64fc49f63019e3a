"""What the report draws over time, read from a run's large tables a batch at a time: however
long the run, what is held is a batch, the instants drawn and a histogram per time bin.

The timeline is drawn at `MAX_SAMPLES` of its instants at most (every k-th sample of a long
run); request rows are counted into `statistics.bin_width` bins, their latency percentiles
read off a histogram of logarithmic buckets (`LATENCY_ACCURACY`), which a chart cannot tell
from the exact ones."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa

from harness.results.statistics import mean_interval

Batches = Callable[[str, Sequence[str]], Iterable[pa.Table]]
"""A run's (or a sweep's cells') table, some columns of it, a batch at a time: finished seeds
only (`harness.results.run_folder.RunFiles.batches`)."""

MAX_SAMPLES = 500
"""Timeline instants drawn per seed at most."""
LATENCY_ACCURACY = 0.005
"""The relative error of a latency percentile drawn over time: its histogram's buckets are
this far apart."""
KEYS = ["strategy", "seed"]


def _consecutive(tables: Iterable[pa.Table], key: Sequence[str]) -> Iterator[pd.DataFrame]:
    """The rows as pandas, cut so that rows agreeing on `key` and next to each other are never
    split between two frames (a batch's last run of them waits for the next batch)."""
    carried: pd.DataFrame | None = None
    for table in tables:
        frame = table.to_pandas()
        if carried is not None:
            frame = pd.concat([carried, frame], ignore_index=True)
        if frame.empty:
            continue
        last = frame.iloc[-1][list(key)]
        tail = (frame[list(key)] == last).all(axis=1)
        # Only the run of rows at the end that share the last key is held back.
        start = len(frame) - int(np.argmin(tail.to_numpy()[::-1])) if not tail.all() else 0
        carried = frame.iloc[start:]
        if start:
            yield frame.iloc[:start]
    if carried is not None and len(carried):
        yield carried


def timeline_samples(
    batches: Batches, nodes: pd.DataFrame, sample_interval_s: float, duration_s: float
) -> pd.DataFrame:
    """Per (strategy, seed, t) of the instants drawn: the CV of true sandboxes per node, their
    total and the nodes, the CV of utilisation (`cpu_percent / cpu_count`), and the mean
    signed and absolute accounting error per node and replica."""
    samples = math.floor(duration_s / sample_interval_s) + 1 if sample_interval_s > 0 else 1
    every = max(1, math.ceil(samples / MAX_SAMPLES))
    columns = [*KEYS, "t", "replica", "node_id", "sandboxes", "cpu_percent", "cpu_error"]
    cpus = {
        key: group.set_index("node_id")["cpu_count"]
        for key, group in nodes.groupby(KEYS, sort=False)
    }

    def kept() -> Iterator[pa.Table]:
        for batch in batches("timeline", columns):
            index = np.rint(batch["t"].to_numpy() / (sample_interval_s or 1.0)).astype(np.int64)
            yield batch.filter(pa.array(index % every == 0))

    rows = []
    for frame in _consecutive(kept(), [*KEYS, "t"]):
        for (strategy, seed, t), sample in frame.groupby([*KEYS, "t"], sort=False):
            true = sample[sample["replica"] == sample["replica"].min()]
            counts = true["sandboxes"].to_numpy(dtype=float)
            mean = counts.mean()
            share = cpus.get((strategy, seed))
            util = (
                true["cpu_percent"].to_numpy() / share.reindex(true["node_id"]).to_numpy()
                if share is not None
                else np.full(len(true), math.nan)
            )
            error = sample["cpu_error"].to_numpy()
            rows.append(
                {
                    "strategy": strategy,
                    "seed": seed,
                    "t": t,
                    "cv": counts.std() / mean if mean > 0 else math.nan,
                    "util_cv": util.std() / util.mean() if util.mean() > 0 else math.nan,
                    "sandboxes": counts.sum(),
                    "nodes": len(counts),
                    "error": error.mean(),
                    "abs_error": np.abs(error).mean(),
                }
            )
    names = [*KEYS, "t", "cv", "util_cv", "sandboxes", "nodes", "error", "abs_error"]
    return pd.DataFrame(rows, columns=names)


def cv_over_time(samples: pd.DataFrame, value: str = "cv") -> pd.DataFrame:
    """CV (`cv` of sandboxes, or `util_cv`) at each instant drawn, per strategy: the mean over
    seeds with its 95% interval, and the mean total of sandboxes (the m of the
    uniform-random line)."""
    rows = []
    for (strategy, t), group in samples.groupby(["strategy", "t"], sort=False):
        mean, lo, hi = mean_interval(group[value])
        rows.append(
            {
                "strategy": strategy,
                "t": t,
                "cv_mean": mean,
                "cv_lo": lo,
                "cv_hi": hi,
                "sandboxes": float(group["sandboxes"].mean()),
                "nodes": int(group["nodes"].iloc[0]),
            }
        )
    return pd.DataFrame(
        rows, columns=["strategy", "t", "cv_mean", "cv_lo", "cv_hi", "sandboxes", "nodes"]
    )


def accounting_over_time(samples: pd.DataFrame) -> pd.DataFrame:
    """How far each scheduler's view of a node is from the node's true allocated vCPUs, at each
    instant drawn, per strategy: the mean signed error (+: counted twice, -: invisible) and the
    mean absolute error per node, both averaged over seeds."""
    frame = samples[["strategy", "t", "error", "abs_error"]]
    return frame.groupby(["strategy", "t"], sort=False).mean().reset_index()


REQUEST_COLUMNS = [*KEYS, "kind", "outcome", "issued_at", "done_at", "latency_ms"]
THROUGHPUT = ("creates_placed", "creates_failed", "kills")


def _buckets(latency: np.ndarray) -> np.ndarray:
    """Each latency's logarithmic bucket (0 for none above zero)."""
    step = math.log1p(2 * LATENCY_ACCURACY)
    with np.errstate(divide="ignore"):
        logs = np.log(np.maximum(latency, 1e-300))
    return np.where(latency > 0, np.floor(logs / step).astype(np.int64) + 1 - BUCKET_FLOOR, 0)


BUCKET_FLOOR = math.floor(math.log(1e-9) / math.log1p(2 * LATENCY_ACCURACY))
"""The lowest bucket kept apart: any latency below a picosecond shares the first one."""


def _bucket_value(bucket: int) -> float:
    """The value a bucket stands for: the middle of its range, within `LATENCY_ACCURACY`."""
    if bucket <= 0:
        return 0.0
    step = math.log1p(2 * LATENCY_ACCURACY)
    return math.exp((bucket - 1 + BUCKET_FLOOR + 0.5) * step)


def request_series(
    batches: Batches, summary: pd.DataFrame, width: float
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(latency, throughput) over time, per strategy, in bins of `width` seconds: p50 and p99
    of the placed creates by when they were issued, every request of every seed at once; and
    creates placed, creates failed and kills answered per second by when they were answered,
    the mean over the strategy's seeds."""
    seeds = summary.groupby("strategy", sort=False)["seed"].nunique()
    counts: dict[tuple[str, float, str], int] = {}
    latency: dict[tuple[str, float], dict[int, int]] = {}
    for batch in batches("requests", REQUEST_COLUMNS):
        frame = batch.to_pandas()
        if frame.empty:
            continue
        what = np.where(frame["kind"] == "kill", "kills", "creates_" + frame["outcome"])
        done_bin = (frame["done_at"] // width) * width
        grouped = frame.groupby([frame["strategy"], done_bin.rename("t"), what], sort=False)
        for key, n in grouped.size().items():
            counts[key] = counts.get(key, 0) + int(n)
        placed = frame[(frame["kind"] == "create") & (frame["outcome"] == "placed")]
        issued_bin = (placed["issued_at"] // width) * width
        buckets = pd.Series(_buckets(placed["latency_ms"].to_numpy()), index=placed.index)
        by = [placed["strategy"], issued_bin.rename("t"), buckets.rename("bucket")]
        for (strategy, t, bucket), n in buckets.groupby(by, sort=False).size().items():
            histogram = latency.setdefault((strategy, t), {})
            histogram[bucket] = histogram.get(bucket, 0) + int(n)
    order = {s: i for i, s in enumerate(dict.fromkeys(summary["strategy"]))}
    rows = []
    for (strategy, t), histogram in latency.items():
        if strategy in order:
            p50, p99 = _histogram_quantiles(histogram, (0.5, 0.99))
            rows.append({"strategy": strategy, "t": t, "p50": p50, "p99": p99})
    lat = pd.DataFrame(rows, columns=["strategy", "t", "p50", "p99"])
    throughput = pd.DataFrame(
        [
            {"strategy": s, "t": t, "what": w, "n": n}
            for (s, t, w), n in counts.items()
            if s in order
        ],
        columns=["strategy", "t", "what", "n"],
    )
    table = throughput.pivot_table(
        index=["strategy", "t"], columns="what", values="n", aggfunc="sum", fill_value=0
    ).reindex(columns=list(THROUGHPUT), fill_value=0)
    if len(table):
        per = table.index.get_level_values("strategy").map(seeds).to_numpy() * width
        table = table.div(per, axis=0)
    table = table.reset_index()
    table.columns.name = None
    return _in_order(lat, order), _in_order(table, order)


def _histogram_quantiles(histogram: dict[int, int], qs: Sequence[float]) -> list[float]:
    """Quantiles of the values a bucket histogram counts (each value its bucket's)."""
    buckets = sorted(histogram)
    cumulative = np.cumsum([histogram[b] for b in buckets])
    total = int(cumulative[-1])
    found = []
    for q in qs:
        rank = min(total - 1, max(0, math.ceil(q * total) - 1))
        found.append(_bucket_value(buckets[int(np.searchsorted(cumulative, rank, "right"))]))
    return found


def _in_order(frame: pd.DataFrame, order: dict[str, int]) -> pd.DataFrame:
    """`frame` by strategy in the run's order, then by time."""
    if frame.empty:
        return frame.reset_index(drop=True)
    rank = frame["strategy"].map(order)
    return (
        frame.assign(_rank=rank)
        .sort_values(["_rank", "t"], kind="stable")
        .drop(columns="_rank")
        .reset_index(drop=True)
    )
