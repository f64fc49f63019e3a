"""Regenerates what the docs show that the harness makes: run after a change to an output,
then commit what moved (docs/contributing.md). tests/test_docs.py fails while a committed
figure differs from what this makes.

    PYTHONPATH=. python docs/generate.py          # rewrite every generated file
    PYTHONPATH=. python docs/generate.py --check  # exit 1, naming them, where one differs

Made here: `docs/assets/herd-cv-over-time.png`, the chart "The herd, and why" describes: the
report's "CV over time" of the reference benchmark (configs/seed-herd.toml) under stale,
in_progress and optimistic, on the virtual engine (the same bytes on every machine with the
same matplotlib)."""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HERD = ("stale", "in_progress", "optimistic")
"""The strategies the herd page compares."""


def herd_chart() -> bytes:
    """The herd page's chart: CV of sandboxes per node over seed-herd's run, per strategy."""
    from harness.config import load
    from harness.presentation import plots
    from harness.presentation.html_report import _beats
    from harness.results.run_folder import load_run
    from harness.results.statistics import cv_over_time
    from harness.running.runner import run

    config = load(str(ROOT / "configs" / "seed-herd.toml"), [], [])
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "run"
        run(config, list(HERD), out)
        _, frames = load_run(out)
    beats, _ = _beats(config)
    return plots.cv_over_time(cv_over_time(frames["timeline"]), plots.colors(list(HERD)), beats)


GENERATED: dict[str, Callable[[], bytes]] = {
    "docs/assets/herd-cv-over-time.png": herd_chart,
}
"""Each generated file (from the project root) and what makes it."""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    check = parser.parse_args().check
    stale = []
    for name, make in GENERATED.items():
        made = make()
        path = ROOT / name
        if path.exists() and path.read_bytes() == made:
            continue
        stale.append(name)
        if not check:
            path.write_bytes(made)
    verb = "differs from what docs/generate.py makes" if check else "rewritten"
    for name in stale:
        print(f"{name}: {verb}", file=sys.stderr)
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
