"""The summary figures of one (strategy, seed), read from its rows a batch at a time
(`harness.results.seed_rows`): however long the run, what is held is a batch, a sample of the
timeline and a few counters per node and report interval.

Counts, failures, asks and creates in flight come from one pass over the request rows; the
placed creates' latency percentiles from a few passes more over one column, exact
(`harness.results.order_statistics`); the herd from one pass over the placed creates; the
accounting error and the balance over time from one pass over the timeline's samples."""

from __future__ import annotations

import math
from collections.abc import Iterator
from itertools import pairwise
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from harness.model.scheduling.placement.eligibility import RULES
from harness.results.order_statistics import percentiles
from harness.results.seed_rows import SeedRows

FAILURE_REASONS = ("no_candidate", "attempts_exhausted", "deadline", "refused", "asks_exhausted")
"""Why a create failed (`harness.model.scheduling.scheduler`); each has a `failed_<reason>` summary
column."""
PERCENTILES = (50, 90, 99)
"""The latency percentiles every table and summary reports."""
ERROR_TOLERANCE = 1e-6
"""vCPUs of believed-minus-true below which a sample counts as exact (float residue)."""
HERD_CELLS = 1 << 20
"""Counters of placements (one per node and report interval) held at once by the herd's pass;
a run with more intervals than fit is counted a span of intervals per pass."""


def cv(counts: np.ndarray | list[float]) -> float:
    """Coefficient of variation: population std / mean (the reference benchmark's measure)."""
    a = np.asarray(counts, dtype=float)
    mean = a.mean() if a.size else 0.0
    return float(a.std() / mean) if mean > 0 else float("nan")


def matches(column: pa.Array, value: str) -> np.ndarray:
    """Where string column `column` is `value` (a null is not), compared by Arrow: turning the
    column into numpy would first make a Python string of every row."""
    return pc.fill_null(pc.equal(column, value), False).to_numpy(zero_copy_only=False)


def seed_summary(
    nodes: pa.Table, rows: SeedRows, duration_s: float, report_interval_s: float
) -> dict[str, Any]:
    """Counts, load, latency, accounting error, balance over time and the herd of one
    (strategy, seed); sandboxes per node are the final true ones. Rates are per second of model
    time covered: the run's `duration_s`, or later if answers kept coming."""
    counted = _count_requests(rows)
    counts = nodes.column("sandboxes").to_numpy()
    sim_duration = max(duration_s, counted.pop("last_done_at"))
    creates, kills = counted["requests"], counted.pop("kills_seen")
    p50, p90, p99 = placed_latency_percentiles(rows)
    return {
        **counted,
        "kills": kills,
        "creates_per_s": float(creates / sim_duration),
        "kills_per_s": float(kills / sim_duration),
        "cv": cv(counts),
        "max_count": int(counts.max()) if counts.size else 0,
        "min_count": int(counts.min()) if counts.size else 0,
        **utilisation(nodes),
        "p50_place_ms": p50,
        "p90_place_ms": p90,
        "p99_place_ms": p99,
        "sim_duration_s": float(sim_duration),
        **timeline_figures(rows),
        **herd(rows, nodes.num_rows, report_interval_s, sim_duration),
    }


REQUEST_COLUMNS = (
    "kind",
    "outcome",
    "reason",
    "violated",
    "asks",
    "done_at",
    "rpcs",
    "replica",
    "in_flight",
)
"""What the count of a seed's request rows reads."""


def _count_requests(rows: SeedRows) -> dict[str, Any]:
    """Creates and kills, placed and failed (and why), violations, asks, creates in flight, and
    the last answer's time, in one pass."""
    n = {"requests": 0, "placed": 0, "failed": 0, "kills_seen": 0, "kills_failed": 0}
    reasons = dict.fromkeys(FAILURE_REASONS, 0)
    broke = {"violations": 0, **{f"violations_{r}": 0 for r in RULES}}
    asks_sum, asks_max, last = 0, 0, 0.0
    sent, sent_with_others, most = 0, 0, -1
    per_replica: dict[int, list[int]] = {}  # replica -> [creates sent, most others in flight]
    for batch in rows.batches("requests", REQUEST_COLUMNS):
        create = matches(batch["kind"], "create")
        kill = ~create
        failed = matches(batch["outcome"], "failed")
        n["requests"] += int(create.sum())
        n["placed"] += int((create & matches(batch["outcome"], "placed")).sum())
        n["failed"] += int((create & failed).sum())
        n["kills_seen"] += int(kill.sum())
        n["kills_failed"] += int((kill & failed).sum())
        for reason in FAILURE_REASONS:
            reasons[reason] += int((create & failed & matches(batch["reason"], reason)).sum())
        violated = batch["violated"]
        broke["violations"] += int(
            (create & pc.is_valid(violated).to_numpy(zero_copy_only=False)).sum()
        )
        for rule in RULES:
            hit = pc.fill_null(pc.match_substring_regex(violated, f"(^|\\+){rule}($|\\+)"), False)
            broke[f"violations_{rule}"] += int((create & hit.to_numpy(zero_copy_only=False)).sum())
        asked = batch["asks"].to_numpy()[create]
        asks_sum += int(asked.sum())
        asks_max = max(asks_max, int(asked.max(initial=0)))
        last = max(last, float(batch["done_at"].to_numpy().max(initial=0.0)))
        went = create & (batch["rpcs"].to_numpy() > 0)
        others = batch["in_flight"].to_numpy()[went]
        replicas = batch["replica"].to_numpy()[went]
        sent += int(went.sum())
        sent_with_others += int((others > 0).sum())
        most = max(most, int(others.max(initial=-1)))
        for replica in np.unique(replicas).tolist():
            mine = others[replicas == replica]
            seen = per_replica.setdefault(replica, [0, -1])
            seen[0] += len(mine)
            seen[1] = max(seen[1], int(mine.max()))
    creates = n["requests"]
    return {
        "requests": creates,
        "placed": n["placed"],
        "failed": n["failed"],
        "failed_frac": float(n["failed"] / creates) if creates else math.nan,
        **{f"failed_{r}": reasons[r] for r in FAILURE_REASONS},
        **broke,
        "asks_mean": asks_sum / creates if creates else math.nan,
        "asks_max": asks_max,
        "kills_seen": n["kills_seen"],
        "kills_failed": n["kills_failed"],
        "max_in_flight": most + 1,
        "in_flight_frac": sent_with_others / sent if sent else 0.0,
        "all_in_flight": bool(per_replica)
        and all(count == others + 1 for count, others in per_replica.values()),
        "last_done_at": last,
    }


def _placed_latencies(rows: SeedRows) -> Iterator[np.ndarray]:
    for batch in rows.batches("requests", ("kind", "outcome", "latency_ms")):
        placed = matches(batch["kind"], "create") & matches(batch["outcome"], "placed")
        yield batch["latency_ms"].to_numpy()[placed]


def placed_latency_percentiles(rows: SeedRows) -> tuple[float, float, float]:
    """p50, p90 and p99 of the placed creates' latency (exact, linear interpolation); NaN
    for none."""
    p50, p90, p99 = percentiles(lambda: _placed_latencies(rows), PERCENTILES)
    return p50, p90, p99


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


TIMELINE_COLUMNS = ("t", "replica", "sandboxes", "cpu_allocated", "cpu_error")
"""What the timeline's pass reads."""


def _samples(rows: SeedRows) -> Iterator[tuple[float, dict[str, np.ndarray]]]:
    """The timeline one sample at a time (every row of one instant), as written, its columns
    (`TIMELINE_COLUMNS`) as numpy: a sample cut by a batch's end is taken up again with the
    next batch. A batch's columns are converted once and each sample is a slice of them:
    converting each sample's own columns cost more than its figures."""
    carried: dict[str, np.ndarray] | None = None
    for batch in rows.batches("timeline", TIMELINE_COLUMNS):
        part = {c: batch.column(c).to_numpy(zero_copy_only=False) for c in TIMELINE_COLUMNS}
        if carried is not None:
            part = {c: np.concatenate([carried[c], part[c]]) for c in TIMELINE_COLUMNS}
        t = part["t"]
        starts = np.flatnonzero(np.diff(t)) + 1
        edges = [0, *starts.tolist()]
        for begin, end in pairwise(edges):
            yield float(t[begin]), {c: column[begin:end] for c, column in part.items()}
        carried = {c: column[edges[-1] :] for c, column in part.items()}
    if carried is not None and carried["t"].size:
        yield float(carried["t"][0]), carried


def timeline_figures(rows: SeedRows) -> dict[str, float]:
    """From the timeline's samples, each holding until the next (the last closes the run and
    weighs nothing; a timeline of one sample weighs its samples alike):

    - how wrong the scheduler's belief was (`cpu_error`, believed minus true vCPUs per node
      and replica): the mean absolute error, the worst over- and under-count (positive vCPUs)
      and the share of node-time with any error;
    - the balance over time: the time-weighted mean and the peak CV of the true sandboxes and
      of the allocated vCPUs per node, over the samples where the cluster held at least one
      sandbox per node (below that, a CV measures how few sandboxes there are, not how they
      spread).

    NaN where nothing was sampled."""
    error = {"abs": [0.0, 0.0], "wrong": [0.0, 0.0], "weight": [0.0, 0.0]}  # [timed, alike]
    over, under, seen = 0.0, 0.0, False
    balance = {"cv": [0.0, 0.0, -math.inf], "alloc_cv": [0.0, 0.0, -math.inf]}  # sum, w, peak
    previous: tuple[float, dict[str, float], dict[str, float]] | None = None

    def close(until: float | None) -> None:
        t, errors, cvs = previous  # type: ignore[misc]
        weight = 0.0 if until is None else until - t
        for key, index in (("abs", "abs"), ("wrong", "wrong"), ("weight", "rows")):
            error[key][0] += weight * errors[index]
            error[key][1] += errors[index]
        for name, value in cvs.items():
            balance[name][0] += weight * value
            balance[name][1] += weight
            balance[name][2] = max(balance[name][2], value)

    for t, sample in _samples(rows):
        err = sample["cpu_error"]
        if previous is not None:
            close(t)
        seen = True
        over = max(over, float(err.max(initial=0.0)))
        under = max(under, float(-err.min(initial=0.0)))
        replica = sample["replica"]
        true = replica == replica.min()
        sandboxes = sample["sandboxes"][true]
        cvs = {}
        if sandboxes.sum() >= sandboxes.size > 0:
            cvs = {"cv": cv(sandboxes), "alloc_cv": cv(sample["cpu_allocated"][true])}
        errors = {
            "abs": float(np.abs(err).sum()),
            "wrong": float((np.abs(err) > ERROR_TOLERANCE).sum()),
            "rows": float(err.size),
        }
        previous = (t, errors, cvs)
    if previous is not None:
        close(None)
    timed = error["weight"][0] > 0
    which = 0 if timed else 1
    weight = error["weight"][which]
    figures = {
        "err_mean_abs": error["abs"][which] / weight if seen and weight else math.nan,
        "err_over_max": over if seen else math.nan,
        "err_under_max": under if seen else math.nan,
        "err_nonzero_frac": error["wrong"][which] / weight if seen and weight else math.nan,
    }
    for name, (total, weight_sum, peak) in balance.items():
        figures[f"{name}_time_mean"] = total / weight_sum if weight_sum > 0 else math.nan
        figures[f"{name}_time_peak"] = peak if peak > -math.inf else math.nan
    return figures


def herd(
    rows: SeedRows, nodes: int, report_interval_s: float, sim_duration_s: float
) -> dict[str, float]:
    """How the placements of each report interval (the nodes' reporting period, counted from
    0; a placement's time is its answer's) crowded onto one node:

    - `herd_share`: the share of an interval's placements that went to its most chosen node,
      over every interval (each weighing its placements);
    - `herd_ratio`: that share over what the most chosen node would get were each interval's
      placements spread as evenly as they can be (`ceil(placed / nodes)` each): 1 is even,
      `nodes` is every placement on one node.

    NaN when nothing was placed."""
    intervals = int(sim_duration_s // report_interval_s) + 1 if report_interval_s > 0 else 1
    span = max(1, HERD_CELLS // max(nodes, 1))
    top, even, placed = 0, 0, 0
    for first in range(0, intervals, span):
        last = min(intervals, first + span)
        counts = np.zeros((last - first, nodes), dtype=np.int64)
        for batch in rows.batches("requests", ("kind", "outcome", "done_at", "node_id")):
            mine = matches(batch["kind"], "create") & matches(batch["outcome"], "placed")
            done = batch["done_at"].to_numpy()[mine]
            interval = (
                (done // report_interval_s).astype(np.int64)
                if report_interval_s > 0
                else np.zeros(done.size, np.int64)
            )
            inside = (interval >= first) & (interval < last)
            node = batch["node_id"].to_numpy()[mine][inside]
            cell = (interval[inside] - first) * nodes + node
            counts += np.bincount(cell, minlength=counts.size).reshape(counts.shape)
        per_interval = counts.sum(axis=1)
        top += int(counts.max(axis=1, initial=0).sum())
        even += int(np.ceil(per_interval / max(nodes, 1)).sum())
        placed += int(per_interval.sum())
    if not placed:
        return {"herd_share": math.nan, "herd_ratio": math.nan}
    return {"herd_share": top / placed, "herd_ratio": top / even}
