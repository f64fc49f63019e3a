"""What a run or a sweep will cost, estimated from its config before anything runs, and the
rule that refuses what this machine cannot do: `harness run` and `harness sweep` check it before
any results folder exists (`--force` goes on anyway), and say the estimate (`Estimate.line`)
before a run long enough for it to matter.

The estimate follows what the code holds, each part a count (from the config: nodes, scheduler
views, request rows from the arrival kind and the templates, a trace's rows counted, sandboxes
alive at once, reports in flight, closed-loop clients, timeline rows) times a cost per unit
measured on this code:

- a seed holds its model's state, the rows its logs hold until they flush (at most
  `harness.engines.virtual.FLUSH_ROWS` requests and `SAMPLE_ROWS` samples, however long it
  runs) and what the passes that read its rows back for its summary and checks hold
  (`READ_BACK_BYTES`, bounded too);
- the seeds that run at once (`workers`, on this machine's cores)
  each run in a Ray worker process of their own, beside Ray's own processes and the driver; a
  run of one seed at a time runs them in the driver's process;
- after the seeds, the driver gathers their rows into the run's files a row group at a time
  (`harness.results.atomic_files.ROW_GROUP_ROWS`), then prints the run and draws its report
  from the summary, the nodes table and batches of the large tables, while the workers, idle,
  still hold what their seeds did (a process rarely gives memory back).

A run is refused when its peak needs more memory than is available now, or when it needs more
than `LIMIT_S` of computing. The estimate leaves out what the config cannot say (create
retries, failed creates of a closed loop), so it errs low: only what is surely too big is
refused."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from harness.config import Config, ConfigError, RayConfig
from harness.engines import ENGINES
from harness.engines.ray_setup import joined_address
from harness.engines.virtual import FLUSH_ROWS, SAMPLE_ROWS
from harness.model.cluster.heartbeat import HeartbeatPlan
from harness.model.workload.arrivals import ARRIVALS
from harness.results.atomic_files import ROW_GROUP_ROWS
from harness.results.machine import Machine
from harness.wiring.demand_estimate import demand

# Costs per unit, from `bench/budget.py`; the figures measured and how are on the performance
# page (docs/performance.md, "The cost model's figures"). Bytes are rounded up and CPU seconds
# down: the estimate errs low, refusing only what is surely too big.

# A seed, in the process that runs it, beyond that process's own size.
NODE_BYTES = 1_200
"""Per node, one replica's view of it included."""
VIEW_BYTES = 550
"""Per node for each replica beyond the first."""
REPLICA_BYTES = 2_000
"""Per replica, beyond its view of the nodes."""
LIVE_SANDBOX_BYTES = 550
"""Per sandbox alive at the peak, with its pending kill."""
BURST_CREATE_BYTES = 250
"""Per create of an arrival that sends them all at once (a burst), all in flight together."""
CLIENT_BYTES = 3_500
"""Per closed-loop client with its first create's row and sandbox: each has its own lifetime
stream."""
PENDING_REPORT_BYTES = 220
"""Per report in flight."""
LOG_ROW_BYTES = 900
"""Per request row a log holds until it flushes, with the Arrow batch it becomes."""
TIMELINE_LOG_BYTES = 650
"""Per timeline row a log holds until it flushes."""
TRACE_READ_BYTES = 35e6
"""What replaying a trace holds beyond drawing the same arrivals: a batch of its rows as Python
values (`harness.config.trace_file.BATCH_ROWS`), the tags they carry."""
READ_BACK_BYTES = 20e6
"""What the passes that read a long seed's rows back hold (a batch, the bucket of latencies an
order statistic is sorted in, the herd's counters), with what the seed leaves behind beyond a
full log: bounded, however long the seed."""

# The driver, and the processes of the run.
PROCESS_BYTES = 125e6
"""The harness's own process before a run: the interpreter, numpy, pyarrow, pandas."""
GATHER_ROW_BYTES = 350
"""Per request row of the row group the gather holds, with its copy and the writer's
buffers."""
GATHER_TAG_BYTES = 0
"""Per request row of a replayed trace, whose creates carry a tag (an import's do), beyond."""
GATHER_SAMPLE_BYTES = 250
"""Per timeline row of the row group the gather holds."""
REPORT_BYTES = 75e6
"""What printing a run and drawing its report hold beyond the process: matplotlib, the columns
of a row group read, the histograms and samples drawn; bounded, however long the run."""
NODE_READ_BYTES = 600
"""Per node of every seed, the nodes table the report reads whole."""
RAY_WORKER_BYTES = 120e6
"""Per Ray worker process running a seed (the harness loaded), beyond the seed's own."""
RAY_ACTOR_BYTES = 175e6
"""Per actor process of the Ray engine."""
RAY_BASE_BYTES = 340e6
"""Ray's own processes (GCS, raylet, its agents), beside the driver."""

NODE_S = 10e-6
"""CPU per node (setup, the pre-run sync, the drain, the end state)."""
VIEW_S = 5e-6
"""Per node for each replica beyond the first."""
REQUEST_ROW_S = 20e-6
"""Per create or kill row: the engine, its write, the passes over it, the checks."""
CLIENT_S = 30e-6
"""Per closed-loop client started (its lifetime stream is seeded)."""
REPORT_S = 1e-6
"""Per report delivered."""
TIMELINE_ROW_S = 1e-6
"""Per timeline row."""
GATHER_ROW_S = 0.9e-6
"""Per request row gathered into the run's file, and printed."""
GATHER_SAMPLE_S = 0.3e-6
"""Per timeline row gathered."""
DRAW_S = 1.5
"""Printing and drawing the report of a small run: matplotlib, the figures."""
DRAW_ROW_S = 0.3e-6
"""Per request row the printing and the report read."""
DRAW_SAMPLE_S = 0.4e-6
"""Per timeline row the report reads."""
RAY_START_S = 2.5
"""Wall seconds to start Ray, or a seed's actors on Ray (docs, "A Ray cluster")."""

OVER_ROOM = 1.25
"""How far the workload's peak must exceed the cluster's room before `over_capacity` says so:
the estimate is rough (a trace's rows are counted, not their own lifetimes and sizes), and a
peak a little over the room is often met by sandboxes ending."""
LIMIT_S = 24 * 3600.0
"""Longest run (or sweep) accepted without --force: a day of computing, by the estimate's
floor. The longest shipped scenario takes minutes; a day is a typo's order of magnitude."""
SAY_S = 10.0
"""Computing from which `harness run` and `harness sweep` say their estimate before they
start: below, the run is over before the line would be read."""
RAY_WORTH_S = 30.0
"""Computing a run must be estimated to take (on one core) before `run.workers = 0` runs its
seeds as Ray tasks: below, starting Ray costs more than the other cores give back."""


@dataclass(frozen=True)
class Term:
    """One part of a cost: `count` units of `what`, their memory and CPU time, and the keys
    that drive it, each with how far it is beyond its default (the largest is named)."""

    what: str
    count: float
    memory: float
    seconds: float
    keys: dict[str, float]


_D = Config()
"""The defaults, the yardstick for how far a key has moved."""


def _up(value: float, default: float) -> float:
    return value / default


def _down(value: float, default: float) -> float:
    return default / value if value > 0 else math.inf


def _requests(config: Config) -> tuple[float, float, float, dict[str, float]]:
    """(creates, kills, sandboxes alive at the peak, the keys that drive them)."""
    w, duration = config.workload, config.run.duration_s
    d = demand(config)
    arrival = ARRIVALS[w.arrival]
    if arrival.closed:
        keys = {
            "workload.clients": _up(w.clients, _D.workload.clients),
            "run.duration_s": _up(duration, _D.run.duration_s),
            "workload.lifetime_s": _down(d.cycle, _D.workload.lifetime_s),
        }
    elif arrival.at_once:
        keys = {arrival.rate_key: _up(d.creates, arrival.expected(_D.workload, duration))}
    else:
        keys = {
            arrival.rate_key: _up(d.creates / duration, _D.workload.rate_per_s),
            "run.duration_s": _up(duration, _D.run.duration_s),
        }
    return d.creates, d.kills, d.alive, keys


TRACE_READ = "a trace read a batch at a time"
"""The term of a seed that replays a trace."""


def seed_terms(config: Config) -> list[Term]:
    """The cost of one seed of `config` on the virtual engine, part by part: its memory in the
    process that runs it (beyond that process's own) and its CPU."""
    c, h, run = config.cluster, config.heartbeat, config.run
    nodes, replicas, duration = c.node_count, config.placement.replicas, run.duration_s
    nodes_key = "cluster.pools" if c.pools else "cluster.nodes"
    views = nodes * (replicas - 1)
    creates, kills, alive, request_keys = _requests(config)
    rows = creates + kills
    beats = HeartbeatPlan(h, duration).most_beats()
    reports = nodes * replicas * (beats + 2)  # the pre-run sync, the beats, the drain
    late = (h.delay_ms + h.jitter_ms) / 1000.0
    in_flight = nodes * replicas * min(beats, math.ceil(late / h.interval_s)) if late else 0
    samples = math.floor(duration / run.sample_interval_s) + 1 if run.sample_interval_s else 0
    timeline = nodes * replicas * samples
    # The timeline's log flushes once it holds SAMPLE_ROWS rows, looked at after each sample.
    held_samples = min(timeline, SAMPLE_ROWS + nodes * replicas)
    spread = {
        nodes_key: _up(nodes, _D.cluster.nodes),
        "placement.replicas": _up(replicas, _D.placement.replicas),
        "run.duration_s": _up(duration, _D.run.duration_s),
    }
    sampling = {"run.sample_interval_s": _down(run.sample_interval_s, 1.0), **spread}
    terms = [
        Term(
            "nodes",
            nodes,
            nodes * NODE_BYTES,
            nodes * NODE_S,
            {nodes_key: spread[nodes_key]},
        ),
        Term(
            "replicas",
            replicas,
            replicas * REPLICA_BYTES,
            0.0,
            {"placement.replicas": spread["placement.replicas"]},
        ),
        Term(
            "views of the extra replicas",
            views,
            views * VIEW_BYTES,
            views * VIEW_S,
            {k: spread[k] for k in ("placement.replicas", nodes_key)},
        ),
        Term(
            "request rows",
            rows,
            min(rows, FLUSH_ROWS) * LOG_ROW_BYTES,
            rows * REQUEST_ROW_S,
            request_keys,
        ),
        Term(
            "passes reading the rows back",
            1,
            READ_BACK_BYTES if rows or timeline else 0.0,
            0.0,
            request_keys,
        ),
        Term("sandboxes alive at once", alive, alive * LIVE_SANDBOX_BYTES, 0.0, request_keys),
        Term(
            "heartbeat reports",
            reports,
            in_flight * PENDING_REPORT_BYTES,
            reports * REPORT_S,
            {"heartbeat.interval_s": _down(h.interval_s, _D.heartbeat.interval_s), **spread},
        ),
        Term(
            "timeline rows",
            timeline,
            held_samples * TIMELINE_LOG_BYTES,
            timeline * TIMELINE_ROW_S,
            sampling,
        ),
    ]
    arrival = ARRIVALS[config.workload.arrival]
    if arrival.replay:
        terms.append(Term(TRACE_READ, 1, TRACE_READ_BYTES, 0.0, request_keys))
    if arrival.at_once:
        terms.append(
            Term(
                "creates in flight at once",
                creates,
                creates * BURST_CREATE_BYTES,
                0.0,
                request_keys,
            )
        )
    if arrival.closed:
        clients = config.workload.clients
        terms.append(
            Term(
                "closed-loop clients",
                clients,
                clients * CLIENT_BYTES,
                clients * CLIENT_S,
                {"workload.clients": _up(clients, _D.workload.clients)},
            )
        )
    return terms


def seed_seconds(config: Config) -> float:
    """CPU seconds one seed of `config` takes on the virtual engine, by the estimate."""
    return sum(t.seconds for t in seed_terms(config))


def workers(config: Config, units: int, estimate_s: float, cpus: int) -> int:
    """How many units run at once: `run.workers`, or by default every core when the run is
    estimated to take `RAY_WORTH_S` of computing or more (or joins a cluster), else 1. An
    engine that runs on Ray itself runs its seeds one after another. The runner's pool and
    the estimate of the run's memory ask here alike."""
    if ENGINES[config.run.engine].on_ray or units <= 1:
        return 1
    if config.run.workers:
        return min(config.run.workers, units)
    if joined_address(config.ray.address) is not None:
        return units
    return min(cpus, units) if estimate_s >= RAY_WORTH_S else 1


def _gather(seed: list[Term], seeds: int, seeds_key: str) -> Term:
    """The rows of `seeds` seeds, each of `seed`'s terms, gathered into one file per table, a
    row group at a time (the run's close, or a sweep's cell); `seeds_key` sets how many."""
    terms = {t.what: t for t in seed}
    rows, samples = terms["request rows"], terms["timeline rows"]
    per_row = GATHER_ROW_BYTES + (GATHER_TAG_BYTES if TRACE_READ in terms else 0)
    held = max(
        min(rows.count * seeds, ROW_GROUP_ROWS) * per_row,
        min(samples.count * seeds, ROW_GROUP_ROWS) * GATHER_SAMPLE_BYTES,
    )
    seconds = seeds * (rows.count * GATHER_ROW_S + samples.count * GATHER_SAMPLE_S)
    worst = max((rows, samples), key=lambda t: t.count)
    keys = {**worst.keys, seeds_key: _up(seeds, _D.run.seeds)}
    return Term(
        "rows gathered a row group at a time",
        (rows.count + samples.count) * seeds,
        held,
        seconds,
        keys,
    )


def _report(seed: list[Term], seeds: int, seeds_key: str) -> Term:
    """Printing a run of `seeds` seeds, each of `seed`'s terms, and drawing its report: the
    nodes table read whole, the large tables a batch at a time."""
    terms = {t.what: t for t in seed}
    rows, samples = terms["request rows"], terms["timeline rows"]
    nodes = terms["nodes"]
    seconds = DRAW_S + seeds * (rows.count * DRAW_ROW_S + samples.count * DRAW_SAMPLE_S)
    keys = {**nodes.keys, seeds_key: _up(seeds, _D.run.seeds)}
    memory = REPORT_BYTES + nodes.count * seeds * NODE_READ_BYTES
    return Term("node rows the report reads", nodes.count * seeds, memory, seconds, keys)


def ray_actors(config: Config, cpus: int) -> Term:
    """The actor processes a seed on the Ray engine starts (see `RayConfig.sizes`)."""
    groups, pools = config.ray.sizes(config.cluster.node_count, cpus)
    replicas = config.placement.replicas
    actors = groups + replicas + pools
    auto = RayConfig().sizes(config.cluster.node_count, cpus)
    keys = {
        "ray.node_groups": _up(groups, auto[0]),
        "placement.replicas": _up(replicas, _D.placement.replicas),
        "ray.client_pools": _up(pools, auto[1]),
    }
    return Term("Ray actor processes", actors, actors * RAY_ACTOR_BYTES, 0.0, keys)


def _ray_own(key: str) -> Term:
    """Ray's own processes, started here; `key`: what has the run start it."""
    return Term("Ray's own processes", 1, RAY_BASE_BYTES, 0.0, {key: 1.0})


def _ray_workers(workers: int) -> Term:
    """A Ray worker process for each of `workers` seeds running at once."""
    return Term(
        "Ray worker processes", workers, workers * RAY_WORKER_BYTES, 0.0, {"run.workers": workers}
    )


@dataclass(frozen=True)
class Estimate:
    """What a run (or a sweep) needs by the estimate: memory at its peak, the seeds that run at
    once and what each holds, and its computing."""

    peak_bytes: float
    at_once: int
    each_bytes: float
    """Each seed running at once, with its Ray worker process, or (one at a time in this
    process) the seed alone."""
    where: str
    """How the seeds run: "ray" (Ray workers here), "here" (this process), "actors" (the Ray
    engine's actors here), "cluster" (a Ray cluster's)."""
    seconds: float
    """Computing, from the start to the report, on `cores` cores."""
    cores: int | None
    """Cores the seeds share; None: a cluster's, not known here."""

    def line(self) -> str | None:
        """What `harness run` and `harness sweep` say before they start; None when the run is
        too short for it to matter (`SAY_S`)."""
        if self.seconds < SAY_S:
            return None
        peak = f"~{_size(self.peak_bytes)} at the peak"
        if self.where == "ray":
            seeds = f"{self.at_once} seeds at once, each" if self.at_once > 1 else "one seed,"
            how = f"{seeds} ~{_size(self.each_bytes)}, and Ray"
        elif self.where == "here":
            how = f"one seed at a time in this process, ~{_size(self.each_bytes)}"
        elif self.where == "actors":
            how = f"one seed at a time on Ray's actors, ~{_size(self.each_bytes)}"
        else:
            how = "the seeds on the Ray cluster, this machine the driver"
        cores = (
            "on the cluster's cores"
            if self.cores is None
            else (f"on {self.cores} core" + ("s" if self.cores > 1 else ""))
        )
        return f"estimate: {peak} ({how}), ~{_duration(self.seconds)} of computing {cores}"


def _two(x: float) -> str:
    """`x` to two significant figures, as an estimate deserves, without an exponent."""
    rounded = float(f"{x:.2g}")
    return f"{rounded:,.0f}" if rounded >= 10 else f"{rounded:g}"


def _size(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB", "TB", "PB"):
        if n < 1000 or unit == "PB":
            return f"{_two(n)} {unit}"
        n /= 1000
    raise AssertionError("unreachable")


def _duration(s: float) -> str:
    if s < 120:
        return f"{_two(s)} s"
    if s < 2 * 3600:
        return f"{_two(s / 60)} min"
    if s < 3 * 86400:
        return f"{_two(s / 3600)} h"
    if s < 3 * 365 * 86400:
        return f"{_two(s / 86400)} days"
    return f"{_two(s / (365 * 86400))} years"


def _named(term: Term, extra: dict[str, float] | None = None) -> str:
    """The key furthest beyond its default among those driving `term` (and `extra`)."""
    keys = {**term.keys, **(extra or {})}
    return max(keys, key=keys.__getitem__)


def _refuse_memory(need: float, parts: list[Term], machine: Machine, who: str) -> None:
    """Refuse when `need` bytes exceed what is available, naming the key behind the largest
    of `parts` (each with the memory it adds)."""
    if need <= machine.memory_bytes:
        return
    worst = max(parts, key=lambda t: t.memory)
    raise ConfigError(
        _named(worst),
        f"too big for this machine: {who} needs ~{_size(need)} of memory "
        f"({worst.count:.3g} {worst.what}: ~{_size(worst.memory)}), "
        f"{_size(machine.memory_bytes)} is available ({machine.bound}); --force runs it anyway",
    )


def _refuse_time(seconds: float, worst: Term, how: str, extra: dict[str, float]) -> None:
    """Refuse when `seconds` exceed `LIMIT_S`, naming the key behind `worst` (or `extra`,
    when that is further beyond its default)."""
    if seconds <= LIMIT_S:
        return
    raise ConfigError(
        _named(worst, extra),
        f"too long: ~{_duration(seconds)} of computing at the least ({worst.count:.3g} "
        f"{worst.what} per seed, {how}), over the limit of {_duration(LIMIT_S)}; "
        "--force runs it anyway",
    )


def _at_once(terms: list[Term], n: int) -> list[Term]:
    """`terms` of one seed, `n` of them at once."""
    return [replace(t, memory=t.memory * n) for t in terms]


def _peak(parts: list[Term]) -> float:
    """Memory at the peak, the end of the run: the driver's process and every part. A process
    keeps what it held at its peak (Python and Arrow give little back), so what a seed held
    stays while the driver gathers (a Ray worker idle after its seed, or the driver itself
    after a seed in its process), and what the gather held while it reports."""
    return PROCESS_BYTES + sum(t.memory for t in parts)


def check_run(
    config: Config, strategies: int, machine: Machine, remote: bool, refuse: bool = True
) -> Estimate:
    """The estimate of a run of `config` under `strategies` strategies on this machine; with
    `refuse`, a ConfigError naming the dominant key when the machine cannot hold it or it would
    take over `LIMIT_S`. `remote`: Ray at an address, where the seeds (or the Ray engine's
    actors) then run."""
    terms = seed_terms(config)
    seed_s = sum(t.seconds for t in terms)
    runs = config.run.seeds * strategies
    how = f"{runs} seeds" if strategies == 1 else f"{runs} seeds of {strategies} strategies"
    seeds_key = {"run.seeds": _up(config.run.seeds, _D.run.seeds)}
    after = [_gather(terms, runs, "run.seeds"), _report(terms, runs, "run.seeds")]
    drawn = sum(t.seconds for t in after)
    if ENGINES[config.run.engine].on_ray:
        # The driver holds what a log holds until it flushes; the actors the model's state.
        held = [t for t in terms if t.what in ("request rows", "timeline rows")]
        if remote:
            fixed, seeds, where = [], held, "cluster"
        else:
            fixed = [_ray_own("run.engine"), ray_actors(config, machine.cpus)]
            seeds, where = terms, "actors"
        per_seed = config.run.duration_s * config.run.time_scale + RAY_START_S
        wall = Term("model seconds in real time", config.run.duration_s, 0.0, per_seed, {})
        seconds = per_seed * runs + drawn
        n, cores, each = 1, None if remote else machine.cpus, sum(t.memory for t in seeds)
        keys = {"run.duration_s": _up(config.run.duration_s, _D.run.duration_s), **seeds_key}
        slowest, extra = wall, keys
    else:
        n = workers(config, runs, seed_s * runs, machine.cpus)
        if n == 1:
            fixed, seeds, where, cores = [], terms, "here", 1
            each = sum(t.memory for t in terms)
        elif remote:
            fixed, seeds, where, cores, each = [], [], "cluster", None, 0.0
        else:
            fixed = [_ray_own("run.workers"), _ray_workers(n)]
            seeds, where, cores = _at_once(terms, n), "ray", n
            each = RAY_WORKER_BYTES + sum(t.memory for t in terms)
        start = RAY_START_S if n > 1 else 0.0
        seconds = seed_s * runs / n + drawn + start
        slowest, extra = max(terms, key=lambda t: t.seconds), seeds_key
        how += f", {n} at once" if n > 1 else ""
    estimate = Estimate(_peak([*fixed, *seeds, *after]), n, each, where, seconds, cores)
    if refuse:
        who = {
            "here": "one seed in this process",
            "ray": f"the run, {n} seeds at once,",
            "actors": "one seed on an embedded Ray",
            "cluster": "the driver of a run on a Ray cluster",
        }[where]
        _refuse_memory(estimate.peak_bytes, [*fixed, *seeds, *after], machine, who)
        _refuse_time(seconds, slowest, how, extra)
    return estimate


def check_sweep(
    configs: list[Config], seeds: int, machine: Machine, remote: bool, refuse: bool = True
) -> Estimate:
    """The estimate of a sweep of cells `configs` x `seeds` on this machine, one seed per core
    at once, each in a Ray worker; the driver writes a cell once its seeds are in (its rows
    gathered a row group at a time), then the report. With `refuse`, a ConfigError naming the
    dominant key when the machine cannot hold it or it would take over `LIMIT_S` on its cores.
    `remote`: the workers are on a Ray cluster, whose size is not known here, so only the
    driver's share (and no time) is checked."""
    cells = [seed_terms(config) for config in configs]
    seeds_key = {"sweep.seeds": _up(seeds, _D.run.seeds)}
    gathers = [_gather(terms, seeds, "sweep.seeds") for terms in cells]
    reports = (_report(terms, seeds, "sweep.seeds") for terms in cells)
    report = max(reports, key=lambda t: t.memory)
    after = [max(gathers, key=lambda t: t.memory), report]
    drawn = sum(t.seconds for t in gathers) + report.seconds
    computing = seeds * sum(t.seconds for terms in cells for t in terms)
    if remote:
        estimate = Estimate(_peak(after), 0, 0.0, "cluster", computing + drawn, None)
        if refuse:
            _refuse_memory(estimate.peak_bytes, after, machine, "the sweep's driver")
        return estimate
    n = min(machine.cpus, len(configs) * seeds)
    biggest = max(cells, key=lambda terms: sum(t.memory for t in terms))
    fixed = [_ray_own("sweep.seeds"), _ray_workers(n)]
    each = RAY_WORKER_BYTES + sum(t.memory for t in biggest)
    seconds = computing / n + drawn + RAY_START_S
    parts = [*fixed, *_at_once(biggest, n), *after]
    estimate = Estimate(_peak(parts), n, each, "ray", seconds, n)
    if refuse:
        _refuse_memory(estimate.peak_bytes, parts, machine, f"the sweep, {n} seeds at once,")
        slowest = max(cells, key=lambda terms: sum(t.seconds for t in terms))
        worst = max(slowest, key=lambda t: t.seconds)
        how = f"{seeds} seeds x {len(configs)} cells on {n} cores"
        _refuse_time(seconds, worst, how, seeds_key)
    return estimate


def over_capacity(config: Config) -> str | None:
    """One line when the workload asks for more sandboxes alive at once than the cluster has
    room for (`harness.wiring.demand_estimate.Demand`: `wanted` over `room`), else None. A
    create beyond the room is refused by a full node and, as upstream, placed again and again
    until its deadline: a storm of refusals, which made a run of a second take minutes. Said
    before the run, not refused: a full cluster may be what is studied."""
    d = demand(config)
    if d.wanted <= OVER_ROOM * d.room:
        return None
    cpus = sum(p.count * p.cpu_count for p in config.cluster.node_pools())
    p = config.placement
    if p.retry_refused:
        then = (
            "placed again until placement.deadline_s passes, which can make the run far "
            "longer (placement.max_asks caps the asks per create)"
        )
    else:
        then = "failed at once (placement.retry_refused is false)"
    return (
        f"{config.run.name} asks for more room than its cluster has: about {d.wanted:,.0f} "
        f"sandboxes alive at once at its peak, room for about {d.room:,.0f} ({cpus:,} vCPUs "
        f"x placement.r {p.r:g}); creates beyond it are refused by full nodes and {then}"
    )


def cells_over_capacity(configs: list[Config]) -> str | None:
    """`over_capacity` for a sweep's cells: how many, and the first one's line."""
    said = [(i, line) for i, c in enumerate(configs) if (line := over_capacity(c)) is not None]
    if not said:
        return None
    first, line = said[0]
    return f"{len(said)} of {len(configs)} cells, the first cell {first}: {line}"
