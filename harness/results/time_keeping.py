"""Whether a run in real time kept the model's time: each seed and the run `faithful`, or
`overloaded` naming the figure that broke and the time scale that would fit.

An engine in real time (Ray) pays its own delays on top of the model's, and each moves an event
the results depend on: a report applied late (its heartbeat handled late, then its delivery to
the replica), a create chosen late (its client's timer, then its delivery), a create RPC
answered late. A delay matters as far as it moves events across others whose order the model
decides: above all a create across a report or an answer, whose rate is the gap between two
creates of one replica. So each figure is compared with the time scale it competes with:

- a report applied late, and a create chosen late: the gap between creates (so many creates
  land on the other side of the report than the model puts there), and at most a share of the
  report interval (a view staler than modelled) where creates are sparse;
- a create RPC answered late: the gap between creates where the strategy counts creates in
  progress or acts on answers (a late answer there is a create counted twice, or erased, by
  the report it crosses), and the report interval where only reports move the view (`stale`:
  an answer changes nothing, and a node's late action is one create among the interval's);
- the driver's CPU: a share of one core (beyond, its polls and samples come late).

The engine's delays are roughly fixed in wall time, so in model time they shrink in proportion
to `run.time_scale`: the time scale that would fit is the one that brings every figure under
its limit. The limits were calibrated by playing the shipped scenarios on the virtual engine
with such delays added (docs/performance.md, "Time keeping"): delays within them leave the
results within the model's own spread over seeds; beyond, they leave it."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow.compute as pc

from harness.model.scheduling.strategies import STRATEGIES
from harness.model.workload.arrivals import ARRIVALS
from harness.results.order_statistics import percentiles
from harness.results.seed_rows import SeedRows
from harness.results.summary_columns import FAITHFUL, OVERLOADED

if TYPE_CHECKING:  # what it reads of a config: `config_view`, none of the layer above
    import pandas as pd

    from harness.results.config_view import ConfigView


REPORT_GAPS = 2.0
"""A report's lateness (p99, the heartbeat's and the delivery's added) may be this many gaps
between creates of one replica: about that many creates chosen on the other side of it."""
CHOICE_GAPS = 5.0
"""A create's lateness in reaching its replica (p99, the client's send delay and the delivery
added) may be this many gaps: creates late alike move together, so only their spread moves one
across a report, and it is smaller than the p99."""
RPC_GAPS = 2.0
"""A create RPC's excess over its modelled round trip (p99) may be this many gaps where the
strategy counts creates in progress or acts on answers."""
INTERVAL_SHARE = 0.25
"""Any lateness may be at most this share of the report interval: a view that much staler than
modelled, and the limit of a create RPC's excess where only reports move the view."""
DRIVER_CPU = 0.9
"""The driver's CPU, a share of one core over the seed (as Locust warns at 90%): beyond, its
polls and samples come late."""

FIGURES = {
    "report_lateness_ms": "report lateness p99 (heartbeat + delivery)",
    "choice_lateness_ms": "create lateness p99 (send + delivery)",
    "rpc_excess_ms": "create RPC excess p99",
    "driver_cpu": "driver CPU",
}
"""Every figure the verdict judges, and its words."""


@dataclass(frozen=True)
class Figure:
    """One measured figure against its limit, both in the figure's unit (model ms, or a share
    of a core)."""

    name: str
    value: float
    limit: float

    @property
    def broke(self) -> bool:
        return self.value > self.limit

    @property
    def ratio(self) -> float:
        return self.value / self.limit if self.limit > 0 else math.inf


def _send_delays(rows: SeedRows) -> Iterator[np.ndarray]:
    for batch in rows.batches("requests", ("kind", "rpcs", "sent_at", "issued_at")):
        sent = pc.fill_null(
            pc.and_(pc.equal(batch["kind"], "create"), pc.greater(batch["rpcs"], 0)), False
        ).to_numpy(zero_copy_only=False)
        yield (batch["sent_at"].to_numpy() - batch["issued_at"].to_numpy())[sent]


def send_delay_p99_ms(rows: SeedRows) -> float:
    """p99 of the model ms from a create's issue to its client sending it: 0 in the model, the
    client's own lateness on Ray; NaN when no create was sent."""
    (p99,) = percentiles(lambda: _send_delays(rows), (99,))
    return p99 * 1000.0


def gap_ms(config: ConfigView, creates: int) -> float:
    """The mean model ms between two creates one replica chooses (the run's duration over its
    creates, each replica taking its share). A burst sends every create at one instant, before
    any answer: it has no gap for a delay to move a create across, and only the report
    interval bounds its delays (infinite here)."""
    if not creates or ARRIVALS.resolve(config.workload.arrival).at_once:
        return math.inf
    return config.run.duration_s * 1000.0 * config.placement.replicas / creates


def answers_count(strategy: str) -> bool:
    """Whether a create's answer moves what the strategy scores: it counts creates in progress
    until answered, or changes its view on an answer (every strategy but `stale`)."""
    kind = STRATEGIES.resolve(strategy)
    return kind.counts_in_progress or not kind.view_is_last_report


def _sum(summary: dict[str, Any], *parts: str) -> float:
    """Delays measured apart (`parts`, summary columns), added: NaN only when none was."""
    known = [v for v in (summary.get(p, math.nan) for p in parts) if not math.isnan(v)]
    return sum(known) if known else math.nan


def figures(config: ConfigView, summary: dict[str, Any]) -> list[Figure]:
    """What the engine measured on one seed against the time scales its results depend on."""
    interval = INTERVAL_SHARE * config.heartbeat.interval_s * 1000.0
    gap = gap_ms(config, summary["requests"])
    rpc_scale = RPC_GAPS * gap if answers_count(config.placement.strategy) else math.inf
    found = [
        Figure(
            "report_lateness_ms",
            _sum(summary, "heartbeat_late_p99_ms", "report_late_p99_ms"),
            min(REPORT_GAPS * gap, interval),
        ),
        Figure(
            "choice_lateness_ms",
            _sum(summary, "send_delay_p99_ms", "submit_late_p99_ms"),
            min(CHOICE_GAPS * gap, interval),
        ),
        Figure(
            "rpc_excess_ms",
            summary["create_rpc_p99_ms"] - config.cluster.create_latency_ms,
            min(rpc_scale, interval),
        ),
        Figure("driver_cpu", summary["driver_cpu"], DRIVER_CPU),
    ]
    return [f for f in found if not math.isnan(f.value)]


def fitting_scale(time_scale: float, broken: list[Figure]) -> float:
    """The time scale that would bring every broken figure under its limit, were the engine's
    delays the same in wall time (model-time delays shrink as 1 / scale; so does the driver's
    work per wall second), rounded up to two significant digits."""
    needed = max((time_scale * f.ratio for f in broken), default=time_scale)
    if not math.isfinite(needed) or needed <= 0:
        return math.nan
    step = 10 ** (math.floor(math.log10(needed)) - 1)
    return math.ceil(needed / step - 1e-9) * step


def seed_verdict(config: ConfigView, summary: dict[str, Any], rows: SeedRows) -> dict[str, Any]:
    """The time-keeping columns of one seed an engine in real time ran."""
    summary = {**summary, "send_delay_p99_ms": send_delay_p99_ms(rows)}
    found = figures(config, summary)
    broken = sorted((f for f in found if f.broke), key=lambda f: f.ratio, reverse=True)
    worst = broken[0] if broken else None
    return {
        "send_delay_p99_ms": summary["send_delay_p99_ms"],
        "time_keeping": OVERLOADED if broken else FAITHFUL,
        "overload_figure": worst.name if worst else None,
        "overload_value": worst.value if worst else math.nan,
        "overload_limit": worst.limit if worst else math.nan,
        "fitting_time_scale": fitting_scale(config.run.time_scale, broken) if broken else math.nan,
    }


def run_verdict(summary: pd.DataFrame) -> dict[str, Any] | None:
    """The run's verdict from its seeds' (None when no seed was run in real time): overloaded
    if any seed was, naming the worst seed's figure, and the largest fitting time scale."""
    if "time_keeping" not in summary or summary["time_keeping"].isna().all():
        return None
    measured = summary[summary["time_keeping"].notna()]
    over = measured[measured["time_keeping"] == OVERLOADED]
    verdict: dict[str, Any] = {
        "verdict": OVERLOADED if len(over) else FAITHFUL,
        "seeds": len(measured),
        "overloaded_seeds": [
            {"strategy": str(r["strategy"]), "seed": int(r["seed"])} for _, r in over.iterrows()
        ],
        "time_scale": float(measured["time_scale"].iloc[0]),
        "host_load": _max(measured, "host_load"),
        "driver_cpu": _max(measured, "driver_cpu"),
    }
    if len(over):
        ratio = over["overload_value"] / over["overload_limit"]
        worst = over.loc[ratio.idxmax()]
        verdict |= {
            "figure": str(worst["overload_figure"]),
            "value": float(worst["overload_value"]),
            "limit": float(worst["overload_limit"]),
            "fitting_time_scale": float(over["fitting_time_scale"].max()),
        }
    return verdict


def kept_by_strategy(summary: pd.DataFrame) -> dict[str, tuple[int, int]]:
    """Per strategy an engine in real time ran, (its overloaded seeds, its seeds): what the
    tables and the headline mark its figures with. Empty for a run not in real time."""
    if "time_keeping" not in summary:
        return {}
    measured = summary[summary["time_keeping"].notna()]
    return {
        str(strategy): (int((group["time_keeping"] == OVERLOADED).sum()), len(group))
        for strategy, group in measured.groupby("strategy", sort=False)
    }


def mark(counts: tuple[int, int]) -> str:
    """A strategy's time keeping in a table's cell: `faithful`, or `OVERLOADED 2 of 3` (its
    overloaded seeds of its seeds)."""
    over, seeds = counts
    return f"{OVERLOADED.upper()} {over} of {seeds}" if over else FAITHFUL


def _max(frame: pd.DataFrame, column: str) -> float | None:
    if column not in frame or frame[column].isna().all():
        return None
    return float(frame[column].max())


def _amount(name: str, value: float) -> str:
    return f"{value:.0%} of a core" if name == "driver_cpu" else f"{value:,.0f} model ms"


def line(verdict: dict[str, Any] | None) -> str:
    """The run's time keeping in one line; empty for a run not in real time."""
    if verdict is None:
        return ""
    scale = verdict["time_scale"]
    if verdict["verdict"] == FAITHFUL:
        return f"time keeping: faithful at time_scale {scale:g} (every seed within its limits)"
    name = verdict["figure"]
    seeds = f"{len(verdict['overloaded_seeds'])} of {verdict['seeds']} seeds"
    load = (
        "" if verdict["host_load"] is None else f"; host load {verdict['host_load']:.1f} per core"
    )
    return (
        f"time keeping: OVERLOADED in {seeds}: {FIGURES.get(name, name)} "
        f"{_amount(name, verdict['value'])} against a limit of {_amount(name, verdict['limit'])} "
        f"at time_scale {scale:g}{load}; results may describe the machine, not the scheduler: "
        f"rerun on a quieter machine or with --set run.time_scale={verdict['fitting_time_scale']:g}"
    )
