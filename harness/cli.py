"""`harness run` and `harness report`. User mistakes end with one line and exit code 2."""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from rich.console import Console

from harness.config import ConfigError, load
from harness.display import LazyProgress, print_run
from harness.ledgers import LEDGERS
from harness.results import ResultsError, load_run
from harness.runner import default_out_dir, run


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="harness",
        description="Load-test harness for Best-of-K placement on stale node metrics.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("run", help="run a scenario and write its results")
    p.add_argument("config", help="scenario TOML file (see configs/)")
    p.add_argument("--engine", choices=("virtual", "ray"), help="overrides run.engine")
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

    r = sub.add_parser("report", help="print the tables of a finished run")
    r.add_argument("dir", type=Path, help="a run's output folder")
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
    try:
        run(config, strategies, out, progress)
    except KeyboardInterrupt:
        console.print(f"[red]interrupted[/red]: partial results in {out} (completed: false)")
        return 130
    finally:
        if progress is not None:
            progress.close()
    meta, frames = load_run(out)
    print_run(meta, frames, console)
    console.print(f"results: {out}")
    return 0


def _cmd_report(args: argparse.Namespace, console: Console) -> int:
    meta, frames = load_run(args.dir)
    print_run(meta, frames, console)
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
        if args.command == "run":
            return _cmd_run(args, console)
        return _cmd_report(args, console)
    except (ConfigError, ResultsError) as e:
        print(f"harness: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
