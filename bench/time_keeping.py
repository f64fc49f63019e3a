"""How far the Ray engine's own delays move a scenario's results, played on the virtual engine:
each message of a kind the Ray engine delivers late is delivered late here too, by a delay drawn
per message, and the CV of each seed is set beside the same seed without it. What calibrates
the limits of `harness.results.time_keeping` (docs/performance.md, "Time keeping").

    PYTHONPATH=. python bench/time_keeping.py [--seeds 20] [--cases seed-herd,faults-crash]
    PYTHONPATH=. python bench/time_keeping.py --crash [--seeds 20]

The first form puts every delay at its limit times each of `--multiples` at once (exponential,
its p99 at that value: the Ray engine's delays are long-tailed): a report's delivery, a
create's delivery to its replica, and the two legs of a create RPC where the strategy counts
creates in progress or acts on answers. `--crash` plays faults-crash with the delays a seed
that left its conformance band measured, and with its reports late by a mean of 0.5-2 s.
Runs pure Python (it subclasses the event queue), so it sets HARNESS_PURE itself."""

from __future__ import annotations

import os
import random
import sys
from typing import Any, ClassVar

from bench_args import bench_parser

os.environ["HARNESS_PURE"] = "1"

import numpy as np

import harness.engines.virtual as virtual
from harness.config import Config, load
from harness.model.event_queue import EventQueue
from harness.model.protocol import Kind
from harness.results import time_keeping as tk
from tests.support.configs import CONFIGS

CASES = {
    "seed-herd": {},
    "seed-herd+optimistic": {"placement.strategy": "optimistic"},
    "faults-crash": {},
    "faults-lost-reports": {},
    "faults-timeout": {},
    "race-erase": {},
    "heterogeneous": {},
    "upstream-comparison": {},
}
"""Shipped scenarios (a `+` names a strategy other than the file's), and their changes."""
P99 = 4.6
"""An exponential delay's p99 over its mean (-ln 0.01)."""
CRASH = {
    "none": {},
    "as measured, reports on time": {"rpc": 108, "submit": 1200, "done": 1200},
    "reports 0.5 s late": {"report": 500},
    "reports 1 s late": {"report": 1000},
    "reports 2 s late": {"report": 2000},
    "as measured, reports 1 s late": {"rpc": 108, "submit": 1200, "done": 1200, "report": 1000},
    "as measured, reports 2 s late": {"rpc": 108, "submit": 1200, "done": 1200, "report": 2000},
}
"""faults-crash's rows: mean delays in model ms. "As measured": the seed that left its band
(create RPC p99 498 ms: two legs of 54 ms mean; placement 2.4 s at the median, the creates'
way to the replica and back)."""
KINDS = {
    "report": (Kind.REPORT,),
    "submit": (Kind.SUBMIT_CREATE,),
    "done": (Kind.CREATE_DONE,),
    "rpc": (Kind.CREATE_RPC, Kind.CREATE_ANSWER),
}
"""What each delay moves: the messages of those kinds (an RPC's mean split over its legs)."""


class Late(EventQueue):
    """The virtual engine's queue, each message of a kind in `mean` (model s) due later by an
    exponential delay of that mean."""

    mean: ClassVar[dict[int, float]] = {}
    draws = random.Random(0)

    def emit(self, at: float, kind: int, key: int, payload: Any) -> None:
        mean = self.mean.get(kind)
        if mean:
            at += self.draws.expovariate(1.0 / mean)
        super().emit(at, kind, key, payload)


virtual.EventQueue = Late  # type: ignore[misc]


def config_of(case: str) -> Config:
    base = case.split("+")[0]
    return load(CONFIGS / f"{base}.toml").with_values(
        {"run.sample_interval_s": 0.0, **CASES.get(case, {})}
    )


def play(config: Config, seed: int, means_ms: dict[str, float]) -> dict[str, Any]:
    """One seed with those delays (mean model ms per delay of `KINDS`)."""
    Late.mean = {
        kind: ms / 1000.0 / len(KINDS[name])
        for name, ms in means_ms.items()
        for kind in KINDS[name]
    }
    Late.draws = random.Random(seed)
    return virtual.VirtualEngine().run_seed(config, seed).summary


def at_limits(config: Config, creates: int, multiple: float) -> dict[str, float]:
    """Mean delays whose p99 is `multiple` times each limit of `harness.results.time_keeping`."""
    gap = tk.gap_ms(config, creates)
    interval = tk.INTERVAL_SHARE * config.heartbeat.interval_s * 1000.0
    rpc = tk.RPC_GAPS * gap if tk.answers_count(config.placement.strategy) else interval
    limits = {
        "report": min(tk.REPORT_GAPS * gap, interval),
        "submit": min(tk.CHOICE_GAPS * gap, interval),
        "rpc": min(rpc, interval),
    }
    return {name: multiple * limit / P99 for name, limit in limits.items()}


def limits(cases: list[str], seeds: int, multiples: list[float]) -> None:
    print("| case | delays | CV over seeds | mean shift | model's sd | largest same-seed change |")
    print("|---|---|---|---|---|---|")
    for case in cases:
        config = config_of(case)
        base = [play(config, s, {}) for s in range(seeds)]
        cv = np.array([b["cv"] for b in base])
        print(f"| {case} | none | {cv.min():.4f}-{cv.max():.4f} | - | {cv.std():.4f} | - |")
        for multiple in multiples:
            got = np.array(
                [
                    play(config, s, at_limits(config, base[s]["requests"], multiple))["cv"]
                    for s in range(seeds)
                ]
            )
            shift = got - cv
            print(
                f"| | {multiple:g}x the limits | {got.min():.4f}-{got.max():.4f} | "
                f"{shift.mean():+.4f} | | {np.abs(shift).max():.4f} |",
                flush=True,
            )


def crash(seeds: int) -> None:
    config = config_of("faults-crash")
    band = "outside [0.287, 0.432]"
    print(f"| faults-crash | seed 0's CV | CV over seeds | {band} | p50 placement ms |")
    print("|---|---|---|---|---|")
    for label, means in CRASH.items():
        runs = [play(config, s, means) for s in range(seeds)]
        cv = [r["cv"] for r in runs]
        out = sum(not 0.287 <= c <= 0.432 for c in cv)
        p50 = float(np.median([r["p50_place_ms"] for r in runs]))
        print(
            f"| {label} | {cv[0]:.3f} | {min(cv):.3f}-{max(cv):.3f} | {out} of {seeds} | "
            f"{p50:,.0f} |",
            flush=True,
        )


def main() -> None:
    parser = bench_parser(__doc__, "2 seeds of seed-herd, then --crash")
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--multiples", default="1,5,20")
    parser.add_argument("--crash", action="store_true", help="faults-crash's delays, row by row")
    args = parser.parse_args()
    if args.tiny:
        limits(["seed-herd"], 2, [1.0])
        crash(2)
        return
    if args.crash:
        crash(args.seeds)
    else:
        limits(args.cases.split(","), args.seeds, [float(m) for m in args.multiples.split(",")])


if __name__ == "__main__":
    sys.exit(main())
