"""`harness compare`: a run (or sweep) against a baseline, a verdict per summary column; also
what `harness run --baseline` does once its run is done."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from harness.cli.command import Command
from harness.cli.exits import NOT_JUDGED, THRESHOLD_FAILED, printable, say
from harness.cli.flags import COMPARING
from harness.config import ConfigError
from harness.engines import real_time


def fail_columns(fail_on: str | None) -> list[str] | None:
    """The columns `--fail-on` watches (None: every one), checked before anything runs."""
    from harness.results.comparison import check_column

    if fail_on is None or fail_on.strip() == "worse":
        return None
    names = [n.strip() for n in fail_on.split(",") if n.strip()]
    if not names:
        raise ConfigError("--fail-on", "needs `worse` or summary column names")
    for name in names:
        check_column(name, "--fail-on")
    return names


def compare(base: Path, new: Path, args: argparse.Namespace, out: Path, console: Console) -> int:
    """Compares `new` with `base` as the flags say, prints the table, writes it to `out`, and
    returns the exit code `--fail-on` asks for."""
    from harness.presentation.comparison_view import comparison_lines, summary_line
    from harness.results.comparison import Result, load_side
    from harness.results.comparison import compare as compared
    from harness.results.comparison import write as write_comparison

    watched = fail_columns(args.fail_on)
    columns = [c.strip() for c in args.columns.split(",")] if args.columns else None
    result: Result = compared(
        load_side(base),
        load_side(new),
        columns,
        args.allow_diff,
        args.min_effect,
        real_time=real_time,
        faithful_only=args.faithful_only,
    )
    for line in comparison_lines(result):
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    console.print(summary_line(result), markup=False, highlight=False)
    console.print(f"comparison: {write_comparison(result, out)}", markup=False, highlight=False)
    if result.overloaded and not args.faithful_only:
        for line in result.overloaded:
            say(line)
        say(
            "no verdict from an overloaded run: rerun it on a quieter machine (or with a "
            "larger run.time_scale), or --faithful-only to judge the other seeds"
        )
        return NOT_JUDGED
    if args.fail_on is None:
        return 0
    worse = result.worse(watched)
    if worse.empty:
        return 0
    named = ", ".join(dict.fromkeys(f"{r.column} ({r.strategy})" for r in worse.itertuples()))
    say(f"worse than the baseline: {printable(named)}")
    return THRESHOLD_FAILED


def _act(args: argparse.Namespace, console: Console) -> int:
    from harness.results.comparison import FILE as COMPARISON_FILE

    return compare(args.base, args.new, args, args.out or args.new / COMPARISON_FILE, console)


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("base", type=Path, help="the baseline run's (or sweep's) folder")
    p.add_argument("new", type=Path, help="the run (or sweep) compared with it")
    p.add_argument(
        "--out",
        type=Path,
        metavar="FILE",
        help="where to write the table (default NEW/comparison.parquet)",  # comparison.FILE
    )


COMMAND = Command(
    "compare",
    "compare a run (or sweep) with a baseline: a verdict per summary column",
    _act,
    _arguments,
    COMPARING,
    example="harness compare results/main results/branch --fail-on worse",
    example_runs="not run: reads two runs this page does not make (the baseline guide makes them)",
)
