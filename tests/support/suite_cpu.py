"""Where the suite's CPU goes: a pytest plugin that writes, per test, its wall time and the
CPU the whole machine was busy for meanwhile (Linux /proc/stat), its Ray processes and
children included, which `--durations` does not see. Run with one worker, so that the machine's
CPU over a test is that test's:

    python -m pytest -n 0 -p tests.support.suite_cpu   # writes results/suite-cpu.tsv afresh
    python -m tests.support.suite_cpu                   # CPU and wall per test file

`SUITE_CPU_FILE` names another file. docs/performance.md quotes what it found."""

from __future__ import annotations

import os
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

FILE_ENV = "SUITE_CPU_FILE"
DEFAULT_FILE = Path("results") / "suite-cpu.tsv"
"""Under the git-ignored output folder, from the project's root."""
STAT = Path("/proc/stat")
TICKS = os.sysconf("SC_CLK_TCK")
_started: dict[str, tuple[float, int]] = {}
_record: list[Path] = []
"""The file this session writes (`pytest_configure`)."""


def busy_ticks() -> int:
    """Clock ticks every CPU of the machine spent busy since boot (all but idle and iowait)."""
    fields = [int(x) for x in STAT.read_text().split("\n", 1)[0].split()[1:]]
    return sum(fields) - fields[3] - fields[4]


def pytest_runtest_logstart(nodeid: str, location: tuple) -> None:
    _started[nodeid] = (time.monotonic(), busy_ticks())


def pytest_runtest_logfinish(nodeid: str, location: tuple) -> None:
    wall, ticks = _started.pop(nodeid)
    line = f"{time.monotonic() - wall:.2f}\t{(busy_ticks() - ticks) / TICKS:.2f}\t{nodeid}\n"
    with open(_record[0], "a") as out:
        out.write(line)


def pytest_configure(config: pytest.Config) -> None:
    """Refuse what would make the figures wrong, and start the record empty: one session's
    tests, not a sum over every session that wrote the file."""
    if not STAT.exists():
        raise pytest.UsageError("tests.support.suite_cpu reads Linux's /proc/stat")
    if getattr(config.option, "numprocesses", None):  # the machine's CPU is no one test's
        raise pytest.UsageError("tests.support.suite_cpu needs one worker: pass -n 0")
    record = Path(os.environ.get(FILE_ENV) or config.rootpath / DEFAULT_FILE)
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text("")
    _record[:] = [record]


def by_file(path: Path) -> list[tuple[str, float, float, int]]:
    """(test file, CPU seconds, wall seconds, tests) from a file the plugin wrote, most CPU
    first."""
    cpu: dict[str, float] = defaultdict(float)
    wall: dict[str, float] = defaultdict(float)
    count: dict[str, int] = defaultdict(int)
    for line in path.read_text().splitlines():
        w, c, nodeid = line.split("\t", 2)
        name = nodeid.split("::", 1)[0]
        cpu[name] += float(c)
        wall[name] += float(w)
        count[name] += 1
    return sorted(((n, cpu[n], wall[n], count[n]) for n in cpu), key=lambda row: -row[1])


if __name__ == "__main__":
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_FILE
    if not path.is_file():
        sys.exit(f"suite_cpu: no {path}: run the suite with -p tests.support.suite_cpu first")
    rows = by_file(path)
    print(f"{'CPU s':>8} {'wall s':>8} {'tests':>6}  file")
    for name, cpu_s, wall_s, tests in rows:
        print(f"{cpu_s:8.1f} {wall_s:8.1f} {tests:6d}  {name}")
    total_cpu, total_wall = sum(r[1] for r in rows), sum(r[2] for r in rows)
    print(f"{total_cpu:8.1f} {total_wall:8.1f} {sum(r[3] for r in rows):6d}  in all")
