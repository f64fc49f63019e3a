"""The Ray engine on one embedded local Ray: the herd picture, ground-truth invariants, CLI."""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pytest
import ray

from actors.carrier import BEAT_TICK_S
from actors.engine import ActorSet, RayEngine, RaySeedRun
from harness.cli import main
from harness.config import Config, load
from harness.engines import get_engine
from harness.engines.virtual import VirtualEngine
from harness.model.cluster.pools import registrations
from harness.results import percentiles as sketch
from harness.results.arrow_schemas import TABLES
from harness.results.run_reader import load_run
from harness.wiring.scenario import nodes as nodes_at_start
from tests.support.accounting import beyond_in_flight
from tests.support.configs import CONFIGS, scenario
from tests.support.pools import GIB, memory_in_use, memory_run
from tests.support.ray_runs import skip_unless_kept_time

DASHBOARD_PORT = 8265

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("local_ray")]  # the Ray the tests share


@pytest.mark.shares_machine  # Ray's set-up, not its pace
def test_embedded_ray_is_on_loopback_and_sized_to_the_machine():
    (node,) = ray.nodes()
    assert node["NodeManagerAddress"] == "127.0.0.1"
    assert ray.cluster_resources()["CPU"] == os.cpu_count()


@pytest.mark.shares_machine  # Ray's set-up, not its pace
def test_embedded_ray_keeps_its_files_in_a_private_folder():
    """Ray's default /tmp/ray and its session folders are writable by
    anyone (0777, no sticky bit). Ray makes its temp folder so wherever it is, so that folder
    sits in one only this user can enter; socket paths stay within the AF_UNIX limit."""
    node = ray._private.worker._global_node
    temp = Path(node.get_temp_dir_path())
    private = temp.parent
    assert private.name.startswith("harness-ray-")
    assert private.stat().st_mode & 0o777 == 0o700 and private.stat().st_uid == os.getuid()
    assert Path(node.get_session_dir_path()).is_relative_to(temp)
    sockets = [node.plasma_store_socket_name, node.raylet_socket_name]
    assert all(len(path.encode()) <= 107 for path in sockets), sockets


@pytest.mark.shares_machine  # Ray's set-up, not its pace
@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads Linux /proc")
def test_embedded_ray_listens_on_loopback_only_without_dashboard_and_with_token_auth():
    """Nothing the harness starts is reachable from another host, and nothing turned off Ray's
    token authentication (on by default for a new local Ray, unless RAY_AUTH_MODE says so)."""
    from ray._private.authentication.authentication_utils import is_token_auth_enabled

    ray.get(ray.remote(num_cpus=0)(lambda: 0).remote())  # a worker process up as well
    pids = _descendants(os.getpid())
    listening = _listening(pids)
    assert listening  # the GCS and raylet at least
    mapped = [getattr(ip, "ipv4_mapped", None) or ip for ip, _ in listening]  # ::ffff:127.0.0.1
    assert all(ip.is_loopback for ip in mapped), listening
    # Ray keeps a dashboard head process for its own APIs; without the dashboard it serves no
    # web front end and nothing listens on the dashboard's port.
    assert DASHBOARD_PORT not in [port for _, port in listening]
    heads = [
        c for c in (_read(Path(f"/proc/{pid}/cmdline")) for pid in pids) if "dashboard.py" in c
    ]
    assert all("--disable-frontend" in c for c in heads)
    if os.environ.get("RAY_AUTH_MODE", "token") == "token":
        assert is_token_auth_enabled()


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:  # the process exited meanwhile
        return ""


def _descendants(root: int) -> list[int]:
    """Every process under `root`, from /proc (psutil is not among the dependencies)."""
    parent = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        fields = _read(stat).rsplit(")", 1)[-1].split()
        if fields:
            parent[int(stat.parent.name)] = int(fields[1])
    found, frontier = [], [root]
    while frontier:
        children = [pid for pid, ppid in parent.items() if ppid in frontier]
        found += children
        frontier = children
    return found


def _listening(pids: list[int]) -> list[tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, int]]:
    """(address, port) of every TCP socket in LISTEN state that one of `pids` holds."""
    inodes = set()
    for pid in pids:
        for fd in Path(f"/proc/{pid}/fd").glob("*"):
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in _read(Path(table)).splitlines()[1:]:
            cols = line.split()
            if cols[3] == "0A" and cols[9] in inodes:  # 0A: LISTEN
                address, port = cols[1].split(":")
                raw = bytes.fromhex(address)
                # /proc writes each 32-bit word of the address in host (little-endian) order.
                words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
                found.append((ipaddress.ip_address(words), int(port, 16)))
    return found


def test_seed_herd_on_ray_gives_the_virtual_engines_picture(tmp_path):
    """`harness run --engine ray` of the herd under stale and optimistic: its tables, its
    sketches and its picture. One seed: the herd's other seeds on Ray are compared with the
    virtual engine's in tests/engines/test_conformance.py (seeds 0-2 of seed-herd and
    seed-herd+optimistic beside a CPU hog), and seeds one after another on one set of actors
    in `test_seeds_on_one_actor_set_each_match_their_nodes_at_the_end`."""
    out = tmp_path / "herd"
    code = main(
        [
            "run",
            str(CONFIGS / "seed-herd.toml"),
            "--engine",
            "ray",
            "--set",
            "run.time_scale=0.1",
            "--seeds",
            "1",
            "--compare",
            "stale,optimistic",
            "--out",
            str(out),
            "--no-report",  # the tables are what is checked
        ]
    )
    assert code == 0  # with the live view on (it draws on stderr)
    meta, frames = load_run(out)
    assert meta["completed"] and meta["engine"] == "ray"
    summary = frames["summary"]
    assert list(summary.columns) == TABLES["summary"].names
    assert list(frames["requests"].columns) == TABLES["requests"].names
    skip_unless_kept_time(summary)  # the bands below hold for a run that kept time
    cv = summary.groupby("strategy")["cv"]
    assert cv.min()["stale"] >= 0.4
    assert cv.max()["optimistic"] <= 0.1
    # 20/s for 25 s, 1 ms RPCs: every create placed, at time scale 0.1 (0.2 takes twice as
    # long for the same picture), with Ray's own time showing in the measured RPC latency.
    assert (summary["placed"] == 500).all() and (summary["time_scale"] == 0.1).all()
    assert (summary["create_rpc_p50_ms"] >= 1.0).all()
    # Each seed keeps the sketch of every create RPC, merged over replicas; its p50 is in it.
    creates = frames["requests"][frames["requests"]["kind"] == "create"]
    sent = creates.groupby(["strategy", "seed"])["rpcs"].sum()
    for _, row in summary.iterrows():
        rpcs = sketch.from_bytes(row["create_rpc_sketch"])
        assert rpcs.count == sent[(row["strategy"], row["seed"])]
        assert sketch.quantiles(rpcs, (0.5,)) == [pytest.approx(row["create_rpc_p50_ms"])]
    assert (frames["timeline"].groupby(["strategy", "seed"])["t"].max() == 25.0).all()


def test_seeds_on_one_actor_set_each_match_their_nodes_at_the_end(monkeypatch):
    """A run builds its actors once and resets them per seed: every acknowledged create and
    kill of each seed matches the nodes at its end (nothing of the seed before leaks in), and
    each seed starts from its own initial loads."""
    built = []
    build = ActorSet.__init__

    def counted(self, shape):
        built.append(shape)
        build(self, shape)

    monkeypatch.setattr(ActorSet, "__init__", counted)
    config = scenario(
        run={"duration_s": 10.0, "seeds": 1, "time_scale": 0.2, "sample_interval_s": 0.0},
        # 12 nodes x 3 vCPU x R=4 hold 144 sandboxes for 150 clients: full nodes, skips, retries.
        cluster={
            "nodes": 12,
            "cpu_count": 3,
            "initial_cpu_allocated": [0, 2],
            "create_latency_ms": 5.0,
            "kill_latency_ms": 2.0,
        },
        heartbeat={"interval_s": 2.0, "phase": "staggered", "delay_ms": 20.0},
        placement={"strategy": "optimistic", "replicas": 2, "deadline_s": 1.0},
        workload={
            "arrival": "closed",
            "clients": 150,
            "ramp_s": 1.0,
            "lifetime_s": 0.5,
            "lifetime_dist": "exponential",
            "failure_backoff_s": 0.2,
        },
        ray={"node_groups": 3, "client_pools": 2},
    )
    engine = RayEngine()
    try:
        results = {seed: engine.run_seed(config, seed) for seed in (4, 5)}
    finally:
        engine.close()
    assert len(built) == 1
    churned = {}
    for seed, result in results.items():
        initial = [node.base_cpu for node in nodes_at_start(config, seed)]
        assert result.nodes.column("initial_cpu_allocated").to_pylist() == initial
        rows = result.requests.to_pandas()
        creates = rows[rows["kind"] == "create"]
        kills = rows[rows["kind"] == "kill"]
        placed = creates[creates["outcome"] == "placed"].set_index("sandbox_id")["node_id"]
        assert placed.index.is_unique and set(kills["sandbox_id"]) <= set(placed.index)
        assert (kills["outcome"] == "killed").all()
        where = {}
        for node, ids in enumerate(result.sandbox_ids):
            for sandbox in ids:
                assert sandbox not in where, f"sandbox {sandbox} on nodes {where[sandbox]}, {node}"
                where[sandbox] = node
        alive = placed.drop(kills["sandbox_id"])
        assert where == alive.to_dict()
        counts = result.nodes.column("sandboxes").to_pylist()
        assert counts == [len(ids) for ids in result.sandbox_ids]
        # Latency counts from the intended send time, which never follows the actual one.
        assert (rows["sent_at"] >= rows["issued_at"] - 1e-9).all()
        assert (rows["done_at"] >= rows["sent_at"]).all()
        churned[seed] = (len(placed), len(kills), int(creates["skips"].sum()))
    # How much a closed loop churns follows the machine's pace: the volume that makes the
    # checks above worth something is asked of runs that kept time.
    for result in results.values():
        skip_unless_kept_time(result)
    for placed_n, kills_n, skips in churned.values():
        assert placed_n > 500 and kills_n > 300  # the scenario did churn
        assert skips > 0  # and hit full nodes


def test_open_loop_burst_sends_every_create_and_reports_heartbeat_lateness():
    config = load(
        CONFIGS / "seed-burst.toml",
        ["run.engine=ray", "run.duration_s=2", "run.time_scale=0.5", "heartbeat.interval_s=0.5"],
    )
    result = RaySeedRun(config, seed=1).run()
    assert result.summary["requests"] == result.summary["placed"] == 500
    assert sum(result.nodes.column("sandboxes").to_pylist()) == 500
    skip_unless_kept_time(result)  # the lateness bounds hold while the loops keep up
    # A node group wakes for beats at most once per BEAT_TICK_S (wall), so a beat is handled
    # at most one tick late while its event loop keeps up (here in model ms: tick / scale).
    # The tail also waits for whatever the loop is doing (a batch of the 500-create burst).
    tick_ms = BEAT_TICK_S / config.run.time_scale * 1000.0
    late = result.summary
    assert 0.0 <= late["heartbeat_late_p50_ms"] <= tick_ms
    assert late["heartbeat_late_p50_ms"] <= late["heartbeat_late_p99_ms"] <= 5 * tick_ms
    assert isinstance(result.requests, pa.Table)


def row_vcpus(config: Config) -> list[float]:
    """The vCPUs each row of the config's trace asks for: its own, else its template's, else
    the [workload] key's (an independent reading of what `Templates.replay` does)."""
    by_id = {t.template: t.vcpu for t in config.workload.templates}
    table = pcsv.read_csv(config.workload.trace).to_pydict()
    rows = zip(table["template"], table["vcpu"], strict=True)
    return [v if v is not None else by_id.get(t, config.workload.vcpu) for t, v in rows]


@pytest.mark.shares_machine  # requests and accounting the trace fixes, not Ray's pace
def test_a_trace_of_templates_replays_on_ray_as_in_virtual_time():
    """configs/trace-replay.toml for 10 s at time scale 0.2 on two client pools, each reading
    the trace itself: one create per row before the end, at the row's time, as the virtual
    engine's same seed; every sandbox alive at the end sits on its node with its row's vCPUs
    (a node's allocation beyond its base is their sum); a row's own lifetime is kept exactly."""
    overrides = ["run.engine=ray", "run.duration_s=10", "run.time_scale=0.2", "ray.client_pools=2"]
    config = load(CONFIGS / "trace-replay.toml", [*overrides, "run.sample_interval_s=0"])
    result = RaySeedRun(config, seed=0).run()
    virtual = VirtualEngine().run_seed(config.with_value("run.engine", "virtual"), seed=0)
    reqs = result.requests.to_pandas()
    creates = reqs[reqs["kind"] == "create"].set_index("sandbox_id")
    want = virtual.requests.to_pandas()
    assert sorted(creates["issued_at"]) == sorted(want[want["kind"] == "create"]["issued_at"])
    assert len(creates) == result.summary["placed"] > 400
    kills = reqs[reqs["kind"] == "kill"].set_index("sandbox_id")
    assert (kills["outcome"] == "killed").all()
    vcpus, lives = row_vcpus(config), pcsv.read_csv(config.workload.trace)["lifetime_s"]
    alive = creates.drop(kills.index)
    nodes = result.nodes.to_pandas()
    held = [vcpus[row] for row in alive["client"]]  # the client of an open-loop create: its row
    expected = nodes["initial_cpu_allocated"].to_numpy().copy()
    np.add.at(expected, alive["node_id"].to_numpy(), held)
    assert np.allclose(nodes["cpu_allocated"], expected)
    for sandbox, kill in kills.iterrows():
        life = lives[int(creates.loc[sandbox, "client"])].as_py()
        if life is not None:
            assert kill["issued_at"] == pytest.approx(creates.loc[sandbox, "done_at"] + life)


@pytest.mark.shares_machine  # an error line, not Ray's pace
def test_unreachable_address_is_a_one_line_error_with_exit_code_2(tmp_path, capsys):
    out = tmp_path / "never"
    code = main(
        [
            "run",
            str(CONFIGS / "seed-burst.toml"),
            "--engine",
            "ray",
            "--address",
            "127.0.0.1:1",
            "--out",
            str(out),
        ]
    )
    err = capsys.readouterr().err.strip()
    assert code == 2 and "--address" in err and len(err.splitlines()) == 1
    assert not out.exists()


def test_the_erase_race_has_the_same_sign_on_ray_as_in_virtual_time():
    """race-erase: adding before the RPC lets older reports erase the add. Both engines must
    find the scheduler under-counting beyond its calls in flight, and rarely over-counting."""
    config = load(
        CONFIGS / "race-erase.toml",
        ["placement.strategy=optimistic_pre_rpc", "run.duration_s=10", "run.time_scale=0.5"],
    )
    shares = {}
    for engine in ("virtual", "ray"):
        result = get_engine(engine).run_seed(config.with_value("run.engine", engine), seed=0)
        if engine == "ray":
            skip_unless_kept_time(result)
        over, under = beyond_in_flight(result.timeline.to_pandas())
        shares[engine] = float((under > 1e-9).mean()), float((over > 1e-9).mean())
    for engine, (under, over) in shares.items():
        assert under > 0.2, (engine, shares)
        assert over < under / 4, (engine, shares)


def test_two_pools_and_the_memory_filter_run_on_ray_as_in_virtual_time():
    """tests/model/cluster/test_pools.py's cluster (a pool of 3 x 16 GiB and one of 2 x 64 GiB, room
    for 44 sandboxes of 4 GiB at M = 1, optimistic accounting), 100 creates at 5/s for 20 s, at time
    scale 0.2 (4 s). The replica learns the pools at start-up on Ray as in virtual time: every node
    fills to its memory, and once the view shows it full the filter turns creates away. In virtual
    time exactly the 44 that fit are placed. On Ray a sandbox counts once its create's answer is in,
    so creates in flight together each pass the filter, and a node may end above its memory by those
    (a Ray that starts late sends its first creates at once)."""
    slower = {"run.duration_s": 20.0, "workload.rate_per_s": 5.0}
    config = memory_run("optimistic").with_values(slower)
    assert memory_in_use(config)[2] == 44
    on_ray = config.with_values({"run.engine": "ray", "run.time_scale": 0.2})
    result = RaySeedRun(on_ray, seed=0).run()
    held = [4 * GIB * n for n in result.nodes.column("sandboxes").to_pylist()]
    totals = [info.memory_mib for info in registrations(config.cluster)]
    assert all(memory >= total for memory, total in zip(held, totals, strict=True)), held
    summary = result.summary
    assert summary["placed"] + summary["failed"] == summary["requests"] == 100
    assert summary["failed_no_candidate"] > 0, summary
