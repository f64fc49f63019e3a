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
import pyarrow.compute as pc

from harness.results.statistics import mean_interval

Batches = Callable[[str, Sequence[str]], Iterable[pa.Table]]
"""A run's (or a sweep's cells') table, some columns of it, a batch at a time: finished seeds
only (`harness.results.run_reader.RunFiles.batches`)."""

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

    def kept() -> Iterator[pa.Table]:
        for batch in batches("timeline", columns):
            index = np.rint(batch["t"].to_numpy() / (sample_interval_s or 1.0)).astype(np.int64)
            yield batch.filter(pa.array(index % every == 0))

    names = [*KEYS, "t", "cv", "util_cv", "sandboxes", "nodes", "error", "abs_error"]
    shares = nodes[[*KEYS, "node_id", "cpu_count"]]
    frames = [_samples(frame, shares) for frame in _consecutive(kept(), [*KEYS, "t"])]
    return pd.concat(frames, ignore_index=True)[names] if frames else pd.DataFrame(columns=names)


def _samples(frame: pd.DataFrame, shares: pd.DataFrame) -> pd.DataFrame:
    """`timeline_samples`' figures for the instants in `frame`, whole, in their order: the true
    rows are the lowest replica's at each instant (every replica's row carries the node's true
    count), utilisation is over the node's `cpu_count` in `shares` (NaN where none)."""
    keys = [*KEYS, "t"]
    instants = frame.groupby(keys, sort=False)
    instant = instants.ngroup().to_numpy()
    lowest = frame["replica"].to_numpy() == instants["replica"].transform("min").to_numpy()
    true = frame[lowest]
    cpus = true[[*KEYS, "node_id"]].merge(shares, on=[*KEYS, "node_id"], how="left")
    util = true["cpu_percent"].to_numpy() / cpus["cpu_count"].to_numpy(dtype=float)
    at = instant[lowest]
    counts = true["sandboxes"].to_numpy(dtype=float)
    n = np.bincount(at)
    mean, spread = _moments(at, counts, n)
    util_mean, util_spread = _moments(at, util, n)
    error = frame["cpu_error"].to_numpy()
    total = np.bincount(instant)
    first = np.unique(instant, return_index=True)[1]
    with np.errstate(invalid="ignore", divide="ignore"):
        return (
            frame.iloc[first][keys]
            .reset_index(drop=True)
            .assign(
                cv=np.where(mean > 0, spread / mean, math.nan),
                util_cv=np.where(util_mean > 0, util_spread / util_mean, math.nan),
                sandboxes=np.bincount(at, weights=counts),
                nodes=n,
                error=np.bincount(instant, weights=error) / total,
                abs_error=np.bincount(instant, weights=np.abs(error)) / total,
            )
        )


def _moments(group: np.ndarray, values: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per group (0, 1, ...: `group` of each value, `n` values in each): the mean and the
    standard deviation over the group's size (numpy's `std`), NaN where a value is."""
    mean = np.bincount(group, weights=values) / n
    deviation = values - mean[group]
    return mean, np.sqrt(np.bincount(group, weights=deviation * deviation) / n)


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


def _tally(tally: dict[int, int], keys: np.ndarray) -> None:
    """Add each key's count in `keys` to `tally`."""
    seen, counts = np.unique(keys, return_counts=True)
    for key, n in zip(seen.tolist(), counts.tolist(), strict=True):
        tally[key] = tally.get(key, 0) + n


BIN_BITS = 24
BUCKET_BITS = 16
"""How the counts' keys are packed: strategy, then time bin, then what (a kind of answer, or a
latency bucket)."""


def request_series(
    batches: Batches, summary: pd.DataFrame, width: float
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(latency, throughput) over time, per strategy, in bins of `width` seconds: p50 and p99
    of the placed creates by when they were issued, every request of every seed at once; and
    creates placed, creates failed and kills answered per second by when they were answered,
    the mean over the strategy's seeds."""
    strategies = list(dict.fromkeys(summary["strategy"]))
    names = pa.array(strategies, pa.string())
    answered: dict[int, int] = {}  # (strategy, bin, what) -> answers
    latency: dict[int, int] = {}  # (strategy, bin, bucket) -> placed creates
    for batch in batches("requests", REQUEST_COLUMNS):
        code = pc.index_in(batch["strategy"], value_set=names)
        known = pc.is_valid(code).to_numpy(zero_copy_only=False)
        code = pc.fill_null(code, 0).to_numpy().astype(np.int64)
        kill = pc.equal(batch["kind"], "kill").to_numpy(zero_copy_only=False)
        placed = pc.equal(batch["outcome"], "placed").to_numpy(zero_copy_only=False)
        what = np.where(kill, 2, np.where(placed, 0, 1))
        done = (batch["done_at"].to_numpy() // width).astype(np.int64)
        _tally(answered, (((code << BIN_BITS) | done) << 2 | what)[known])
        mine = known & ~kill & placed
        issued = (batch["issued_at"].to_numpy()[mine] // width).astype(np.int64)
        bucket = _buckets(batch["latency_ms"].to_numpy()[mine])
        _tally(latency, ((code[mine] << BIN_BITS) | issued) << BUCKET_BITS | bucket)
    per_bin: dict[tuple[int, int], dict[int, int]] = {}
    for key, n in latency.items():
        per_bin.setdefault(
            (key >> (BIN_BITS + BUCKET_BITS), key >> BUCKET_BITS & _mask(BIN_BITS)), {}
        )[key & _mask(BUCKET_BITS)] = n
    rows = []
    for (code, bin_), histogram in per_bin.items():
        p50, p99 = _histogram_quantiles(histogram, (0.5, 0.99))
        rows.append({"strategy": strategies[code], "t": bin_ * width, "p50": p50, "p99": p99})
    lat = pd.DataFrame(rows, columns=["strategy", "t", "p50", "p99"])
    seeds = summary.groupby("strategy", sort=False)["seed"].nunique()
    table: dict[tuple[str, float], dict[str, float]] = {}
    for key, n in answered.items():
        code, bin_, what = key >> (BIN_BITS + 2), key >> 2 & _mask(BIN_BITS), key & 3
        strategy = strategies[code]
        row = table.setdefault((strategy, bin_ * width), dict.fromkeys(THROUGHPUT, 0.0))
        row[THROUGHPUT[what]] += n / (seeds[strategy] * width)
    throughput = pd.DataFrame(
        [{"strategy": s, "t": t, **row} for (s, t), row in table.items()],
        columns=["strategy", "t", *THROUGHPUT],
    )
    order = {s: i for i, s in enumerate(strategies)}
    return _in_order(lat, order), _in_order(throughput, order)


def _mask(bits: int) -> int:
    return (1 << bits) - 1


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
