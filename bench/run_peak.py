"""The memory of a whole `harness run` at its peak, every process it starts counted (Ray's own,
its workers), beside the estimate the run prints before it starts.

    PYTHONPATH=. python bench/run_peak.py [--tiny | RUN ARGUMENTS...]

e.g. `configs/alibaba-2018.toml --compare stale,in_progress,optimistic`. The run is a child
process (`python -m harness run ... --quiet`, into a temporary folder); every 0.2 s the
proportional set size (PSS: a page shared by n processes counts 1/n in each) of it and of every
process below it is summed, and the largest sum is the peak; the CPU time of each as last seen
is summed too (what a process spent in its last 0.2 s is missed).
`--tiny`: a short run of seed-herd on Ray tasks, to check the script works."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TINY = ["configs/seed-herd.toml", "--set", "run.duration_s=2", "--set", "run.workers=2"]
TINY += ["--seeds", "2", "--no-report"]
EVERY_S = 0.2


def pss(pid: int) -> int:
    """The proportional set size of process `pid`, bytes (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for text in f:
                if text.startswith("Pss:"):
                    return int(text.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _stats() -> dict[int, list[str]]:
    """Every process's /proc/PID/stat fields after its command."""
    found = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    found[int(name)] = f.read().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
    return found


def below(pid: int, stats: dict[int, list[str]] | None = None) -> Iterator[int]:
    """`pid` and every process descending from it."""
    parents = {child: int(fields[1]) for child, fields in (stats or _stats()).items()}
    todo = [pid]
    while todo:
        here = todo.pop()
        yield here
        todo += [child for child, parent in parents.items() if parent == here]


def command(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline") as f:
            return f.read().replace("\0", " ").strip()
    except OSError:
        return ""


def processes_pss(pid: int | None = None) -> dict[str, Any]:
    """The PSS of process `pid` (this one by default), of the Ray workers below it (`ray::`
    processes running or idle between tasks) and of every other process below it, by command."""
    me = os.getpid() if pid is None else pid
    workers, others = [], {}
    for process in below(me):
        if process == me:
            continue
        name = command(process)
        if name.startswith(("ray::IDLE", "ray::run_unit", "ray::run_seed")):
            workers.append(pss(process))
        else:
            others[f"{process} {name[:60]}"] = pss(process)
    return {"driver": pss(me), "workers": workers, "others": others}


def _total(found: dict[str, Any]) -> int:
    return found["driver"] + sum(found["workers"]) + sum(found["others"].values())


def peak_of(argv: list[str]) -> tuple[dict[str, Any], str, float]:
    """(`processes_pss` of the run when their sum was largest, what the run said on stderr, the
    CPU seconds of it and of every process below it, as last seen) of `argv` in a child
    process."""
    tick = os.sysconf("SC_CLK_TCK")
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=err, env={**os.environ, "PYTHONPATH": str(ROOT)}
        )
        peak: dict[str, Any] = {"driver": 0, "workers": [], "others": {}, "at": 0.0}
        cpu: dict[int, float] = {}
        began = time.monotonic()
        while proc.poll() is None:
            stats = _stats()
            for process in below(proc.pid, stats):
                cpu[process] = (int(stats[process][11]) + int(stats[process][12])) / tick
            now = processes_pss(proc.pid)
            if _total(now) > _total(peak):
                peak = {**now, "at": time.monotonic() - began}
            time.sleep(EVERY_S)
        err.seek(0)
        said = err.read()
        if proc.returncode != 0:
            raise SystemExit(f"the run exited {proc.returncode}: {said[-2000:]}")
    return peak, said, sum(cpu.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="a short run of seed-herd on Ray")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="what follows `harness run`")
    given = parser.parse_args()
    args = TINY if given.tiny else [arg for arg in given.args if arg != "--"]
    with tempfile.TemporaryDirectory() as folder:
        argv = [sys.executable, "-m", "harness", "run", *args, "--quiet", "--out", f"{folder}/r"]
        began = time.monotonic()
        peak, said, cpu = peak_of(argv)
        wall = time.monotonic() - began
    for text in said.splitlines():
        if "estimate:" in text:
            print(text)
    workers = ", ".join(f"{w / 1e6:,.0f}" for w in peak["workers"]) or "none"
    print(f"measured: {_total(peak) / 1e6:,.0f} MB at the peak (PSS, every process): the run's")
    print(f"process {peak['driver'] / 1e6:,.0f} MB, Ray workers {workers} MB, Ray's own")
    print(f"{sum(peak['others'].values()) / 1e6:,.0f} MB ({len(peak['others'])} processes);")
    print(f"the peak {peak['at']:.0f} s in; {wall:.0f} s wall, {cpu:.0f} s of CPU in the run and")
    print(f"every process below it; load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
