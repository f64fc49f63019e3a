"""`harness run`, `harness sweep` and `harness report`. User mistakes end with one line and exit
code 2."""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from rich.console import Console

from harness.config import ConfigError, load
from harness.display import LazyProgress, SweepBar, print_run, print_sweep
from harness.engine import ENGINES, EngineError
from harness.invariants import InvariantError
from harness.ledgers import LEDGERS
from harness.run_store import ResultsError, load_run
from harness.runner import default_out_dir, run
from harness.sweep_spec import load_sweep
from harness.sweep_store import is_sweep, load_sweep_results


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="harness",
        description="Load-test harness for Best-of-K placement on stale node metrics.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("run", help="run a scenario and write its results")
    p.add_argument("config", help="scenario TOML file (see configs/)")
    p.add_argument("--engine", choices=tuple(ENGINES), help="overrides run.engine")
    p.add_argument(
        "--address",
        metavar="HOST:PORT",
        help="Ray cluster to join (overrides ray.address; default RAY_ADDRESS, else local Ray)",
    )
    p.add_argument("--seeds", type=int, metavar="N", help="overrides run.seeds")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        dest="overrides",
        help="override a config key, e.g. --set placement.k=2 (repeatable)",
    )
    p.add_argument(
        "--compare",
        metavar="S1,S2,...",
        help=f"run each strategy on the same seeds ({', '.join(LEDGERS)})",
    )
    p.add_argument("--out", type=Path, help="output folder (default results/<name>-<time>/)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--no-report", action="store_true", help="do not write report.html")

    w = sub.add_parser("sweep", help="run every cell of a sweep file on Ray")
    w.add_argument("sweep", help="sweep TOML file (see configs/sweep-*.toml)")
    w.add_argument(
        "--out",
        type=Path,
        help="output folder (default results/<name>/); "
        "rerunning into it skips the cells already complete",
    )
    w.add_argument(
        "--address",
        help="join this Ray cluster (default RAY_ADDRESS, else a local Ray on all cores)",
    )
    w.add_argument("--seeds", type=int, metavar="N", help="overrides the sweep's seeds")
    w.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        dest="overrides",
        help="override a key of the base config (not a varied one); repeatable",
    )
    w.add_argument("--quiet", action="store_true", help="no progress bar")
    w.add_argument("--no-report", action="store_true", help="do not write report.html")

    r = sub.add_parser(
        "report", help="print the tables of a run or sweep and write its HTML report"
    )
    r.add_argument("dir", type=Path, help="a run's or a sweep's output folder")
    return parser


def _strategies(compare: str | None, default: str) -> list[str]:
    if compare is None:
        return [default]
    names = [s.strip() for s in compare.split(",") if s.strip()]
    for name in names:
        if name not in LEDGERS:
            raise ConfigError(
                "--compare", f"unknown strategy {name!r}; known: {', '.join(LEDGERS)}"
            )
    if not names or len(set(names)) != len(names):
        raise ConfigError("--compare", "needs distinct strategy names separated by commas")
    return names


class Closable(Protocol):
    def close(self) -> None: ...


def _until_done(
    work: Callable[[], object], progress: Closable | None, console: Console, kept: str
) -> int | None:
    """Runs `work`, always closing the progress display; when it stops early, says what was
    kept and returns the exit code (130 interrupted, 1 an engine failure)."""
    try:
        work()
    except KeyboardInterrupt:
        console.print(f"[red]interrupted[/red]: {kept}")
        return 130
    except EngineError as e:
        print(f"harness: error: {e}; {kept}", file=sys.stderr)
        return 1
    finally:
        if progress is not None:
            progress.close()
    return None


def _cmd_run(args: argparse.Namespace, console: Console) -> int:
    overrides = list(args.overrides)
    if args.engine:
        overrides.append(f"run.engine={args.engine}")
    if args.address:
        overrides.append(f"ray.address={args.address}")
    if args.seeds is not None:
        overrides.append(f"run.seeds={args.seeds}")
    config = load(args.config, overrides)
    strategies = _strategies(args.compare, config.placement.strategy)
    out = args.out or default_out_dir(config)
    progress = None if args.quiet else LazyProgress(config.run.name)
    stopped = _until_done(
        lambda: run(config, strategies, out, progress),
        progress,
        console,
        f"partial results in {out} (completed: false)",
    )
    if stopped is not None:
        return stopped
    meta, frames = load_run(out)
    print_run(meta, frames, console)
    console.print(f"results: {out}")
    if not args.no_report:
        _write_report(out, console)
    return 0


def _cmd_sweep(args: argparse.Namespace, console: Console) -> int:
    from harness.sweep import run_sweep  # ray: only loaded when sweeping

    sweep = load_sweep(args.sweep, args.overrides, args.seeds)
    out = args.out or Path("results") / sweep.name
    progress = None if args.quiet else SweepBar(sweep.name)
    stopped = _until_done(
        lambda: run_sweep(sweep, out, progress, args.address),
        progress,
        console,
        f"finished cells are in {out}; run the same command again to do the rest",
    )
    if stopped is not None:
        return stopped
    meta, summary = load_sweep_results(out)
    print_sweep(meta, summary, console)
    console.print(f"results: {out}")
    if not args.no_report:
        _write_report(out, console)
    return 0


def _write_report(folder: Path, console: Console) -> None:
    from harness.report_html import write_report  # matplotlib: only loaded when drawing

    console.print(f"report: {write_report(folder)}")


def _cmd_report(args: argparse.Namespace, console: Console) -> int:
    if is_sweep(args.dir):
        meta, summary = load_sweep_results(args.dir)
        print_sweep(meta, summary, console)
    else:
        meta, frames = load_run(args.dir)
        print_run(meta, frames, console)
    _write_report(args.dir, console)
    return 0


def _terminate(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    console = Console()
    if not console.is_terminal:
        console.width = 150  # piped output: room for the tables rather than 80 columns
    signal.signal(signal.SIGTERM, _terminate)
    try:
        commands = {"run": _cmd_run, "sweep": _cmd_sweep, "report": _cmd_report}
        return commands[args.command](args, console)
    except (ConfigError, ResultsError) as e:
        print(f"harness: error: {e}", file=sys.stderr)
        return 2
    except InvariantError as e:
        print(f"harness: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
