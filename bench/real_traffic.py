"""Real traffic at full scale: the hour of the Alibaba 2018 trace under three strategies, its
wall time and the peak memory of every process it starts (Ray's included), with and without
the report, over one seed and three, the report alone, and one seed at two lengths of trace
and of a steady control (a constant rate of creates of one lifetime), each with the most
sandboxes it held alive at once.

    PYTHONPATH=. python bench/real_traffic.py [--harness CMD] [--span S] [--short S]
        [--parts run,bare,seeds,report,lengths] [--source DIR] [--out DIR] [--tiny]

The trace is imported once by this checkout (`harness trace import alibaba-2018`: spar's
one-hour slice, or the official files in --source) and written again in the columns every
version of the harness reads (zero lifetimes as a nanosecond, usage above the request as
1, memory in MiB, no tags, no spread), so that `--harness` may name another build of the
harness (an older checkout's `.venv/bin/harness`) and both replay the very same creates on
configs/alibaba-2018.toml's cluster. Each part runs in a child process whose whole process
tree (the command, Ray's GCS and raylet, its workers) is sampled every 0.2 s: the peak is
the largest sum of their proportional set sizes (PSS: a page shared by several processes is
counted once in all), printed beside the estimate the run said before it started. Comparing
two builds: run this once with each `--harness`, one after the other, on a quiet machine.

--tiny replays 20 s of a small trace this script writes in the official schema (spar
need not be installed): every part runs, its figures mean nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from bench_args import bench_parser

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "configs" / "alibaba-2018.toml"
STRATEGIES = ("stale", "in_progress", "optimistic")
PARTS = ("run", "bare", "seeds", "report", "lengths")
SAMPLE_S = 0.2


def tree(root: int) -> list[int]:
    """`root` and every process below it."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(parent, []).append(int(entry))
    found, i = [root], 0
    while i < len(found):
        found += children.get(found[i], [])
        i += 1
    return found


def pss_kib(pid: int) -> int:
    """The proportional set size of process `pid`, KiB (0 once it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def measured(argv: list[str]) -> dict[str, float | str]:
    """Runs `argv`; its wall time, the peak PSS of its process tree, and the estimate it said
    before it started (`harness.running.cost_check.Estimate.line`), if any."""
    began = time.perf_counter()
    # Not this checkout's PYTHONPATH, nor its folder as the working one: `--harness` names
    # another build, whose own packages must be the ones imported.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tempfile.gettempdir(),
    )
    peak = 0
    while proc.poll() is None:
        peak = max(peak, sum(pss_kib(pid) for pid in tree(proc.pid)))
        time.sleep(SAMPLE_S)
    err = proc.stderr.read() if proc.stderr else ""
    if proc.returncode:
        sys.exit(f"{' '.join(argv)} exited {proc.returncode}: {err[-2000:]}")
    said = [line for line in err.splitlines() if line.startswith("harness: estimate:")]
    wall = round(time.perf_counter() - began, 1)
    return {"wall_s": wall, "peak_mib": round(peak / 1024), "estimate": " ".join(said)}


def official_fixture(folder: Path, seconds: int = 20, per_second: int = 40) -> Path:
    """A small trace in the official schema (batch_task.csv, batch_instance.csv): one task of
    `per_second` instances starting each second, whole seconds as the trace has them."""
    rng = np.random.default_rng(0)
    folder.mkdir(parents=True, exist_ok=True)
    tasks, instances = [], []
    for second in range(1, seconds + 1):
        job, task = f"j_{second}", f"M{second}"
        cpu, mem = rng.choice([50, 100, 200]), round(float(rng.uniform(0.1, 1.0)), 2)
        tasks.append(f"{task},{per_second},{job},1,Terminated,{second},{second + 60},{cpu},{mem}")
        for i in range(per_second):
            life = int(rng.integers(0, 30))
            used = round(float(rng.uniform(10, cpu * 1.2)), 1)
            instances.append(
                f"ins_{second}_{i},{task},{job},1,Terminated,{second},{second + life},m_1,1,1,"
                f"{used},{used},0.1,0.1"
            )
    (folder / "batch_task.csv").write_text("\n".join(tasks) + "\n")
    (folder / "batch_instance.csv").write_text("\n".join(instances) + "\n")
    return folder


def plain_trace(imported: Path, out: Path, memory_mib: float) -> int:
    """The import in the columns every version reads; its row count."""
    table = pq.read_table(imported)
    life = pc.max_element_wise(table["lifetime_s"], pa.scalar(1e-9))
    usage = pc.min_element_wise(pc.fill_null(table["usage"], 1.0), pa.scalar(1.0))
    memory = pc.multiply(pc.fill_null(table["memory_share"], 0.002), pa.scalar(memory_mib))
    plain = pa.table(
        {
            "time_s": table["time_s"],
            "vcpu": table["vcpu"],
            "memory_mib": memory,
            "lifetime_s": life,
            "usage": usage,
        }
    )
    pq.write_table(plain, out)
    return plain.num_rows


def scenario(workload: dict[str, object], span: float, out: Path) -> Path:
    """configs/alibaba-2018.toml's cluster, reports and placement under `workload` (its
    section's keys) for `span` seconds."""
    shipped = tomllib.loads(SCENARIO.read_text())
    lines = [
        "[run]",
        f"duration_s = {span}",
        "seeds = 1",
        f"sample_interval_s = {shipped['run']['sample_interval_s']}",
    ]
    for section in ("cluster", "heartbeat", "placement"):
        lines.append(f"[{section}]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in shipped[section].items()]
    lines.append("[workload]")
    lines += [f"{k} = {json.dumps(v)}" for k, v in workload.items()]
    out.write_text("\n".join(lines) + "\n")
    return out


def replay(trace: Path) -> dict[str, object]:
    """The workload that replays `trace` (plain)."""
    return {"arrival": "trace", "trace": str(trace)}


STEADY_LIFETIME_S = 50.0
"""How long the steady control's sandboxes live."""


def steady(rate_per_s: float) -> dict[str, object]:
    """The control of `lengths`: the trace's creates per second, sent evenly, each living
    STEADY_LIFETIME_S, so the sandboxes alive level off within the first minutes and its two
    lengths hold the same state, where the trace holds more sandboxes alive at once the longer
    it runs."""
    return {"arrival": "constant", "rate_per_s": rate_per_s, "lifetime_s": STEADY_LIFETIME_S}


def most_alive(folder: Path) -> int:
    """The most sandboxes alive at one sample of a run's timeline (its nodes' true counts):
    the state a seed holds at its peak."""
    timeline = pq.read_table(folder / "timeline.parquet", columns=["t", "replica", "sandboxes"])
    true = pc.equal(timeline["replica"], pc.min(timeline["replica"]))
    alive = timeline.filter(true).group_by("t").aggregate([("sandboxes", "sum")])
    return int(pc.max(alive["sandboxes_sum"]).as_py() or 0)


def main() -> None:
    parser = bench_parser(__doc__, "20 s of a small trace")
    parser.add_argument("--harness", default=str(Path(sys.executable).parent / "harness"))
    parser.add_argument("--span", type=float, default=3600.0, help="seconds of trace replayed")
    parser.add_argument("--short", type=float, default=300.0, help="the shorter length")
    parser.add_argument("--parts", default=",".join(PARTS))
    parser.add_argument("--source", default="", help="the official trace's folder; none: spar")
    parser.add_argument("--out", type=Path, help="keep the runs here (default: a temp folder)")
    args = parser.parse_args()
    parts = [p.strip() for p in args.parts.split(",")]
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        parser.error(f"--parts: unknown {', '.join(unknown)}; known: {', '.join(PARTS)}")
    work = Path(tempfile.mkdtemp(prefix="real-traffic-")) if args.out is None else args.out
    work.mkdir(parents=True, exist_ok=True)
    span, short, source = args.span, args.short, args.source
    if args.tiny:
        span, short = 20.0, 10.0
        source = str(official_fixture(work / "official"))
    here = Path(sys.executable).parent / "harness"
    imported = work / "imported.parquet"
    argv = [str(here), "trace", "import", "alibaba-2018", *([source] if source else [])]
    subprocess.run([*argv, "--span", str(span), "--out", str(imported)], check=True)
    memory = tomllib.loads(SCENARIO.read_text())["cluster"]["memory_mib"]
    trace = work / "plain.parquet"
    rows = plain_trace(imported, trace, memory)
    harness = args.harness
    version = subprocess.run([harness, "--version"], capture_output=True, text=True).stdout
    print(f"{rows:,} creates over {span:g} s; {version.strip()} ({harness})")
    strategies = ",".join(STRATEGIES)
    hour = scenario(replay(trace), span, work / "long.toml")

    def run(name: str, config: Path, *flags: str) -> dict[str, float]:
        out = work / name
        shutil.rmtree(out, ignore_errors=True)
        # Not --quiet, which leaves the estimate unsaid: its progress lines go unread.
        found = measured([harness, "run", str(config), "--out", str(out), *flags])
        summary = pq.read_table(out / "summary.parquet").to_pandas()
        cv = summary.groupby("strategy", sort=False)["cv"].mean().round(4).to_dict()
        return {**found, "cv": cv}

    found: dict[str, dict] = {}
    if "run" in parts:
        found["3 strategies, 1 seed, with the report"] = run("one", hour, "--compare", strategies)
    if "bare" in parts:
        found["3 strategies, 1 seed, no report"] = run(
            "bare", hour, "--compare", strategies, "--no-report"
        )
    if "report" in parts:
        folder = work / ("one" if "run" in parts else "bare")
        if not (folder / "run.json").is_file():
            run(folder.name, hour, "--compare", strategies, "--no-report")
        found["harness report of that run"] = measured([harness, "report", str(folder)])
    if "seeds" in parts:
        found["3 strategies, 3 seeds, with the report"] = run(
            "three", hour, "--compare", strategies, "--seeds", "3"
        )
    if "lengths" in parts:
        for kind, workload in (("trace", replay(trace)), ("steady", steady(rows / span))):
            for length in (short, span):
                name = f"{kind}-{length:g}"
                config = scenario(workload, length, work / f"{name}.toml")
                figures = run(name, config, "--no-report")
                figures["alive"] = most_alive(work / name)
                found[f"stale, 1 seed, {length:g} s of {kind}"] = figures
    width = max(map(len, found))
    for what, figures in found.items():
        cv = figures.get("cv")
        shown = "" if cv is None else "  CV " + ", ".join(f"{k} {v}" for k, v in cv.items())
        if "alive" in figures:
            shown += f"; at most {figures['alive']:,} sandboxes alive"
        print(f"{what:<{width}}  {figures['wall_s']:>7.1f} s  {figures['peak_mib']:>6,} MiB{shown}")
        if figures["estimate"]:
            print(f"{'':<{width}}  {figures['estimate']}")
    if args.out is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
