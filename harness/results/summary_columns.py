"""Every column of the summary table, declared once: its name, width, unit, which way is better,
what kind of figure it is and what it means. The Arrow schema (`arrow_schemas.SUMMARY`), the
result reference (`column_docs`), the names the summary's parts compute (`Source`) and what
`harness compare` compares and how (`Direction`, `Kind`) all derive from `SUMMARY_COLUMNS`.

A new summary figure is one `Column(...)` entry here, in the place it should take in the table,
plus its computation in the part its `source` names; tests/results/test_summary_columns.py fails
when one is missing. A fault kind's counters are declared with the kind
(`harness.model.cluster.faults.fault_kind.Counter`) and become columns here."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from harness.model.cluster.faults import COUNTERS
from harness.model.scheduling.placement.eligibility import RULES


class Direction(Enum):
    """Which way a column's change is better."""

    LOWER = "lower"
    """Lower is better (CV, failures, latencies)."""
    HIGHER = "higher"
    """Higher is better (creates placed, throughput)."""
    NEUTRAL = "neutral"
    """Neither side is better (creates issued, faults injected): a change is shown, never
    judged."""
    IDENTITY = "identity"
    """A label or an echo of the config (strategy, seed, nodes): what two runs share, not a
    result to compare."""


class Pace(Enum):
    """Whether a figure depends on the pace of the machine that ran it."""

    NEVER = "never"
    """Counted or simulated: the same on any machine (on the virtual engine, or anywhere)."""
    REAL_TIME = "real time"
    """A time or rate in model time: the machine's on an engine that runs in real time (Ray),
    not on the virtual engine."""
    ALWAYS = "always"
    """Wall-clock time: always the machine's."""


@dataclass(frozen=True)
class Kind:
    """What kind of figure a column is: how big a change must be to count (`min_effect`, a
    share of the base's value when `relative`, else in the column's unit), whether it depends on
    the machine (`pace`), and whether `harness compare` compares it unless asked (`compared`)."""

    name: str
    min_effect: float = 0.0
    relative: bool = True
    pace: Pace = Pace.NEVER
    compared: bool = True


LABEL = Kind("label", compared=False)
COUNT = Kind("count", 0.01)
RATIO = Kind("ratio", 0.01)
FRACTION = Kind("fraction", 0.001, relative=False)
RATE = Kind("rate", 0.01, pace=Pace.REAL_TIME)
LATENCY = Kind("latency", 0.05, pace=Pace.REAL_TIME)
DURATION = Kind("duration", 0.01, pace=Pace.REAL_TIME)
WALL = Kind("wall", 0.10, pace=Pace.ALWAYS, compared=False)
UTILISATION = Kind("utilisation", 0.01)
VCPU = Kind("vcpu", 0.05)
FLAG = Kind("flag", 0.0, relative=False)
SKETCH = Kind("sketch", compared=False)
KINDS = (LABEL, COUNT, RATIO, FRACTION, RATE, LATENCY, DURATION, WALL, UTILISATION)
KINDS += (VCPU, FLAG, SKETCH)
"""Every kind, for the reference."""


class Source(Enum):
    """The part that computes a column's value for each (strategy, seed)."""

    RUN = "run"
    """`harness.results.seed_result`, from the engine's name, the config and the seed."""
    SEED = "seed"
    """`harness.results.seed_figures.seed_summary`, from the seed's rows."""
    ENGINE = "engine"
    """The engine that ran the seed (`seed_result`'s `engine_wall_s`)."""
    FAULTS = "faults"
    """The fault plan's counters (`harness.model.cluster.faults`)."""
    INVARIANTS = "invariants"
    """The end-of-seed checks (`harness.results.invariants.check`)."""
    REAL_TIME = "real time"
    """What only an engine in real time measures (its `extra`); null on the virtual engine."""
    SKETCH = "sketch"
    """An engine's sketched figures (`seed_result`'s `sketches`); null on the virtual engine."""
    TIME_KEEPING = "time keeping"
    """`harness.results.time_keeping.seed_verdict`, from what an engine in real time measured
    and the scenario's time scales; null on the virtual engine, which keeps time by
    construction."""


@dataclass(frozen=True)
class Column:
    """One summary column: `width` as the model declares widths (`harness.model.recording`;
    `bin` for bytes), its unit and meaning for the reference, which way is better, its kind and
    the part that computes it."""

    name: str
    width: str
    unit: str
    direction: Direction
    kind: Kind
    source: Source
    meaning: str


def _count(name: str, direction: Direction, meaning: str, unit: str = "count") -> Column:
    """A count `seed_summary` computes: most of the summary's integers."""
    return Column(name, "i64", unit, direction, COUNT, Source.SEED, meaning)


VIOLATIONS = {
    "excluded": "Of them: on a node the create already failed on (`Create.excluded`).",
    "labels": "Of them: on a node without every label the create requires.",
    "cpu_family": "Of them: on a node of another CPU family than the create's.",
    "memory": "Of them: on a node whose memory, as the replica's ledger sees it, lacks room "
    "under `placement.memory_overcommit.ratio`.",
}
"""What each `violations_<rule>` column counts, by eligibility rule (`RULES`: one column per
rule, in its order)."""

LOWER, HIGHER = Direction.LOWER, Direction.HIGHER
NEUTRAL, IDENTITY = Direction.NEUTRAL, Direction.IDENTITY


def _percentiles(figure: str, median: str) -> tuple[Column, Column]:
    """The p50 and p99 columns of a figure an engine hands over as a sketch (model ms):
    `median` says what the figure is."""
    unit, source = "ms (model time)", Source.SKETCH
    return (
        Column(f"{figure}_p50_ms", "f64", unit, LOWER, LATENCY, source, median),
        Column(f"{figure}_p99_ms", "f64", unit, LOWER, LATENCY, source, P99_OF_THE_SAME),
    )


P99_OF_THE_SAME = "99th percentile of the same. Ray engine only."
"""What a sketched figure's p99 column means."""


def _sketch(figure: str, meaning: str) -> Column:
    """The column of a sketched figure's DDSketch bytes, merged over seeds."""
    bytes_ = "DDSketch bytes"
    return Column(f"{figure}_sketch", "bin", bytes_, IDENTITY, SKETCH, Source.SKETCH, meaning)


FAITHFUL = "faithful"
OVERLOADED = "overloaded"
"""The values of `time_keeping`: declared with the column, so a threshold reads them without
loading the verdict's data libraries."""

IN_PROCESS = "in-process"
"""The summary's `scheduler` where the harness's own pipeline placed."""

SUMMARY_COLUMNS: tuple[Column, ...] = (
    Column("engine", "str", "name", IDENTITY, LABEL, Source.RUN, "`virtual` or `ray`."),
    Column(
        "strategy",
        "str",
        "name",
        IDENTITY,
        LABEL,
        Source.RUN,
        "The ledger strategy of the row (`--compare` runs several).",
    ),
    Column(
        "seed",
        "i64",
        "integer",
        IDENTITY,
        LABEL,
        Source.RUN,
        "The seed; the same seed gives every strategy the same requests.",
    ),
    Column("nodes", "i32", "count", IDENTITY, LABEL, Source.RUN, "Nodes in the cluster."),
    Column(
        "k",
        "i32",
        "count",
        IDENTITY,
        LABEL,
        Source.RUN,
        "Candidates the sampler in use draws per placement, as it says (`Sampler.candidates`: "
        "`placement.k` for `best_of_k`, 2 for `two_choices`, ...); empty under an external "
        "scheduler.",
    ),
    Column(
        "replicas",
        "i32",
        "count",
        IDENTITY,
        LABEL,
        Source.RUN,
        "`placement.replicas`: scheduler replicas.",
    ),
    Column(
        "scheduler",
        "str",
        "name",
        IDENTITY,
        LABEL,
        Source.RUN,
        f"Who placed: `{IN_PROCESS}`, or the name an external scheduler gave itself in its "
        "`Hello` (its replicas' names joined by ` + ` should they differ), on either engine. "
        "With an external scheduler the `strategy` is only the harness's own ledger "
        "of the replica's view, and the `err_*` columns measure that ledger, not the "
        "scheduler's own view, which the harness cannot see.",
    ),
    _count("requests", NEUTRAL, "Creates issued."),
    _count("placed", HIGHER, "Creates placed."),
    _count("failed", LOWER, "Creates that failed, for any reason (`failed_*` split them)."),
    Column(
        "failed_frac", "f64", "fraction 0-1", LOWER, FRACTION, Source.SEED, "`failed / requests`."
    ),
    _count("failed_no_candidate", LOWER, "Failed creates: no candidate node was left."),
    _count(
        "failed_attempts_exhausted", LOWER, "Failed creates: `placement.max_attempts` RPCs failed."
    ),
    _count("failed_deadline", LOWER, "Failed creates: still unplaced at `placement.deadline_s`."),
    _count(
        "failed_refused",
        LOWER,
        "Failed creates: refused by a full node with `placement.retry_refused` false.",
    ),
    _count(
        "failed_asks_exhausted",
        LOWER,
        "Failed creates: asked of the scheduler `placement.max_asks` times (a cap off by "
        "default, a departure from upstream).",
    ),
    _count(
        "violations",
        LOWER,
        "Creates placed (or sent) on a node that breaks one of upstream's eligibility rules: an "
        "external scheduler's mistakes (`external.on_violation`); 0 in process, always (the "
        "`placements_keep_rules` invariant).",
    ),
    *(_count(f"violations_{rule}", LOWER, VIOLATIONS[rule]) for rule in RULES),
    Column(
        "asks_mean",
        "f64",
        "count",
        LOWER,
        RATIO,
        Source.SEED,
        "Times the scheduler was asked to place a create, mean over creates: 1, plus one per "
        "refusal or failed RPC; a node refusing again and again shows here.",
    ),
    _count("asks_max", LOWER, "The most asks one create took."),
    _count(
        "max_in_flight",
        NEUTRAL,
        "The most creates of one replica in flight at once (sent to a node, not yet answered) "
        "when it placed one of them, that one included (`requests.in_flight` + 1): what a "
        "strategy counting creates in progress can act on; at most 1, it places as one that "
        "does not.",
    ),
    Column(
        "in_flight_frac",
        "f64",
        "fraction 0-1",
        NEUTRAL,
        FRACTION,
        Source.SEED,
        "Share of the creates sent to a node that were placed while another of their replica "
        "was in flight.",
    ),
    Column(
        "all_in_flight",
        "bool",
        "flag",
        NEUTRAL,
        FLAG,
        Source.SEED,
        "Whether each replica placed its last create with all its others in flight (none "
        "answered before the last was sent): a burst, every create counted by the others.",
    ),
    _count("kills", NEUTRAL, "Kill calls issued."),
    _count("kills_failed", LOWER, "Kill calls that failed."),
    Column(
        "creates_per_s",
        "f64",
        "1/s (model time)",
        HIGHER,
        RATE,
        Source.SEED,
        "Create calls answered per second of `sim_duration_s`.",
    ),
    Column(
        "kills_per_s",
        "f64",
        "1/s (model time)",
        HIGHER,
        RATE,
        Source.SEED,
        "Kill calls answered per second of `sim_duration_s`.",
    ),
    Column(
        "cv",
        "f64",
        "ratio",
        LOWER,
        RATIO,
        Source.SEED,
        "Population standard deviation / mean of the final sandboxes per node (initial "
        "load excluded): the balance, 0 is perfect.",
    ),
    _count("max_count", LOWER, "The busiest node's sandboxes at the end.", "sandboxes"),
    _count("min_count", HIGHER, "The idlest node's sandboxes at the end.", "sandboxes"),
    Column(
        "alloc_cv",
        "f64",
        "ratio",
        LOWER,
        RATIO,
        Source.SEED,
        "Population standard deviation / mean of the nodes' allocated vCPUs at the end.",
    ),
    Column(
        "util_cv",
        "f64",
        "ratio",
        LOWER,
        RATIO,
        Source.SEED,
        "Population standard deviation / mean of the nodes' utilisation at the end "
        "(`cpu_percent` / 100 / `cpu_count`): upstream's LoadImbalanceCoefficient.",
    ),
    Column(
        "util_mean",
        "f64",
        "%",
        NEUTRAL,
        UTILISATION,
        Source.SEED,
        "Mean node utilisation at the end (actual CPU use over vCPUs).",
    ),
    Column(
        "util_min",
        "f64",
        "%",
        HIGHER,
        UTILISATION,
        Source.SEED,
        "The least utilised node's utilisation at the end.",
    ),
    Column(
        "util_max",
        "f64",
        "%",
        LOWER,
        UTILISATION,
        Source.SEED,
        "The most utilised node's utilisation at the end.",
    ),
    Column(
        "cv_time_mean",
        "f64",
        "ratio",
        LOWER,
        RATIO,
        Source.SEED,
        "The balance over the run rather than at its end: the CV of the true sandboxes per node "
        "at each timeline sample, weighted by the time until the next, over the samples where "
        "the cluster held at least one sandbox per node (fewer, and a CV measures how few there "
        "are, not how they spread); NaN without a timeline (`run.sample_interval_s = 0`).",
    ),
    Column(
        "cv_time_peak",
        "f64",
        "ratio",
        LOWER,
        RATIO,
        Source.SEED,
        "The highest CV of the true sandboxes per node at any of those samples.",
    ),
    Column(
        "alloc_cv_time_mean",
        "f64",
        "ratio",
        LOWER,
        RATIO,
        Source.SEED,
        "As `cv_time_mean`, of the nodes' allocated vCPUs (initial load included).",
    ),
    Column(
        "alloc_cv_time_peak",
        "f64",
        "ratio",
        LOWER,
        RATIO,
        Source.SEED,
        "As `cv_time_peak`, of the nodes' allocated vCPUs.",
    ),
    Column(
        "herd_share",
        "f64",
        "fraction 0-1",
        LOWER,
        FRACTION,
        Source.SEED,
        "The herd itself: in each report interval (`heartbeat.interval_s`, from 0; a create "
        "counts when its answer came), the share of the interval's placements that went to its "
        "most chosen node, over every interval, each weighing its placements.",
    ),
    Column(
        "herd_ratio",
        "f64",
        "ratio",
        LOWER,
        RATIO,
        Source.SEED,
        "`herd_share` over what the most chosen node would get were each interval's placements "
        "spread as evenly as they can be (`ceil(placed / nodes)` each): 1 is even, `nodes` "
        "every placement on one node. Unlike `cv`, an almost empty cluster cannot make it look "
        "bad or good: it counts placements, not what is left.",
    ),
    Column(
        "p50_place_ms",
        "f64",
        "ms (model time)",
        LOWER,
        LATENCY,
        Source.SEED,
        "Median `latency_ms` of the seed's placed creates.",
    ),
    Column(
        "p90_place_ms",
        "f64",
        "ms (model time)",
        LOWER,
        LATENCY,
        Source.SEED,
        "90th percentile of the same.",
    ),
    Column(
        "p99_place_ms",
        "f64",
        "ms (model time)",
        LOWER,
        LATENCY,
        Source.SEED,
        "99th percentile of the same.",
    ),
    Column(
        "err_mean_abs",
        "f64",
        "vCPU",
        LOWER,
        VCPU,
        Source.SEED,
        "Time-weighted mean of the timeline's |`cpu_error`|; NaN without a timeline. With an "
        "external scheduler, the error of the harness's own ledger (`strategy`), not of the "
        "scheduler's view (see `scheduler`).",
    ),
    Column(
        "err_over_max",
        "f64",
        "vCPU",
        LOWER,
        VCPU,
        Source.SEED,
        "Worst over-count (`cpu_error` > 0); NaN without a timeline.",
    ),
    Column(
        "err_under_max",
        "f64",
        "vCPU",
        LOWER,
        VCPU,
        Source.SEED,
        "Worst under-count, as a positive number; NaN without a timeline.",
    ),
    Column(
        "err_nonzero_frac",
        "f64",
        "fraction 0-1",
        LOWER,
        FRACTION,
        Source.SEED,
        "Share of node-time with any accounting error; NaN without a timeline.",
    ),
    Column(
        "sim_duration_s",
        "f64",
        "s (model time)",
        NEUTRAL,
        DURATION,
        Source.SEED,
        "Model time covered: `run.duration_s`, or later while answers kept coming.",
    ),
    Column(
        "engine_wall_s",
        "f64",
        "s (wall clock)",
        LOWER,
        WALL,
        Source.ENGINE,
        "Wall time the engine took for the seed.",
    ),
    # Faults injected: neither better nor worse in themselves; what they cost follows.
    *(Column(c.name, "i64", "count", NEUTRAL, COUNT, Source.FAULTS, c.meaning) for c in COUNTERS),
    Column(
        "lost_sandboxes",
        "i64",
        "sandboxes",
        LOWER,
        COUNT,
        Source.INVARIANTS,
        "Sandboxes lost to crashes (the sum of `nodes.lost`).",
    ),
    Column(
        "unknown_sandboxes",
        "i64",
        "sandboxes",
        LOWER,
        COUNT,
        Source.INVARIANTS,
        "Acknowledged sandboxes gone with a process that died (Ray engine; 0 on the virtual one).",
    ),
    Column(
        "orphans",
        "i64",
        "sandboxes",
        LOWER,
        COUNT,
        Source.INVARIANTS,
        "Sandboxes running that no answer acknowledged (a create RPC that timed out).",
    ),
    Column(
        "invariants_ok",
        "bool",
        "bool",
        HIGHER,
        FLAG,
        Source.INVARIANTS,
        "Every end-of-seed check held (`run.json`, `invariants`).",
    ),
    # Engines in real time only (null for the virtual engine); times in model ms.
    Column(
        "time_scale",
        "f64",
        "wall s per model s",
        IDENTITY,
        LABEL,
        Source.REAL_TIME,
        "`run.time_scale`. Ray engine only: null on the virtual engine.",
    ),
    *_percentiles(
        "create_rpc",
        "Median create RPC round trip the schedulers measured. Ray engine only: null on "
        "the virtual engine, where it is `cluster.create_latency_ms` by construction.",
    ),
    *_percentiles(
        "heartbeat_late",
        "Median lateness of a heartbeat (actual minus planned report time). Ray engine "
        "only: the virtual engine is never late.",
    ),
    *_percentiles(
        "report_late",
        "Median lateness of a report reaching a scheduler replica (applied minus due: taken "
        "plus `heartbeat.delay_ms` and its jitter), on top of the heartbeat's own lateness. "
        "Ray engine only: the virtual engine applies every report when due.",
    ),
    *_percentiles(
        "submit_late",
        "Median lateness of a create reaching its scheduler replica from its client (0 in "
        "the model), on top of the client's own (`send_delay_p99_ms`). Ray engine only.",
    ),
    # DDSketch protobuf of every value (harness.results.percentiles.from_bytes): merged over
    # seeds.
    _sketch(
        "create_rpc",
        "Every create RPC round trip of the seed (ms, model time) as a DDSketch "
        "(`harness.results.percentiles.from_bytes`); merges exactly over seeds. "
        "Ray engine only.",
    ),
    _sketch(
        "heartbeat_late",
        "Every heartbeat's lateness (ms, model time) as a DDSketch. Ray engine only.",
    ),
    _sketch(
        "report_late",
        "Every report's lateness at a replica (ms, model time) as a DDSketch. Ray engine only.",
    ),
    _sketch(
        "submit_late",
        "Every submitted create's lateness at its replica (ms, model time) as a DDSketch. "
        "Ray engine only.",
    ),
    Column(
        "ray_nodes",
        "i32",
        "count",
        IDENTITY,
        LABEL,
        Source.REAL_TIME,
        "Ray nodes that ran actors. Ray engine only.",
    ),
    Column(
        "driver_cpu",
        "f64",
        "share of a core",
        LOWER,
        WALL,
        Source.REAL_TIME,
        "The driver process's CPU over the run (CPU seconds per wall second). Ray engine only.",
    ),
    Column(
        "host_load",
        "f64",
        "per core",
        LOWER,
        WALL,
        Source.REAL_TIME,
        "The driver's host's 1-minute load average per core, mean over the run's polls: "
        "context for `time_keeping`, which the figures the load delays decide. Ray engine only.",
    ),
    Column(
        "send_delay_p99_ms",
        "f64",
        "ms (model time)",
        LOWER,
        LATENCY,
        Source.TIME_KEEPING,
        "99th percentile of a create's delay from issue to its client sending it (`sent_at - "
        "issued_at`): 0 in the model, the client's own lateness on Ray. Ray engine only.",
    ),
    Column(
        "time_keeping",
        "str",
        "name",
        IDENTITY,
        LABEL,
        Source.TIME_KEEPING,
        "`faithful`, or `overloaded` when a figure the engine measured left its limit against "
        "the time scales the seed's results depend on (the gap between creates, the report "
        "interval: `harness.results.time_keeping`): the results may then describe the "
        "machine. Ray engine only.",
    ),
    Column(
        "overload_figure",
        "str",
        "name",
        IDENTITY,
        LABEL,
        Source.TIME_KEEPING,
        "The figure that broke furthest (`report_lateness_ms`, `choice_lateness_ms`, "
        "`rpc_excess_ms`, `driver_cpu`: `harness.results.time_keeping.FIGURES`); null when "
        "faithful. Ray engine only.",
    ),
    Column(
        "overload_value",
        "f64",
        "model ms, or share of a core",
        IDENTITY,
        LABEL,
        Source.TIME_KEEPING,
        "That figure's value; null when faithful. Ray engine only.",
    ),
    Column(
        "overload_limit",
        "f64",
        "model ms, or share of a core",
        IDENTITY,
        LABEL,
        Source.TIME_KEEPING,
        "Its limit from the scenario's time scales; null when faithful. Ray engine only.",
    ),
    Column(
        "fitting_time_scale",
        "f64",
        "wall s per model s",
        IDENTITY,
        LABEL,
        Source.TIME_KEEPING,
        "The `run.time_scale` that would bring every broken figure under its limit, were the "
        "engine's delays the same in wall time; null when faithful. Ray engine only.",
    ),
)
"""The summary's columns, in the table's order."""

BY_NAME: dict[str, Column] = {c.name: c for c in SUMMARY_COLUMNS}
"""Each summary column by name."""


def names(source: Source) -> tuple[str, ...]:
    """The columns `source` computes, in the table's order."""
    return tuple(c.name for c in SUMMARY_COLUMNS if c.source is source)


SKETCHED = tuple(c.name.removesuffix("_sketch") for c in SUMMARY_COLUMNS if c.kind is SKETCH)
"""Figures an engine may hand over as sketches (`harness.results.seed_result`): create RPC
round trips and heartbeat lateness, in model ms; each has p50, p99 and sketch columns."""
