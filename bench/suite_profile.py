"""Where the test suite's time goes: each test's span on its worker, how busy the machine was
while it ran, and which processes used the CPU (docs/performance.md, "The test suite").

    PYTHONPATH=. python bench/suite_profile.py [--tiny] [--spans FILE] [-- PYTEST_ARGS]

Runs `python -m pytest` (the README's test command; PYTEST_ARGS replace its test paths) with
this file as a plugin: every test's start and end on its worker, whether it ran with the
machine to itself (tests/conftest.py `alone`) and whether it starts Ray. Meanwhile this
process reads /proc every half second: the machine's busy share, and the CPU of every
process, counted under what it was when last seen (a forked child that runs another program
is that program; one that lived less than half a second may be missed). Prints the suite's
span, each worker's time in tests and between them (a worker waiting for the machine waits
between tests: the lock is taken around the test), the machine's busy share while a test ran
alone, beside a Ray test, or with no Ray test, and the CPU by kind of process. Linux only.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

OUT_ENV = "HARNESS_SUITE_PROFILE"
"""The folder the workers write their tests' spans to."""
TICKS = os.sysconf("SC_CLK_TCK")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """The test's span, inside tests/conftest.py's wait for the machine (a plugin named with
    -p wraps inside a conftest's hook)."""
    from tests.conftest import alone

    began = time.time()
    try:
        return (yield)
    finally:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        row = {
            "test": item.nodeid,
            "worker": worker,
            "began": began,
            "ended": time.time(),
            "alone": alone(item),
            "ray": item.get_closest_marker("ray") is not None,
        }
        with open(Path(os.environ[OUT_ENV]) / f"{worker}.jsonl", "a") as f:
            f.write(json.dumps(row) + "\n")


def _busy() -> tuple[int, int]:
    """(all, idle) clock ticks of the machine since boot."""
    ticks = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return sum(ticks), ticks[3] + ticks[4]  # idle and iowait


def _processes(seen: dict[tuple[int, int], list[Any]], before: bool = False) -> None:
    """Each process's CPU seconds into `seen`, by (pid, start time): [command, CPU not
    counted, CPU so far]; what a process `before` the suite used so far is not counted."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            fields = stat.rsplit(")", 1)[1].split()
            key = (int(pid), int(fields[19]))
            cpu = (int(fields[11]) + int(fields[12])) / TICKS
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
            name = command.decode(errors="replace") or stat.split()[1]
            counted = seen[key][1] if key in seen else cpu if before else 0.0
            seen[key] = [name, counted, cpu]
        except (OSError, IndexError, ValueError):
            continue  # exited meanwhile


def kind(command: str) -> str:
    """What a process was, from its command line."""
    for part, name in (
        ("gcs_server", "Ray's own processes"),
        ("raylet", "Ray's own processes"),
        ("dashboard", "Ray's own processes"),
        ("log_monitor", "Ray's own processes"),
        ("runtime_env", "Ray's own processes"),
        ("autoscaler", "Ray's own processes"),
        ("monitor.py", "Ray's own processes"),
        ("default_worker", "Ray workers (actors, tasks)"),
        ("setup_worker", "Ray workers (actors, tasks)"),
        ("ray::", "Ray workers (actors, tasks)"),
        ("-m harness", "harness commands"),
        ("bin/harness", "harness commands"),
        ("while True", "busy loops (tests beside a CPU hog)"),
        ("exec(eval(sys.stdin", "pytest workers (tests in process)"),
        ("-m pytest", "pytest workers (tests in process)"),
    ):
        if part in command:
            return name
    return "other processes"


def watch(stop: threading.Event, samples: list[tuple[float, int, int]], seen: dict) -> None:
    """Until `stop`, every half second: the machine's busy ticks, every process's CPU."""
    while not stop.is_set():
        samples.append((time.time(), *_busy()))
        _processes(seen)
        stop.wait(0.5)


def phase(rows: list[dict[str, Any]], t: float) -> str:
    """What ran at time `t`: a test alone, a Ray test beside others, or no Ray test."""
    ray = [r for r in rows if r["ray"] and r["began"] <= t <= r["ended"]]
    if any(r["alone"] for r in ray):
        return "a test alone"
    return "a Ray test beside others" if ray else "no Ray test"


def report(rows: list[dict[str, Any]], samples: list, seen: dict) -> None:
    start, end = min(r["began"] for r in rows), max(r["ended"] for r in rows)
    print(f"{len(rows)} tests, span {end - start:.1f} s")
    for worker in sorted({r["worker"] for r in rows}):
        mine = sorted((r for r in rows if r["worker"] == worker), key=lambda r: r["began"])
        inside = sum(r["ended"] - r["began"] for r in mine)
        between = sum(b["began"] - a["ended"] for a, b in itertools.pairwise(mine))
        print(f"  {worker}: {len(mine)} tests, {inside:.1f} s in tests, {between:.1f} s between")
    # Per sampling interval within the span: its length, all ticks and idle ticks, by phase.
    by: dict[str, list[float]] = defaultdict(lambda: [0.0, 0, 0])
    for (t0, all0, idle0), (t1, all1, idle1) in itertools.pairwise(samples):
        if start <= (t0 + t1) / 2 <= end:
            for name in ("the span", phase(rows, (t0 + t1) / 2)):
                by[name][0] += t1 - t0
                by[name][1] += all1 - all0
                by[name][2] += idle1 - idle0
    print("share of the machine's cores busy:")
    if not by:
        print("  (the span was shorter than a sample)")
    for name, (length, ticks, idle) in sorted(by.items()):
        print(f"  over {name} ({length:.1f} s): {1 - idle / ticks if ticks else 0:.3f}")
    cpu: Counter[str] = Counter()
    count: Counter[str] = Counter()
    for command, before, last in seen.values():
        if last > before:
            cpu[kind(command)] += last - before
            count[kind(command)] += 1
    print("CPU seconds by kind of process, over the suite:")
    for name, seconds in cpu.most_common():
        print(f"  {seconds:8.1f}  {count[name]:5d} processes  {name}")


def main() -> None:
    from bench_args import bench_parser

    parser = bench_parser(__doc__, "one small test module")
    parser.add_argument("pytest_args", nargs="*", help="after --: pytest's test paths and flags")
    parser.add_argument(
        "--spans", type=Path, help="also write every test's span to this file, a JSON line each"
    )
    args = parser.parse_args()
    root = Path(__file__).resolve().parent.parent
    pytest_args = args.pytest_args or (["tests/model/test_event_queue.py"] if args.tiny else [])
    with tempfile.TemporaryDirectory() as folder:
        env = {
            **os.environ,
            OUT_ENV: folder,
            # Beside the caller's own entries (a sitecustomize that counts something, say).
            "PYTHONPATH": os.pathsep.join(
                [str(root), str(root / "bench"), *filter(None, [os.environ.get("PYTHONPATH")])]
            ),
        }
        stop, samples, seen = threading.Event(), [], {}
        _processes(seen, before=True)
        watcher = threading.Thread(target=watch, args=(stop, samples, seen), daemon=True)
        began = time.time()
        watcher.start()
        command = [sys.executable, "-m", "pytest", "-p", "suite_profile", *pytest_args]
        code = subprocess.call(command, cwd=root, env=env, stdout=subprocess.DEVNULL)
        stop.set()
        watcher.join()
        rows = [json.loads(line) for f in Path(folder).glob("*.jsonl") for line in f.open()]
    if args.spans:
        args.spans.write_text("".join(json.dumps(row) + "\n" for row in rows))
    print(f"pytest exit code {code}, {time.time() - began:.1f} s")
    report(rows, samples, seen)


if __name__ == "__main__":
    main()
