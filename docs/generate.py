"""Regenerates what the docs show that the harness makes: run after a change to an output,
then commit what moved (docs/contributing.md). tests/project/test_docs.py fails while a committed
figure differs from what this makes.

    PYTHONPATH=. python docs/generate.py          # rewrite every generated file
    PYTHONPATH=. python docs/generate.py --check  # exit 1, naming them, where one differs
    PYTHONPATH=. python docs/generate.py --long   # the long blocks too (minutes: searches)

`docs/assets/report.png` (README and the home page) is the main job's whole report.html,
captured by a headless Chromium 1280 px wide when one is installed: made by a plain run, never
checked (a browser draws text a little differently on every machine).

Output blocks: a fenced block right after `<!-- output: harness ... -->` in a docs page or the
README is what that command prints in an 80-column terminal (`COLUMNS=80`), run from the
project root; its `--out DIR` is a temporary folder, named DIR in the text. A block marked
`<!-- output (long): harness ... -->` takes minutes (a whole search and its confirmation on
hundreds of fresh seeds, `docs/explanation/worst-cases.md`): it is made, or checked, only with
`--long`, after a change to the model or to what a search prints. Figures:
`docs/assets/herd-cv-over-time.png`, the chart "The herd, and why" describes: the
report's "CV over time" of the reference benchmark (configs/seed-herd.toml) under stale,
in_progress and optimistic, on the virtual engine (the same bytes on every machine with the
same matplotlib)."""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HERD = ("stale", "in_progress", "optimistic")
QUIET_PROGRESS_S = 86_400
"""Seconds between progress lines far beyond any command's length: none comes."""
"""The strategies the herd page compares."""


def herd_chart() -> bytes:
    """The herd page's chart: CV of sandboxes per node over seed-herd's run, per strategy."""
    from harness.config import load
    from harness.presentation import plots, series
    from harness.presentation.html_report import _beats
    from harness.results.run_folder import open_run
    from harness.running.runner import run

    config = load(str(ROOT / "configs" / "seed-herd.toml"), [], [])
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "run"
        run(config, list(HERD), out)
        files = open_run(out)
        r = config.run
        samples = series.timeline_samples(
            files.batches, files.frame("nodes"), r.sample_interval_s, r.duration_s
        )
    beats, _ = _beats(config)
    over_time = series.cv_over_time(samples)
    return plots.cv_over_time(over_time, plots.colors(list(HERD)), beats)


FIGURES: dict[str, Callable[[], bytes]] = {
    "docs/assets/herd-cv-over-time.png": herd_chart,
}
"""Each generated figure (from the project root) and what makes it."""
OUTPUT = re.compile(
    r"(<!-- output(?P<long> \(long\))?: (?P<command>.+?) -->\n```[a-z]*\n)(?P<shown>.*?)(```)", re.S
)
"""A marked output block: the marker and opening fence (`(long)`: made only with `--long`),
what the page shows, the closing fence."""
COLUMNS = 80
"""The terminal width the blocks are printed for."""


def output(command: str) -> str:
    """What `command` (`harness ...`) prints at COLUMNS columns, its --out folder named as
    given; trailing spaces dropped, as a page keeps none."""
    argv = shlex.split(command)
    with tempfile.TemporaryDirectory() as folder:
        named = None
        if "--out" in argv:
            at = argv.index("--out") + 1
            named, argv[at] = argv[at], str(Path(folder) / "out")
        from harness.presentation.progress import PROGRESS_ENV

        # No progress line: a shown output must not depend on how fast this machine is.
        env = {**os.environ, "COLUMNS": str(COLUMNS), PROGRESS_ENV: str(QUIET_PROGRESS_S)}
        done = subprocess.run(
            [sys.executable, "-m", "harness", *argv[1:]],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
        )
        text = done.stdout + done.stderr
        if named is not None:
            text = text.replace(str(Path(folder) / "out"), named)
    return "".join(line.rstrip() + "\n" for line in text.splitlines())


def pages() -> list[Path]:
    """The docs pages and the README: where output blocks may be."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def with_outputs(page: Path, long: bool = False) -> bytes:
    """`page` with each marked output block as its command prints it now (a long one only
    with `long`; else as the page has it)."""

    def block(m: re.Match[str]) -> str:
        return m[0] if m["long"] and not long else m[1] + output(m["command"]) + m[5]

    return OUTPUT.sub(block, page.read_text()).encode()


def generated(long: bool = False) -> dict[str, Callable[[], bytes]]:
    """Every generated file (from the project root) and what makes it."""
    made: dict[str, Callable[[], bytes]] = dict(FIGURES)
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    parser.add_argument("--long", action="store_true", help="the long output blocks too")
    args = parser.parse_args()
    check = args.check
    stale = []
    makers = generated(args.long)
    # Each output block is a process of its own: they run side by side, and beside the figures.
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
    if not check:
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
