"""Whether a run in real time kept the model's time: each seed and the run `faithful`, or
`overloaded` naming the figure that broke and the time scale that would fit.

An engine in real time (Ray) pays its own delays on top of the model's: a heartbeat handled
late, a create RPC that takes longer than modelled, a create sent after it was issued. On a
quiet machine these are small beside the scenario's own time scales; on a busy one they grow
until the results describe the machine, not the scheduler (views staler than the report
interval says, creates in flight together that the model sends apart). Each figure is compared
with the time scale of the scenario it competes with, and the verdict names the first that
broke. The engine's delays are roughly fixed in wall time, so in model time they shrink in
proportion to `run.time_scale`: the time scale that would fit is the one that brings every
figure under its limit. The limits were calibrated on the shipped scenarios (docs/performance.md,
"Time keeping"): a quiet 2-core machine stays well inside them at the conformance time scales,
and a machine whose load stalls the engine leaves them by a wide margin."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow.compute as pc

from harness.results.order_statistics import percentiles
from harness.results.seed_rows import SeedRows
from harness.results.summary_columns import FAITHFUL, OVERLOADED

if TYPE_CHECKING:  # what it reads of a config: `config_view`, none of the layer above
    import pandas as pd

    from harness.results.config_view import ConfigView


LATE_SHARE = 0.25
"""A heartbeat's lateness (p99) may be this share of the report interval: a view that many
intervals' parts staler than modelled."""
RPC_SHARE = 0.25
"""A create RPC's excess over its modelled round trip (p99) may be this share of the report
interval: an answer that much later than modelled lands in another report's window."""
SEND_GAPS = 10.0
"""A create's delay between being issued and being sent (p99) may be this many mean gaps
between creates: beyond, creates the model sends apart are in flight together."""
DRIVER_CPU = 0.9
"""The driver's CPU, a share of one core over the seed (as Locust warns at 90%): beyond, its
polls and samples come late."""

FIGURES = {
    "heartbeat_late_p99_ms": "heartbeat lateness p99",
    "rpc_excess_p99_ms": "create RPC excess p99",
    "send_delay_p99_ms": "send delay p99",
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
    """p99 of the model ms from a create's issue to its first RPC: 0 in the model, the
    engine's own delivery and queueing on Ray; NaN when no create was sent."""
    (p99,) = percentiles(lambda: _send_delays(rows), (99,))
    return p99 * 1000.0


def _gap_ms(creates: int, duration_s: float) -> float:
    """The mean model ms between two creates issued (the run's duration over its creates)."""
    return duration_s * 1000.0 / creates if creates else math.inf


def figures(config: ConfigView, summary: dict[str, Any]) -> list[Figure]:
    """What the engine measured on one seed against the scenario's time scales."""
    interval_ms = config.heartbeat.interval_s * 1000.0
    rpc_excess = summary["create_rpc_p99_ms"] - config.cluster.create_latency_ms
    found = [
        Figure("heartbeat_late_p99_ms", summary["heartbeat_late_p99_ms"], LATE_SHARE * interval_ms),
        Figure("rpc_excess_p99_ms", rpc_excess, RPC_SHARE * interval_ms),
        Figure(
            "send_delay_p99_ms",
            summary["send_delay_p99_ms"],
            SEND_GAPS * _gap_ms(summary["requests"], config.run.duration_s),
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
