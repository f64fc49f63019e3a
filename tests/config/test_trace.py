"""Trace replay: the reader checks every row (a bad one is named by row and column, exit 2),
streams record batches rather than loading the file, and the client side replays what it reads
on the virtual engine: one create per row, at the row's time, of the row's template and size,
killed after the row's lifetime."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest

from harness.cli import main
from harness.config import Config, ConfigError, load
from harness.config import trace_file as trace
from harness.config.trace_file import TraceError, rows
from harness.config.traces.trace_format import SPREAD_KEY
from harness.engines.virtual import VirtualEngine
from harness.model.protocol import Kind
from harness.model.random_streams import Streams
from harness.wiring import scenario as wiring
from tests.support.configs import CONFIGS, scenario
from tests.support.distributions import KS_999, ks_distance
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
        "time_s,template,vcpu,memory_mib,lifetime_s,usage,tag\n0,a,,,5,,j1/t1\n"
        "0.5,,2,256,,0.25,\n1.5,b,,,inf,1,j1/t2\n"
    )
    expected = [
        (0.0, "a", None, None, 5.0, None, "j1/t1"),
        (0.5, None, 2.0, 256.0, None, 0.25, None),
        (1.5, "b", None, None, float("inf"), 1.0, "j1/t2"),
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
            "tag": pa.array(["j1/t1", None, "j1/t2"]),
        },
    )
    assert list(rows(parquet, IDS)) == expected
    only_times = write_csv(tmp_path, "time_s\n1\n2\n", "times.csv")
    assert list(rows(only_times, IDS)) == [(1.0, *[None] * 6), (2.0, *[None] * 6)]


def test_a_memory_share_is_of_the_largest_nodes_memory(tmp_path):
    """`memory_share` instead of `memory_mib`: a fraction of the node memory the caller names
    (the run names its largest pool's); 0 and 1 are shares too."""
    path = write_csv(tmp_path, "time_s,memory_share\n0,0.25\n1,\n2,1\n3,0\n")
    assert [row[3] for row in rows(path, IDS, 4096.0)] == [1024.0, None, 4096.0, 0.0]
    pools = {
        "pools": [
            {"count": 2, "memory_mib": 1000.0},
            {"count": 1, "memory_mib": 8000.0},
            {"count": 1, "memory_mib": 2000.0},
        ]
    }
    config = scenario(cluster=pools, workload={"arrival": "trace", "trace": path})
    assert trace.node_memory_mib(config) == 8000.0


def test_zero_lifetimes_and_usage_above_the_request_are_creates(tmp_path):
    """A lifetime of 0 is a sandbox killed at once (as a drawn non-positive one is), and a
    usage above 1 one that uses more than it asked for: both rows replay; a negative lifetime
    or usage is still refused."""
    path = write_csv(tmp_path, "time_s,lifetime_s,usage\n0,0,2.5\n1,3,1\n")
    assert [(row[4], row[5]) for row in rows(path, IDS)] == [(0.0, 2.5), (3.0, 1.0)]


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
        (
            "time_s,lifetime_s\n0,-1\n",
            "row 1, column lifetime_s: must be >= 0 (0: killed at once, inf: never), got -1.0",
        ),
        ("time_s,lifetime_s\n0,nan\n", "row 1, column lifetime_s: must be >= 0"),
        ("time_s,usage\n0,-0.1\n", "row 1, column usage: must be a finite number >= 0"),
        ("time_s,usage\n0,inf\n", "row 1, column usage: must be a finite number >= 0"),
        (
            "time_s,memory_share\n0,0.5\n1,1.5\n",
            "row 2, column memory_share: must be a number in [0, 1] (of a node's memory), got 1.5",
        ),
        ("time_s,memory_share\n0,abc\n", "row 1, column memory_share: not a number: 'abc'"),
        ("time_s,memory_mib,memory_share\n0,1,\n", "has memory_mib and memory_share: a trace"),
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
    return [create[:4] for create in sent_creates(config)]


def sent_creates(config: Config, seed: int = 0) -> list[tuple]:
    """(at, client, shape, lifetime, tag) of each create a client host sends for `config`'s
    trace, every ARRIVAL handled on time."""
    sink = Sink()
    host = wiring.client_host(config, seed, 0, 1, sink)
    host.start()
    sent = []
    while sink.sent:
        at, kind, key, payload = sink.sent.pop(0)
        if kind == Kind.ARRIVAL:
            host.on_arrival(key, payload, at)
        elif kind == Kind.SUBMIT_CREATE:
            _, life, tag = payload[4][1:]
            sent.append((at, payload[0], payload[2], life, tag))
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
    rng = Streams(0).lifetimes()
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


def spread_trace(tmp: Path, per_instant: int, instants: int) -> str:
    """A trace of `per_instant` rows at each of the whole seconds 0 to `instants` - 1, tagged
    by their row; every other row gives its lifetime, the others draw theirs."""
    lines = ["time_s,lifetime_s,tag"]
    for row in range(per_instant * instants):
        life = "5" if row % 2 else ""
        lines.append(f"{row // per_instant},{life},r{row}")
    return write_csv(tmp, "\n".join(lines) + "\n")


def test_a_spread_sends_each_instants_rows_at_uniform_times_over_the_seconds_after_it(tmp_path):
    """300 rows at each of 0, 1 and 2 s, spread over 1 s: each row in its own second, in row
    order (so the n-th create is the n-th row, tag and all), the offsets uniform (five seeds'
    Kolmogorov-Smirnov distance from U(0, 1) within the 99.9% bound), other seeds other times;
    the lifetimes drawn for the rows that give none are those of the trace unspread (the
    spread draws from a stream of its own)."""
    path = spread_trace(tmp_path, 300, 3)
    workload = {
        "arrival": "trace",
        "trace": path,
        "lifetime_s": 9.0,
        "lifetime_dist": "exponential",
    }
    plain = scenario(workload=workload, run={"duration_s": 10})
    spread = plain.with_value("workload.trace_spread_s", 1.0)
    offsets = []
    for seed in range(5):
        sent = sent_creates(spread, seed)
        assert [tag for *_, tag in sent] == [f"r{row}" for row in range(900)]
        assert [client for _, client, *_ in sent] == list(range(900))
        times = [at for at, *_ in sent]
        assert times == sorted(times)
        assert all(row // 300 <= t < row // 300 + 1 for row, t in enumerate(times))
        offsets += [t - row // 300 for row, t in enumerate(times)]
        unspread = sent_creates(plain, seed)
        assert [at for at, *_ in unspread] == [float(row // 300) for row in range(900)]
        assert [life for *_, life, _ in sent] == [life for *_, life, _ in unspread]
    assert ks_distance(offsets, lambda x: min(max(x, 0.0), 1.0)) < KS_999
    assert sent_creates(spread, 0) != sent_creates(spread, 1)


def test_the_spread_defaults_to_what_the_trace_records(tmp_path):
    """`workload.trace_spread_s` unset: the resolution an importer wrote into the Parquet file
    (`harness.spread_s`), else 0 (a CSV, or a file that says nothing); set, it wins."""
    times = {"time_s": pa.array([0.0, 1.0])}
    recorded = tmp_path / "recorded.parquet"
    pq.write_table(pa.table(times).replace_schema_metadata({SPREAD_KEY: b"1.0"}), recorded)
    silent = write_parquet(tmp_path, times)
    csv = write_csv(tmp_path, "time_s\n0\n1\n")
    config = scenario(workload={"arrival": "trace", "trace": csv})
    assert trace.spread(config, str(recorded)) == 1.0
    assert trace.spread(config, silent) == 0.0
    assert trace.spread(config, csv) == 0.0
    given = config.with_value("workload.trace_spread_s", 0.25)
    assert trace.spread(given, str(recorded)) == 0.25


def test_a_spread_wider_than_the_gap_between_two_instants_is_refused(tmp_path):
    """Rows at 0 and 0.5 s spread over 1 s would leave their order: one line naming the key."""
    path = write_csv(tmp_path, "time_s\n0\n0.5\n2\n")
    config = scenario(workload={"arrival": "trace", "trace": path, "trace_spread_s": 1.0})
    with pytest.raises(ConfigError) as caught:
        trace.check(config)
    assert caught.value.key == "workload.trace_spread_s"
    assert "1 s is wider than the 0.5 s between two instants of" in caught.value.reason
    assert trace.check(config.with_value("workload.trace_spread_s", 0.5)) == 3


def test_a_tag_zero_lifetime_and_burst_of_usage_reach_the_results(tmp_path):
    """On the virtual engine: each create's row in requests.parquet carries its trace row's tag
    (a kill none: its sandbox_id joins it to its create, the trace's row number); a lifetime
    of 0 is killed as soon as it is placed; a usage of 50 on a 4-vCPU node counts 4 vCPUs."""
    path = write_csv(
        tmp_path,
        "time_s,vcpu,lifetime_s,usage,tag\n0,1,0,1,j1/t1/i1\n0.5,1,1,1,j1/t1/i2\n"
        "1,1,inf,50,j2/t1/i1\n1.5,1,,0.5,\n",
    )
    config = scenario(
        workload={"arrival": "trace", "trace": path, "lifetime_s": "none"},
        cluster={"nodes": 1, "cpu_count": 4},
        placement={"k": 1},
        run={"duration_s": 5, "sample_interval_s": 0},
    )
    result = VirtualEngine().run_seed(config, seed=0)
    requests = result.requests.to_pandas()
    creates = requests[requests["kind"] == "create"].set_index("sandbox_id")
    tags = creates["tag"].tolist()
    assert tags[:3] == ["j1/t1/i1", "j1/t1/i2", "j2/t1/i1"] and pd.isna(tags[3])
    kills = requests[requests["kind"] == "kill"].set_index("sandbox_id")
    assert kills["tag"].isna().all() and sorted(kills.index) == [0, 1]
    assert kills.loc[0, "issued_at"] == creates.loc[0, "done_at"]
    assert kills.loc[1, "issued_at"] == pytest.approx(creates.loc[1, "done_at"] + 1)
    assert result.nodes.column("cpu_percent").to_pylist() == [400.0 + 50.0]


def test_many_creates_at_one_instant_are_warned_of_at_the_start_of_a_run(tmp_path):
    """One line on stderr, before the run: how many share which instant, how many instants
    are as crowded, and the key that spreads them; none once they are spread."""
    path = spread_trace(tmp_path, 150, 2)
    config = tmp_path / "c.toml"
    config.write_text(
        f'[run]\nduration_s = 5\n[workload]\narrival = "trace"\ntrace = "{path}"\n'
        "lifetime_s = 1\n[cluster]\nnodes = 20\n"
    )
    argv = ["run", str(config), "--seeds", "1", "--quiet", "--no-report"]
    code, err = run_cli([*argv, "--out", str(tmp_path / "a")])
    assert code == 0
    assert err == (
        "harness: warning: workload.trace: 150 creates share the instant 0 s (2 instants "
        "have 100 or more): workload.trace_spread_s = S sends each instant's creates at "
        "uniform times over the S seconds after it (1 for a trace recorded to the second)\n"
    )
    spread = ["--set", "workload.trace_spread_s=1", "--out", str(tmp_path / "b")]
    assert run_cli([*argv, *spread]) == (0, "")


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
