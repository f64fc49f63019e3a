"""Regenerates what the docs show that the harness makes: run after a change to an output,
then commit what moved (docs/contributing.md). tests/project/test_docs.py fails while a committed
figure differs from what this makes.

    PYTHONPATH=. python docs/generate.py          # rewrite every generated file
    PYTHONPATH=. python docs/generate.py --check  # exit 1, naming them, where one differs
    PYTHONPATH=. python docs/generate.py --long   # the long ones too (searches, the trace's hour)
    PYTHONPATH=. python docs/generate.py --long docs/explanation/real-traffic.md  # those named

`docs/assets/report.png` (README and the home page) is the main job's whole report.html,
captured by a headless Chromium 1280 px wide when one is installed: made by a plain run that
names no file, never checked (a browser draws text a little differently on every machine).

Output blocks: a fenced block right after `<!-- output: harness ... -->` in a docs page or the
README is what that command prints in an 80-column terminal (`COLUMNS=80`), run from the
project root; its `--out DIR` is a temporary folder, named DIR in the text. A trace the command
replays is imported first, so what it prints is the same whether or not the trace cache held
it. A block marked `<!-- output (long): harness ... -->` takes minutes (a whole search and its
confirmation on hundreds of fresh seeds, `docs/explanation/worst-cases.md`; the hour of the
Alibaba trace under every strategy, `docs/explanation/real-traffic.md`): it is made, or
checked, only with `--long`, after a change to the model or to what it prints. Files named on
the command line are the only ones made (or checked): a long page alone, without the others'.

Figures: `docs/assets/herd-cv-over-time.png`, the chart "The herd, and why" describes: the
report's "CV over time" of the reference benchmark (configs/seed-herd.toml) under stale,
in_progress and optimistic, on the virtual engine (the same bytes on every machine with the
same matplotlib), drawn from the results of getting started's output block. Long figures,
made with `--long`: those of "The herd on real traffic", drawn from the results of the page's
own output blocks (each command runs once per generation, whoever asks for it first, and the
long ones one at a time: each takes every core)."""

from __future__ import annotations

import argparse
import atexit
import contextlib
import functools
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pandas as pd

from harness.model.scheduling.strategies import STRATEGIES

ROOT = Path(__file__).resolve().parent.parent
HERD = ("stale", "in_progress", "optimistic")
"""The strategies the herd page compares."""
QUIET_PROGRESS_S = 86_400
"""Seconds between progress lines far beyond any command's length: none comes."""
Lines = tuple[tuple[str, Mapping[str, str] | None], ...]
"""What a chart over time draws: per command (an output block's), its strategies under the
names the chart gives them (None: every strategy, as named)."""


def timeline_cv(
    folder: Path, names: Mapping[str, str] | None = None
) -> tuple[pd.DataFrame, list[float]]:
    """The report's "CV over time" of the run in `folder` (the CV of sandboxes per node at each
    timeline sample, per strategy, mean over seeds with its band; with `names`, only those
    strategies, under those names), and when its reports were applied."""
    from harness.config import stored_config
    from harness.presentation import series
    from harness.presentation.html_report import _beats
    from harness.results.run_reader import open_run

    run = open_run(folder)
    config = stored_config(run.meta["config"], folder / "run.json")
    samples = series.timeline_samples(
        run.batches, run.frame("nodes"), config.run.sample_interval_s, config.run.duration_s
    )
    frame = series.cv_over_time(samples)
    if names is not None:
        frame = frame[frame["strategy"].isin(list(names))]
        frame = frame.assign(strategy=frame["strategy"].map(names))
    return frame, _beats(config)[0]


HERD_RUN = f"harness run configs/seed-herd.toml --compare {','.join(HERD)} --out results/first"
"""Getting started's output block, the main job: the herd chart is drawn from its results, so
the run is made once per generation (`Runs`) for both."""


def herd_chart() -> bytes:
    """The herd page's chart: CV of sandboxes per node over seed-herd's run, per strategy."""
    from harness.presentation import plots

    frame, beats = timeline_cv(runs().run(HERD_RUN)[1])
    return plots.cv_over_time(frame, plots.colors(list(HERD)), beats)


def chart_over_time(lines: Lines) -> bytes:
    """CV of sandboxes per node over time, a line per strategy of each command's run (run once
    per generation, `Runs`), in the order given."""
    from harness.presentation import plots

    drawn = [timeline_cv(runs().run(command, long=True)[1], names) for command, names in lines]
    frame = pd.concat([frame for frame, _ in drawn], ignore_index=True)
    palette = plots.colors(list(dict.fromkeys(frame["strategy"])))
    return plots.cv_over_time(frame, palette, drawn[0][1])


FIGURES: dict[str, Callable[[], bytes]] = {
    "docs/assets/herd-cv-over-time.png": herd_chart,
}
"""Each generated figure (from the project root) and what makes it."""

ALIBABA = "harness run configs/alibaba-2018.toml"
SHOWN = "--quiet --no-report"
"""How the real-traffic page's runs are shown: the tables, no progress bar, no HTML report."""
HOUR = f"{ALIBABA} --compare {','.join(STRATEGIES)} {SHOWN} --out results/alibaba"
"""The hour of the trace under every strategy (`harness plugins`), each second's creates
spread over it (the format's default)."""
AT_ONCE = (
    f"{ALIBABA} --compare {','.join(HERD)} --set workload.trace_spread_s=0 {SHOWN} "
    "--out results/alibaba-at-once"
)
"""The same creates, each second's sent at one instant: the trap of whole-second timestamps."""
REPLICAS = {
    n: f"{ALIBABA} --compare stale,optimistic --set placement.replicas={n} {SHOWN} "
    f"--out results/alibaba-{n}-replicas"
    for n in (2, 4)
}
"""The hour under several scheduler replicas (1 is `HOUR`)."""
SPREAD_LINES: Lines = (
    (HOUR, {s: f"{s}, spread over 1 s" for s in HERD}),
    (AT_ONCE, {s: f"{s}, at once" for s in HERD}),
)
REPLICA_LINES: Lines = (
    (HOUR, {s: f"{s}, 1 replica" for s in ("stale", "optimistic")}),
    *((c, {s: f"{s}, {n} replicas" for s in ("stale", "optimistic")}) for n, c in REPLICAS.items()),
)
LONG_FIGURES: dict[str, Lines] = {
    "docs/assets/real-traffic-cv.png": ((HOUR, None),),
    "docs/assets/real-traffic-spread.png": SPREAD_LINES,
    "docs/assets/real-traffic-replicas.png": REPLICA_LINES,
}
"""The figures made only with `--long` (the real-traffic page's), each the CV over time of its
lines; every command they draw from is an output block of the page (tests/project/test_docs.py)."""
OUTPUT = re.compile(
    r"(<!-- output(?P<long> \(long\))?: (?P<command>.+?) -->\n```[a-z]*\n)(?P<shown>.*?)(```)", re.S
)
"""A marked output block: the marker and opening fence (`(long)`: made only with `--long`),
what the page shows, the closing fence."""
COLUMNS = 80
"""The terminal width the blocks are printed for."""


def _import_trace(argv: list[str]) -> None:
    """Imports the trace a `harness run` command replays, if it is not in the trace cache
    yet, so that the command itself never says it imports: what it prints is then the same
    on a machine whose cache holds the trace and on one whose cache does not."""
    from harness.cli import parse_args
    from harness.config import load, trace_file
    from harness.model.tunables import ConfigError

    try:
        args = parse_args(argv[1:])
        if args is not None and args.command == "run" and args.config is not None:
            trace_file.replayed(load(ROOT / args.config, args.overrides))
    except (ConfigError, SystemExit):  # a block that shows a mistake: the command says it
        pass


class Runs:
    """Each command run once per generation, whoever asks first (an output block, or a figure
    drawn from its results): what it printed, and its results folder (`--out`), kept until
    the generation ends. A long command takes every core: one runs at a time."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.done: dict[str, tuple[str, Path]] = {}
        self.locks: dict[str, threading.Lock] = {}
        self.guard = threading.Lock()
        self.long = threading.Lock()

    def run(self, command: str, long: bool = False) -> tuple[str, Path]:
        """What `command` prints at COLUMNS columns, its --out folder named as given, and the
        folder its results are in; trailing spaces dropped, as a page keeps none."""
        with self.guard:
            lock = self.locks.setdefault(command, threading.Lock())
        with lock:
            if command not in self.done:
                with self.long if long else contextlib.nullcontext():
                    self.done[command] = self._run(command)
            return self.done[command]

    def _run(self, command: str) -> tuple[str, Path]:
        argv = shlex.split(command)
        out = Path(tempfile.mkdtemp(dir=self.root)) / "out"
        named = None
        if "--out" in argv:
            at = argv.index("--out") + 1
            named, argv[at] = argv[at], str(out)
        _import_trace(argv)
        from harness.presentation.progress import PROGRESS_ENV

        # No progress line: a shown output must not depend on how fast this machine is. Both
        # streams in one pipe, unbuffered: the lines in the order a terminal shows them (an
        # estimate before the tables, a failure's reason after them).
        env = {**os.environ, "COLUMNS": str(COLUMNS), PROGRESS_ENV: str(QUIET_PROGRESS_S)}
        env["PYTHONUNBUFFERED"] = "1"
        done = subprocess.run(
            [sys.executable, "-m", "harness", *argv[1:]],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        text = done.stdout
        if named is not None:
            text = text.replace(str(out), named)
        return "".join(line.rstrip() + "\n" for line in text.splitlines()), out


_RUNS_MADE = threading.Lock()


@functools.cache
def _runs() -> Runs:
    root = Path(tempfile.mkdtemp(prefix="docs-generate-"))
    atexit.register(shutil.rmtree, root, True)
    return Runs(root)


def runs() -> Runs:
    """This generation's runs, in a temporary folder removed when it ends. Made under a lock:
    the files are made on several threads, and two asking at once each made their own (each
    command then ran twice, the long ones at the same time)."""
    with _RUNS_MADE:
        return _runs()


def output(command: str, long: bool = False) -> str:
    """What `command` (`harness ...`) prints at COLUMNS columns (`Runs.run`)."""
    return runs().run(command, long)[0]


def pages() -> list[Path]:
    """The docs pages and the README: where output blocks may be."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def with_outputs(page: Path, long: bool = False) -> bytes:
    """`page` with each marked output block as its command prints it now (a long one only
    with `long`; else as the page has it)."""

    def block(m: re.Match[str]) -> str:
        if m["long"] and not long:
            return m[0]
        return m[1] + output(m["command"], bool(m["long"])) + m[5]

    return OUTPUT.sub(block, page.read_text()).encode()


def generated(long: bool = False) -> dict[str, Callable[[], bytes]]:
    """Every generated file (from the project root) and what makes it: the long figures only
    with `long`."""
    made: dict[str, Callable[[], bytes]] = dict(FIGURES)
    if long:
        for name, lines in LONG_FIGURES.items():
            made[name] = functools.partial(chart_over_time, lines)
    for page in pages():
        if OUTPUT.search(page.read_text()):
            made[str(page.relative_to(ROOT))] = lambda page=page: with_outputs(page, long)
    return made


REPORT_IMAGE = "docs/assets/report.png"
BROWSERS = ("chromium", "chromium-browser", "google-chrome")
WIDTH = 1280
"""The window the report is captured in: its layout for a laptop screen."""


def report_image(browser: str) -> bytes:
    """The main job's report.html whole, 1280 px wide: captured in a window taller than any
    report, then cut below its last row that is not the page's background."""
    from PIL import Image, ImageChops

    from harness.cli import main as harness

    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "first"
        seed_herd = str(ROOT / "configs" / "seed-herd.toml")
        compare = "stale,in_progress,optimistic"
        argv = ["run", seed_herd, "--compare", compare, "--quiet", "--out", str(out)]
        with contextlib.redirect_stdout(io.StringIO()):  # the tables: not what is captured
            code = harness(argv)
        if code != 0:
            raise SystemExit("the main job failed")
        shot = Path(folder) / "shot.png"
        subprocess.run(
            [
                browser,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                "--no-first-run",
                f"--user-data-dir={Path(folder) / 'profile'}",
                f"--window-size={WIDTH},30000",
                "--virtual-time-budget=5000",
                f"--screenshot={shot}",
                (out / "report.html").as_uri(),
            ],
            capture_output=True,
            check=True,
            timeout=300,
        )
        image = Image.open(shot).convert("RGB")
    background = Image.new("RGB", image.size, image.getpixel((image.width - 1, image.height - 1)))
    box = ImageChops.difference(image, background).getbbox()
    bottom = min(image.height, (box[3] if box else image.height) + 24)
    buffer = io.BytesIO()
    image.crop((0, 0, image.width, bottom)).save(buffer, format="PNG", optimize=True)
    return buffer.getvalue()


def named(files: list[str], makers: dict[str, Callable[[], bytes]]) -> list[str]:
    """The generated files `files` names (paths from the current folder or the project root),
    or ValueError saying which is none of them."""
    found = []
    for given in files:
        path = Path(given).resolve()
        name = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else given
        if name not in makers:
            long = "" if name not in generated(long=True) else " without --long"
            raise ValueError(f"{given}: not a file docs/generate.py makes{long}")
        found.append(name)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    parser.add_argument("--long", action="store_true", help="the long ones too")
    parser.add_argument("files", nargs="*", help="only these (default: every generated file)")
    args = parser.parse_args()
    check = args.check
    stale = []
    makers = generated(args.long)
    if args.files:
        try:
            makers = {name: makers[name] for name in named(args.files, makers)}
        except ValueError as e:
            print(f"generate.py: {e}", file=sys.stderr)
            return 2
    # Each output block is a process of its own: they run side by side, and beside the figures
    # (a long command waits for the one before: `Runs`).
    with ThreadPoolExecutor(max_workers=len(makers)) as pool:
        futures = {name: pool.submit(make) for name, make in makers.items()}
    for name, future in futures.items():
        made = future.result()
        path = ROOT / name
        if path.exists() and path.read_bytes() == made:
            continue
        stale.append(name)
        if not check:
            path.write_bytes(made)
    browser = next((p for p in map(shutil.which, BROWSERS) if p), None)
    if not check and not args.files:
        if browser is None:
            print(f"{REPORT_IMAGE}: kept (no Chromium to capture it)", file=sys.stderr)
        else:
            (ROOT / REPORT_IMAGE).write_bytes(report_image(browser))
            print(f"{REPORT_IMAGE}: captured", file=sys.stderr)
    verb = "differs from what docs/generate.py makes" if check else "rewritten"
    for name in stale:
        print(f"{name}: {verb}", file=sys.stderr)
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
