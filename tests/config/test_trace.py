"""Trace replay: the reader checks every row (a bad one is named by row and column, exit 2),
streams record batches rather than loading the file, and the client side replays what it reads
on the virtual engine: one create per row, at the row's time, of the row's template and size,
killed after the row's lifetime."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest

from harness.cli import main
from harness.config import ConfigError, load
from harness.config import trace_file as trace
from harness.config.trace_file import TraceError, rows
from harness.engines.virtual import VirtualEngine
from harness.model.protocol import Kind
from harness.model.random_streams import stream
from harness.wiring import scenario as wiring
from tests.support.configs import CONFIGS, scenario
from tests.support.messages import Sink

REPLAY = CONFIGS / "trace-replay.toml"
SYNTHETIC = CONFIGS / "traces" / "synthetic.csv"
IDS = frozenset({"a", "b"})


def write_csv(tmp: Path, text: str, name: str = "t.csv") -> str:
    path = tmp / name
    path.write_text(text)
    return str(path)


def write_parquet(tmp: Path, columns: dict[str, pa.Array], name: str = "t.parquet") -> str:
    path = tmp / name
    pq.write_table(pa.table(columns), path)
    return str(path)


def test_csv_and_parquet_give_the_same_plain_rows(tmp_path):
    text = (
        "time_s,template,vcpu,memory_mib,lifetime_s,usage\n0,a,,,5,\n0.5,,2,256,,0.25\n"
        "1.5,b,,,inf,1\n"
    )
    expected = [
        (0.0, "a", None, None, 5.0, None),
        (0.5, None, 2.0, 256.0, None, 0.25),
        (1.5, "b", None, None, float("inf"), 1.0),
    ]
    assert list(rows(write_csv(tmp_path, text), IDS)) == expected
    parquet = write_parquet(
        tmp_path,
        {
            "lifetime_s": pa.array([5, None, float("inf")], pa.float64()),
            "time_s": pa.array([0, 0.5, 1.5]),  # any order of columns, floats
            "template": pa.array(["a", None, "b"]).dictionary_encode(),
            "vcpu": pa.array([None, 2, None], pa.int32()),  # integers are numbers
            "memory_mib": pa.array([None, 256.0, None]),
            "usage": pa.array([None, 0.25, 1.0]),
        },
    )
    assert list(rows(parquet, IDS)) == expected
    only_times = write_csv(tmp_path, "time_s\n1\n2\n", "times.csv")
    assert list(rows(only_times, IDS)) == [(1.0, *[None] * 5), (2.0, *[None] * 5)]


@pytest.mark.parametrize(
    "text,where",
    [
        ("time_s,vcpu\n0,1\n1,abc\n", "row 2, column vcpu: not a number: 'abc'"),
        ("time_s,vcpu\n0,1\n1,0\n", "row 2, column vcpu: must be a finite number > 0, got 0.0"),
        ("time_s,vcpu\n0,inf\n", "row 1, column vcpu: must be a finite number > 0"),
        ("time_s,memory_mib\n0,-1\n", "row 1, column memory_mib: must be a finite number >= 0"),
        ("time_s\n0\n2\n1\n", "row 3, column time_s: 1.0 is before the row above (2.0)"),
        ("time_s\n-1\n", "row 1, column time_s: must be a finite number >= 0, got -1.0"),
        ("time_s\n0\nnan\n", "row 2, column time_s: must be a finite number >= 0, got nan"),
        ("time_s,vcpu\n0,1\n,1\n", "row 2, column time_s: needs a value"),
        (
            "time_s,template\n0,a\n1,c\n",
            "row 2, column template: unknown template 'c'; known: a, b",
        ),
        ("time_s,lifetime_s\n0,0\n", "row 1, column lifetime_s: must be > 0 (inf: never killed)"),
        ("time_s,lifetime_s\n0,nan\n", "row 1, column lifetime_s: must be > 0"),
        ("time_s,usage\n0,1.5\n", "row 1, column usage: must be a number in [0, 1], got 1.5"),
        ("time_s,usage\n0,-0.1\n", "row 1, column usage: must be a number in [0, 1]"),
        ("time_s,vcpu\n0,1\n1,2,3\n", "row 2: has 3 fields, the header 2"),
        ("time_s,size\n0,1\n", "unknown column 'size'; known: time_s, template, vcpu,"),
        ("vcpu\n1\n", "has no column time_s"),
        ("time_s,vcpu,vcpu\n0,1,1\n", "column 'vcpu' appears twice"),
        ("", "is not a CSV file pyarrow reads"),
    ],
)
def test_a_bad_csv_row_is_named_by_its_row_and_column(tmp_path, text, where):
    path = write_csv(tmp_path, text)
    with pytest.raises(TraceError) as caught:
        list(rows(path, IDS))
    assert caught.value.key == "workload.trace"
    assert str(caught.value) == f"workload.trace: {path}: {caught.value.reason.split(': ', 1)[1]}"
    assert where in caught.value.reason and "\n" not in str(caught.value)


@pytest.mark.parametrize(
    "columns,where",
    [
        ({"time_s": pa.array([0.0, None])}, "row 2, column time_s: needs a value"),
        ({"time_s": pa.array(["0", "x"])}, "row 2, column time_s: not a number: 'x'"),
        ({"time_s": pa.array([0.0]), "template": pa.array([1])}, "column template: must hold text"),
        ({"time_s": pa.array([True])}, "column time_s: must hold numbers, holds bool"),
    ],
)
def test_a_bad_parquet_column_or_row_is_named(tmp_path, columns, where):
    with pytest.raises(TraceError, match=where):
        list(rows(write_parquet(tmp_path, columns), IDS))


@pytest.mark.parametrize("name,content", [("t.json", "{}"), ("t.parquet", "not parquet")])
def test_a_file_that_is_not_a_trace_is_refused(tmp_path, name, content):
    with pytest.raises(TraceError, match=r"must be a \.csv or \.parquet file|is not a Parquet"):
        list(rows(write_csv(tmp_path, content, name), IDS))


def test_the_reader_streams_record_batches(tmp_path):
    """A bad last row is met only after the rows before it were handed on: the file is read a
    batch at a time, never loaded whole (150,000 CSV rows in 1 MB blocks; 70,000 Parquet rows
    in batches of 65,536)."""
    n = 150_000
    text = "time_s,vcpu\n" + "".join(f"{i / 100},1\n" for i in range(n - 1)) + "1e9,-1\n"
    got = 0
    with pytest.raises(TraceError, match=f"row {n}, column vcpu"):
        for _ in rows(write_csv(tmp_path, text), IDS):
            got += 1
    assert got == n - 1
    times = pa.array([float(i) for i in range(70_000)])
    vcpu = pa.array([1.0] * 69_999 + [0.0])
    got = 0
    with pytest.raises(TraceError, match="row 70000, column vcpu"):
        for _ in rows(write_parquet(tmp_path, {"time_s": times, "vcpu": vcpu}), IDS):
            got += 1
    assert got == 69_999


def test_check_counts_the_creates_before_the_end_once_per_file(tmp_path, monkeypatch):
    path = write_csv(tmp_path, "time_s\n0\n1\n2\n3\n")
    config = scenario(workload={"arrival": "trace", "trace": path}, run={"duration_s": 2.5})
    late = write_csv(tmp_path, "time_s\n1\n", "late.csv")
    with pytest.raises(TraceError, match=r"no row before run\.duration_s 0\.5: the run would"):
        trace.check(config.with_values({"run.duration_s": 0.5, "workload.trace": late}))
    assert trace.check(config) == 3
    monkeypatch.setattr(trace, "rows", None)  # a second check reads nothing: cached
    assert trace.check(config) == 3
    assert trace.check(config.with_value("workload.arrival", "poisson")) == 0


def test_check_refuses_a_missing_file_or_a_folder(tmp_path):
    for path, reason in ((tmp_path / "no.csv", "No such file"), (tmp_path, "is not a file")):
        config = scenario(workload={"arrival": "trace", "trace": str(path)})
        with pytest.raises(TraceError, match=reason):
            trace.check(config)


# --- replay on the client side ------------------------------------------------------------


def replayed(tmp: Path, text: str, **workload: Any) -> list[tuple]:
    """(at, client, shape, lifetime) of each create a client host sends for the trace `text`,
    every ARRIVAL handled on time, for a 10 s run."""
    path = write_csv(tmp, text)
    config = scenario(
        workload={"arrival": "trace", "trace": path, **workload}, run={"duration_s": 10}
    )
    sink = Sink()
    host = wiring.client_host(config, 0, 0, 1, sink)
    host.start()
    sent = []
    while sink.sent:
        at, kind, key, payload = sink.sent.pop(0)
        if kind == Kind.ARRIVAL:
            host.on_arrival(key, payload, at)
        elif kind == Kind.SUBMIT_CREATE:
            sent.append((at, payload[0], payload[2], payload[4][2]))
    return sent


TEMPLATES = [
    {"template": "a", "vcpu": 2.0, "lifetime_s": 3.0, "lifetime_dist": "exponential"},
    {"template": "b", "vcpu": 4.0, "lifetime_s": 7.0},
]


def test_each_row_is_one_create_with_its_template_size_and_lifetime(tmp_path):
    """Times as given; a template's shape, shared; sizes override it (one shape per size);
    the [workload] keys for a row without a template; a lifetime as given, or drawn from the
    template's distribution in row order; rows from the end on are not sent."""
    text = (
        "time_s,template,vcpu,memory_mib,lifetime_s\n"
        "0,a,,,\n0.25,b,,,1.5\n0.5,a,8,,\n0.5,a,8,,inf\n1,,,,\n2,a,,,\n10,a,,,\n"
    )
    sent = replayed(tmp_path, text, templates=TEMPLATES, memory_mib=64.0, lifetime_s=9.0)
    assert [(at, client) for at, client, _, _ in sent] == [
        (0.0, 0), (0.25, 1), (0.5, 2), (0.5, 3), (1.0, 4), (2.0, 5)
    ]  # fmt: skip
    shapes = [shape for _, _, shape, _ in sent]
    assert [(s.template, s.vcpu, s.memory_mib) for s in shapes] == [
        ("a", 2.0, 1024.0), ("b", 4.0, 1024.0), ("a", 8.0, 1024.0), ("a", 8.0, 1024.0),
        ("", 1.0, 64.0), ("a", 2.0, 1024.0),
    ]  # fmt: skip
    assert shapes[0] is shapes[5] and shapes[2] is shapes[3]
    rng = stream(0, "lifetime")
    drawn = [rng.expovariate(1 / 3.0) for _ in range(2)]  # rows 1 and 3 (template a, none given)
    lives = [life for *_, life in sent]
    assert lives == [drawn[0], 1.5, drawn[1], float("inf"), 9.0, rng.expovariate(1 / 3.0)]


def test_a_replayed_trace_on_the_virtual_engine(tmp_path):
    """The shipped trace: one create per row before the end, issued at the row's time; every
    sandbox with a given lifetime placed early enough is killed exactly that long after."""
    config = load(REPLAY).with_values({"run.duration_s": 20.0, "run.sample_interval_s": 0})
    table = pcsv.read_csv(SYNTHETIC)
    times = [t for t in table["time_s"].to_pylist() if t < 20.0]
    result = VirtualEngine().run_seed(config, seed=0)
    reqs = result.requests.to_pandas()
    creates = reqs[reqs["kind"] == "create"].sort_values("sandbox_id")
    assert creates["issued_at"].tolist() == times
    assert result.summary["failed"] == 0
    kills = reqs[reqs["kind"] == "kill"].set_index("sandbox_id")
    given = table["lifetime_s"].to_pylist()[: len(times)]
    placed = creates.set_index("sandbox_id")["done_at"]
    for sandbox, life in enumerate(given):
        if life is not None and placed[sandbox] + life < 20.0:
            assert kills.loc[sandbox, "issued_at"] == pytest.approx(placed[sandbox] + life)


# --- the command line ---------------------------------------------------------------------


def run_cli(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with redirect_stderr(err), redirect_stdout(io.StringIO()):
        code = main(argv)
    return code, err.getvalue()


def test_a_bad_row_stops_the_run_before_anything_runs(tmp_path):
    bad = write_csv(tmp_path, "time_s,template\n0,small\n1,tiny\n")
    out = tmp_path / "out"
    argv = ["run", str(REPLAY), "--set", f"workload.trace={bad}", "--out", str(out), "--quiet"]
    code, err = run_cli(argv)
    assert code == 2 and not out.exists()
    assert err == (
        f"harness: error: workload.trace: {bad}: row 2, column template: unknown template "
        "'tiny'; known: large, medium, small\n"
    )


def test_a_relative_trace_is_read_from_the_config_files_folder(tmp_path, monkeypatch):
    """In a file, from the file's folder (so a config and its trace move together); with --set,
    from the current folder."""
    (tmp_path / "cfg" / "traces").mkdir(parents=True)
    write_csv(tmp_path / "cfg" / "traces", "time_s\n0\n", "one.csv")
    config = tmp_path / "cfg" / "c.toml"
    config.write_text('[workload]\narrival = "trace"\ntrace = "traces/one.csv"\n')
    assert load(config).workload.trace == str(tmp_path / "cfg" / "traces" / "one.csv")
    monkeypatch.chdir(tmp_path)
    moved = load(config, ["workload.trace=cfg/traces/one.csv"]).workload.trace
    assert moved == str(tmp_path / "cfg" / "traces" / "one.csv")
    argv = ["run", str(config), "--seeds", "1", "--out", str(tmp_path / "o"), "--no-report"]
    code, err = run_cli(argv)
    assert (code, err) == (0, "")


def test_a_sweep_cell_with_a_bad_trace_is_refused_naming_the_cell(tmp_path):
    bad = write_csv(tmp_path, "time_s\n1\n0\n", "bad.csv")
    sweep = tmp_path / "s.toml"
    sweep.write_text(
        f'[sweep]\nbase = "{REPLAY}"\n[grid]\n"workload.trace" = ["{SYNTHETIC}", "{bad}"]\n'
    )
    code, err = run_cli(["sweep", str(sweep), "--out", str(tmp_path / "o"), "--quiet"])
    assert code == 2 and err.count("\n") == 1
    assert "row 2, column time_s" in err and "(in the cell {'workload.trace'" in err


def test_trace_errors_are_config_errors():
    """So the CLI's one error path (one line, exit 2) takes them, even mid-run."""
    assert issubclass(TraceError, ConfigError)
