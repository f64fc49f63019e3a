"""Placements per second through an external scheduler (harness/external) on the virtual
engine, against the same run placed in-process, back to back on the same machine:

    python bench/external_throughput.py [--requests 20000] [--nodes 1000] [--repeat 3]
    PYTHONPATH=. python bench/external_throughput.py --ray [--duration 10] [--repeat 3]

Each path runs one seed of the same scenario (open-loop creates at 2,000/s with 30 s lifetimes,
so kills and reports travel too; staggered reports every 20 s; no timeline) with the optimistic
strategy; the Go server is built with examples/go-scheduler/build.sh when Go is installed and
measured on both transports (gRPC, and `framed`: the same messages on a plain TCP stream).
The figure is creates placed per wall second of the whole seed, the scheduler already running:
an untimed session starts it first, and both example servers serve one session after another
(`serves_many`), so the timed seed reuses the process (a scheduler that does not would have
its start-up in the figure; timing that apart and taking it off gave negative rates where a
run was shorter than the start-up's own noise). Goal: >= 10,000/s with
the Go server on loopback. The first line is the floor: round trips/s of the framed transport
against a server that answers without reading (`floor`); one round trip per placement can be
no faster, whatever the scheduler and before the run's own work; each path's line gives its
rate as a share of that floor (`of_floor`), both measured in the same run, since the figures
move with the machine.

With --ray: create+kill pairs/s on the Ray engine, the best row of bench/ray_throughput.py
(1,000 nodes, one node group, two client pools, 2,000 closed-loop clients holding a sandbox
1 ms) placed in-process and through each server (each scheduler replica actor starts its own);
the median of --repeat runs per path, interleaved."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

from bench_args import bench_parser

from harness.config import from_dict
from harness.engines.virtual import VirtualEngine
from harness.external.client import open_session
from harness.model.cluster.pools import registrations

ROOT = Path(__file__).resolve().parent.parent
PYTHON = [sys.executable, str(ROOT / "examples" / "python-scheduler" / "scheduler.py")]
GO = ROOT / "examples" / "go-scheduler"


def scenario(nodes: int, requests: int, command: list[str], transport: str = "grpc"):
    rate = 2000.0
    raw = {
        "run": {"name": "bench", "duration_s": requests / rate, "sample_interval_s": 0},
        "cluster": {"nodes": nodes, "cpu_count": 192, "initial_cpu_allocated": [0, 4]},
        "heartbeat": {"interval_s": 20.0, "phase": "staggered"},
        "placement": {"strategy": "optimistic"},
        "workload": {"rate_per_s": rate, "lifetime_s": 30.0, "lifetime_dist": "exponential"},
    }
    if command:
        raw["external"] = {"command": command, "transport": transport}
    return from_dict(raw)


def started(engine: VirtualEngine, config) -> None:
    """The scheduler's process started and kept by `engine` for the seeds it then runs (an
    empty session, untimed), where the scheduler serves many sessions."""
    nodes = registrations(config.cluster)
    open_session(config.external, 0, 0, 1, nodes, config.placement, engine.kept).close()


def measure(
    name: str,
    command: list[str],
    transport: str,
    nodes: int,
    requests: int,
    repeat: int,
    floor_per_s: float,
) -> dict:
    """Creates placed per wall second through one path, best of `repeat`, and as a share of
    the round-trip floor measured in the same run (`of_floor`; in process it can exceed 1:
    no round trip at all)."""
    config = scenario(nodes, requests, command, transport)
    best = float("inf")
    for _ in range(repeat):
        with closing(VirtualEngine()) as engine:  # stops a server kept for more seeds
            if command:
                started(engine, config)
            start = time.perf_counter()
            result = engine.run_seed(config, 0)
            best = min(best, time.perf_counter() - start)
    placed = int(result.summary["placed"])
    per_s = placed / best
    figures = {"path": name, "placed": placed, "wall_s": round(best, 3), "per_s": round(per_s)}
    return {**figures, "of_floor": round(per_s / floor_per_s, 3)}


def on_ray(paths: list[tuple[str, list[str], str]], duration: float, repeat: int) -> None:
    """Pairs/s on Ray per path, runs interleaved; the median and the range."""
    import numpy as np
    from ray_throughput import ProcessWatch, closed_loop, measure, sized

    from harness.engines.ray_setup import connect

    connect()
    pairs: dict[str, list[float]] = {name: [] for name, _, _ in paths}
    with ProcessWatch() as watch:
        for _ in range(repeat):
            for name, command, transport in paths:
                raw = closed_loop(1000, 2000, 0.001, 20.0, duration)
                if command:
                    raw["external"] = {"command": command, "transport": transport}
                pairs[name].append(measure(sized(raw, 1, 2), watch).pairs_s)
    for name, got in pairs.items():
        median = float(np.median(got))
        print(
            json.dumps(
                {
                    "path": name,
                    "ray_pairs_per_s": round(median),
                    "runs": len(got),
                    "min": round(min(got)),
                    "max": round(max(got)),
                }
            )
        )


ECHO = """
import socket, sys
from harness.external import scheduler_pb2 as pb
from harness.external.transport import Frames, frame
listener = socket.create_server(("127.0.0.1", 0))
print(listener.getsockname()[1], flush=True)
conn, _ = listener.accept()
conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
frames, reply = Frames(conn), frame(pb.Answer(place=pb.PlaceReply(placed=True)).SerializeToString())
while True:
    try:
        frames.next()
    except ConnectionResetError:
        break
    conn.sendall(reply)
"""
"""A server that answers every framed call with the same PlaceReply, reading nothing."""


def floor(calls: int) -> dict:
    """Round trips/s of the framed transport against `ECHO`: a Place like the benchmark's
    (two events and a create) and its answer, nothing decided. One round trip per placement
    can go no faster than this, whatever the scheduler."""
    from harness.external import scheduler_pb2 as pb
    from harness.external.transport import Framed

    echo = subprocess.Popen([sys.executable, "-c", ECHO], stdout=subprocess.PIPE, text=True)
    try:
        transport = Framed("127.0.0.1", int(echo.stdout.readline()), 10.0)
        answered = pb.RpcAnswered(sandbox_id=12345, node=17, outcome=pb.OK)
        events = [pb.Event(time=1.5, create_answered=answered)] * 2
        create = pb.Create(sandbox_id=12346, vcpu=1.0, memory_mib=1024, issued_at=1.5)
        request = pb.PlaceRequest(events=events, now=1.5, create=create)
        start = time.perf_counter()
        for _ in range(calls):
            transport.call("Place", request)
        spent = time.perf_counter() - start
        transport.close()
    finally:
        echo.kill()
    return {
        "path": "round trip floor (framed, echo)",
        "calls": calls,
        "per_s": round(calls / spent),
    }


def main() -> None:
    parser = bench_parser(
        __doc__,
        "the smallest run of every path but Go's (its build is the slow part)",
        whole_doc=True,
    )
    parser.add_argument(
        "--requests", type=int, default=20000, help="creates per run (and floor round trips)"
    )
    parser.add_argument("--nodes", type=int, default=1000, help="nodes in the scenario")
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs per path: the best (Ray: the median)"
    )
    parser.add_argument("--ray", action="store_true", help="pairs/s on the Ray engine instead")
    parser.add_argument("--duration", type=float, default=10.0, help="model seconds per Ray run")
    args = parser.parse_args()
    if args.tiny:
        vars(args).update(requests=50, nodes=20, repeat=1, duration=3.5)
    paths = [
        ("in-process", [], "grpc"),
        ("python server", PYTHON, "grpc"),
        ("python server, framed", [*PYTHON, "--framed"], "framed"),
    ]
    if not args.tiny and shutil.which("go") and shutil.which("protoc"):
        built = subprocess.run([str(GO / "build.sh")], check=True, capture_output=True, text=True)
        go = built.stdout.splitlines()[-1]  # build.sh's last line: the binary, outside the tree
        paths += [("go server", [go], "grpc"), ("go server, framed", [go, "-framed"], "framed")]
    else:
        why = "--tiny" if args.tiny else "no Go toolchain"
        print(f"{why}: the Go server is not measured", file=sys.stderr)
    if args.ray:
        on_ray(paths, args.duration, args.repeat)
        return
    bound = floor(args.requests)
    print(json.dumps(bound))
    for name, command, transport in paths:
        figures = measure(
            name, command, transport, args.nodes, args.requests, args.repeat, bound["per_s"]
        )
        print(json.dumps(figures))


if __name__ == "__main__":
    main()
