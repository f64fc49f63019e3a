"""How long `harness` takes to refuse a config with a mistake in it: the wall time of
`python -m harness run BAD.toml` (an unknown key), each in a fresh process, and what the
command imported on the way (`python -X importtime`).

    PYTHONPATH=. python bench/config_error.py [--runs 20]

A mistake is said once the config is read: nothing it needs loads a data library (pandas,
Arrow, numpy, Ray, matplotlib), which tests/config/test_config_cli.py checks; this measures the
time itself, which depends on the machine and what else runs on it."""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_args import bench_parser

BAD = '[run]\nname = "typo"\nseedz = 3\n'
"""A config with an unknown key: `run.seedz: unknown key; did you mean run.seeds?`."""
LIBRARIES = ("pandas", "pyarrow", "numpy", "ray", "matplotlib")


def once(config: Path) -> tuple[float, float]:
    """Wall and CPU seconds of one refusal, from starting the interpreter to its exit (CPU:
    user and system, which other work on the machine changes less than the wall time)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "harness", "run", str(config)], capture_output=True, text=True
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    if done.returncode != 2 or "run.seedz" not in done.stderr:
        raise SystemExit(f"expected the one-line error, got {done.returncode}: {done.stderr}")
    return wall, cpu


def imports(config: Path) -> dict[str, float]:
    """Milliseconds `-X importtime` counts for the CLI and each data library it loaded
    (cumulative, as imported at the top of its own tree)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "harness", "run", str(config)],
        capture_output=True,
        text=True,
    )
    found: dict[str, float] = {}
    for line in done.stderr.splitlines():
        if not line.startswith("import time:"):
            continue
        _, cumulative, name = (
            part.strip() for part in line.removeprefix("import time:").split("|")
        )
        if name in ("harness.cli", *LIBRARIES):
            found[name] = found.get(name, 0.0) + int(cumulative) / 1000
    return found


def main() -> None:
    parser = bench_parser(__doc__, "one run")
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    runs = 1 if args.tiny else args.runs
    with tempfile.TemporaryDirectory() as folder:
        config = Path(folder) / "bad.toml"
        config.write_text(BAD)
        once(config)  # the first warms the file cache (.pyc files, shared libraries)
        times = [once(config) for _ in range(runs)]
        loaded = imports(config)
    walls = sorted(wall for wall, _ in times)
    result = {
        "runs": runs,
        "median_s": round(statistics.median(walls), 3),
        "min_s": round(walls[0], 3),
        "max_s": round(walls[-1], 3),
        "cpu_median_s": round(statistics.median(cpu for _, cpu in times), 3),
        "import_ms": {name: round(ms, 1) for name, ms in loaded.items()},
        "pure": os.environ.get("HARNESS_PURE", "") not in ("", "0"),
        "load_1min": round(os.getloadavg()[0], 2),
    }
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
