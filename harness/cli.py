"""`harness run`, `harness sweep`, `harness report`, `harness compare` and `harness keys`. Exit
codes: 0 ok, 1 an engine failure, a broken invariant, a failed sweep cell or search trial, 2 a
user mistake or a damaged results folder (one line), 3 the external scheduler misbehaved (one line;
`harness.external`), 74 a results file could not be written (disk full, permission lost: one
line naming the file and the reason; what is on disk is whole), 98 a comparison judged nothing
(a run was overloaded), 99 a threshold failed (as k6) or a comparison with `--fail-on` found a
column worse than the baseline, 130 interrupted by SIGINT
(Ctrl-C), 143 by SIGTERM (128 + the signal, as a shell reports it). A signal after the command
has finished changes nothing."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, Protocol

from rich.console import Console

import harness
from harness.config import Config, ConfigError, load, stored_config
from harness.config.sweep_file import load_sweep
from harness.config.traces import TRACE_FORMATS
from harness.engines import ENGINES, EngineError, real_time
from harness.engines.ray_setup import ray_scope
from harness.external import EXIT_CODE as SCHEDULER_FAILED
from harness.external import SchedulerError
from harness.model.catalogue import catalogue
from harness.model.registry import RegistryError
from harness.model.scheduling.ledgers import LEDGERS
from harness.results import phase_hooks
from harness.results.failures import InvariantError, ResultsError, WriteFailed
from harness.results.folder_kinds import held_under, holder
from harness.results.thresholds import FORM, not_run
from harness.running import interrupts
from harness.running.interrupts import Interrupted, exit_code

# The modules that load Arrow, pandas, numpy or Ray (results folders, comparisons, terminal
# tables, the runners, the cost check) are imported inside the commands that use them, once
# the config is read: a mistake on the command line or in a config is said before any of them
# loads (tests/config/test_config_cli.py checks it; bench/config_error.py measures it).

THRESHOLD_FAILED = 99
"""Exit code of a run or sweep that finished but failed a threshold (k6 uses 99 too)."""
WRITE_FAILED = 74
"""Exit code of a command whose results could not be written (EX_IOERR of sysexits.h)."""
NOT_JUDGED = 98
"""Exit code of a comparison that refused to judge: a run it compares was overloaded."""
VIOLATIONS_COUNTED = 97
"""Exit code of a run whose external scheduler placed creates against an eligibility rule
(`external.on_violation = "count"`), unless `--accept-violations`."""
EXIT_CODES = {
    0: "done; every threshold passed",
    1: "an engine failure or a broken invariant; for a sweep or a search, a failed cell or "
    "trial (a task that raised, a broken invariant, a scheduler that would not start), said on "
    "stderr with how many failed and the first one's error: with `--accept-failed` a sweep or "
    "search some of whose cells or trials finished exits as if none had failed; one where "
    "none finished exits 1 always",
    2: "a user mistake (config, `--set`, arguments, `--out` or a results folder), or a damaged "
    "results folder: one line `harness: error: KEY: reason` on stderr, nothing run",
    SCHEDULER_FAILED: "the external scheduler misbehaved (died, hung past its timeout, answered "
    "a node that does not exist or an unparsable message, closed the stream): one line naming "
    "it; finished seeds are kept and run.json says completed: false",
    WRITE_FAILED: "a results file could not be written (disk full, permission lost): one line "
    "naming the file and the reason; what is on disk is whole, and `harness run --resume DIR` "
    "finishes the run",
    NOT_JUDGED: "a comparison (`harness compare`, `harness run --baseline`) that judged "
    "nothing: a run it compares ran overloaded (its `time_keeping`), so its figures may "
    "describe the machine; the seeds are named on stderr, the table is written with the "
    "verdict `overloaded`, and `--faithful-only` judges the other seeds instead",
    VIOLATIONS_COUNTED: "finished, results written, but the external scheduler placed "
    'creates against an eligibility rule (`external.on_violation = "count"`, the summary\'s '
    "`violations`): said on stderr with how many; `harness run --accept-violations` exits "
    "as if none had",
    THRESHOLD_FAILED: "finished, results written, but a threshold failed (a sweep: in any "
    "cell), or a comparison with `--fail-on` found a column worse than the baseline; k6 uses "
    "99 too",
    130: "interrupted by SIGINT (Ctrl-C); what finished is on disk, and the line says what",
    143: "stopped by SIGTERM; what finished is on disk, and the line says what",
}
"""What each exit code of `harness` means: the reference's table (docs/gen_reference.py)."""
PIPED_WIDTH = 150
"""Columns of output written to a pipe or a file when `COLUMNS` does not say: the tables'
width, rather than rich's 80."""
FORCE_HELP = (
    "run even what the budget refuses: more memory than this machine has available, or over "
    "a day of computing (docs: Configuration keys)"
)


class _Parser(argparse.ArgumentParser):
    """argparse whose mistakes (`--seeds abc`, `--engine gpu`) are a ConfigError like any other,
    so they end with the same single line and exit code 2 rather than the usage block.
    Subcommand parsers are of the same class (argparse makes them with the parent's)."""

    def error(self, message: str) -> NoReturn:
        raise ConfigError("", message)


def _threshold_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--threshold",
        action="append",
        default=[],
        metavar="EXPR",
        dest="thresholds",
        help=f"fail (exit {THRESHOLD_FAILED}) unless {FORM}; repeatable",
    )


def _accept_failed_flag(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument(
        "--accept-failed",
        action="store_true",
        help=f"exit 0 although some {what} failed, as long as one finished (they are said on "
        "stderr either way)",
    )


def _compare_flags(p: argparse.ArgumentParser) -> None:
    """The flags of a comparison with a baseline (`harness compare`, `harness run --baseline`)."""
    p.add_argument(
        "--columns",
        metavar="C1,C2,...",
        help="summary columns to compare (default: every result column but wall time)",
    )
    p.add_argument(
        "--allow-diff",
        action="append",
        default=[],
        metavar="KEY",
        help="a config key (or section) the two runs may differ in, e.g. placement.algorithm "
        "(repeatable; otherwise the configs must be equal)",
    )
    p.add_argument(
        "--min-effect",
        action="append",
        default=[],
        metavar="[COLUMN=]VALUE",
        help="the noise band: a smaller change is ~ (2%% of the base, or an amount in the "
        "column's unit; default per kind of column; repeatable)",
    )
    p.add_argument(
        "--fail-on",
        metavar="worse|C1,C2,...",
        help=f"exit {THRESHOLD_FAILED} if any column (or one of these) is worse",
    )
    p.add_argument(
        "--faithful-only",
        action="store_true",
        help="judge only the seeds that kept time (time_keeping faithful), leaving out those "
        f"an engine in real time ran overloaded (otherwise none is judged: exit {NOT_JUDGED})",
    )


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="harness",
        description="Load-test harness for Best-of-K placement on stale node metrics.",
    )
    parser.add_argument(
        "--version", action="version", version=f"harness {harness.__version__} ({harness.PATH})"
    )
    sub = parser.add_subparsers(dest="command")

    p = sub.add_parser("run", help="run a scenario and write its results")
    p.add_argument(
        "config", nargs="?", help="scenario TOML file (see configs/); optional with --resume"
    )
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
        help="run each strategy on the same seeds (`harness plugins` lists them)",
    )
    p.add_argument(
        "--out",
        type=Path,
        help="output folder, new or empty (default results/<name>-<time>-<run id>/)",
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace the results a run or a sweep left in --out (never other files)",
    )
    p.add_argument(
        "--resume",
        type=Path,
        metavar="DIR",
        help="finish the interrupted run in DIR: its finished seeds are kept, the others run "
        "with its config (a config file or flags given must agree with it)",
    )
    _threshold_flag(p)
    p.add_argument(
        "--baseline",
        type=Path,
        metavar="DIR",
        help="then compare the run with the run in DIR (as `harness compare DIR OUT`)",
    )
    _compare_flags(p)
    p.add_argument(
        "--accept-violations",
        action="store_true",
        help=f"exit 0, not {VIOLATIONS_COUNTED}, although the external scheduler placed creates "
        'against an eligibility rule (external.on_violation = "count"; said on stderr either '
        "way)",
    )
    p.add_argument("--force", action="store_true", help=FORCE_HELP)
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--no-report", action="store_true", help="do not write report.html")

    s = sub.add_parser(
        "search", help="search a space of scenarios for where a design does worst, on Ray"
    )
    s.add_argument("search", nargs="?", help="search TOML file (a [search] table; see configs/)")
    s.add_argument("--out", type=Path, help="output folder (default results/<name>/)")
    s.add_argument(
        "--resume",
        type=Path,
        metavar="DIR",
        help="go on with the search in DIR: its finished trials are kept, the rest run",
    )
    s.add_argument("--address", help="join this Ray cluster (default RAY_ADDRESS, else local)")
    s.add_argument("--trials", type=int, metavar="N", help="overrides the search's trials")
    s.add_argument(
        "--wall-s", type=float, metavar="S", help="overrides the search's wall_s (seconds)"
    )
    s.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        dest="overrides",
        help="override a key of the base config; repeatable",
    )
    s.add_argument(
        "--in-process", action="store_true", help="run the trials in this process, without Ray"
    )
    _accept_failed_flag(s, "trials")
    s.add_argument("--quiet", action="store_true", help="no progress line")
    s.add_argument("--no-report", action="store_true", help="do not write report.html")

    w = sub.add_parser("sweep", help="run every cell of a sweep file on Ray")
    w.add_argument("sweep", help="sweep TOML file (a [sweep] table; see configs/)")
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
    _threshold_flag(w)
    _accept_failed_flag(w, "cells")
    w.add_argument("--force", action="store_true", help=FORCE_HELP)
    w.add_argument("--quiet", action="store_true", help="no progress bar")
    w.add_argument("--no-report", action="store_true", help="do not write report.html")

    r = sub.add_parser(
        "report", help="print the tables of a run or sweep and write its HTML report"
    )
    r.add_argument(
        "dir",
        type=Path,
        help="a run's, sweep's or search's output folder; a folder of them: lists them",
    )
    c = sub.add_parser(
        "compare", help="compare a run (or sweep) with a baseline: a verdict per summary column"
    )
    c.add_argument("base", type=Path, help="the baseline run's (or sweep's) folder")
    c.add_argument("new", type=Path, help="the run (or sweep) compared with it")
    _compare_flags(c)
    c.add_argument(
        "--out",
        type=Path,
        metavar="FILE",
        help="where to write the table (default NEW/comparison.parquet)",  # comparison.FILE
    )
    sub.add_parser("plugins", help="list every placement plugin and strategy available")

    _trace_parser(sub)

    k = sub.add_parser("keys", help="list every config key with its default and meaning")
    k.add_argument(
        "--markdown",
        action="store_true",
        help="print rows of Markdown tables, as in the reference pages",
    )
    return parser


def parse_args(argv: list[str] | None) -> argparse.Namespace | None:
    """The command line, or a ConfigError saying what is wrong with it; None for `harness`
    alone, which has printed the usage (exit 0, as `--help`)."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return None
    return args


def _strategies(compare: str | None, default: str) -> list[str]:
    if compare is None:
        return [default]
    names = [s.strip() for s in compare.split(",") if s.strip()]
    for name in names:
        try:
            LEDGERS.resolve(name)
        except RegistryError as e:
            raise ConfigError("--compare", str(e)) from None
    if not names or len(set(names)) != len(names):
        raise ConfigError("--compare", "needs distinct strategy names separated by commas")
    return names


def printable(text: str) -> str:
    """`text` on one line with nothing a terminal acts on: characters that do not print (a
    newline or an escape code in a file name, a lone surrogate from a byte that is not UTF-8)
    are written as Python escapes."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


class Closable(Protocol):
    def close(self) -> None: ...


def _until_done(
    work: Callable[[], object], progress: Closable | None, console: Console, kept: Callable[[], str]
) -> int | None:
    """Runs `work`, always closing the progress display; when it stops early, says what is on
    disk (`kept()`, read from the disk then) and returns the exit code (128 + the signal when
    interrupted, 1 an engine failure, WRITE_FAILED a file that could not be written)."""
    try:
        work()
    except KeyboardInterrupt as e:
        _stopped(e, kept())
        return exit_code(e)
    except EngineError as e:
        print(f"harness: error: {printable(f'{e}; {kept()}')}", file=sys.stderr)
        return 1
    except SchedulerError as e:
        print(f"harness: error: {printable(f'{e}; {kept()}')}", file=sys.stderr)
        return SCHEDULER_FAILED
    except WriteFailed as e:
        print(f"harness: error: {printable(f'{e}; {kept()}')}", file=sys.stderr)
        return WRITE_FAILED
    finally:
        if progress is not None:
            progress.close()
    return None


def _stopped(error: BaseException, kept: str) -> None:
    """The line said when a signal stops the command: what it left, on stderr with the errors
    (stdout holds results, which a stopped command has not printed)."""
    print(f"{_signal_word(error)}: {printable(kept)}", file=sys.stderr)


def _notice(line: str) -> None:
    """A line about the run's state (a damaged part run again) on stderr, beside the errors."""
    print(f"harness: {printable(line)}", file=sys.stderr)


def _signal_word(error: BaseException) -> str:
    """How the line said on a signal begins: SIGTERM terminates, SIGINT (Ctrl-C) interrupts."""
    return "terminated" if getattr(error, "signum", None) == signal.SIGTERM else "interrupted"


def _ray_address(address: str | None) -> bool:
    """Whether Ray will be joined at an address (given, or RAY_ADDRESS) rather than started
    here: the budget then checks only what comes back to this machine."""
    return bool(address or os.environ.get("RAY_ADDRESS"))


def run_config(args: argparse.Namespace) -> tuple[Config, list[str]]:
    """The config and strategies a `harness run` command line stands for: the file, its --set
    overrides in order, then --engine, --address and --seeds, and its --thresholds."""
    overrides = list(args.overrides)
    flags = {}  # the key each flag given sets -> the flag: a bad value is named as typed
    for flag, key, value in (
        ("--engine", "run.engine", args.engine),
        ("--address", "ray.address", args.address),
        ("--seeds", "run.seeds", args.seeds),
    ):
        if value is not None and value != "":
            overrides.append(f"{key}={value}")
            flags[key] = flag
    try:
        config = load(args.config, overrides, args.thresholds)
    except ConfigError as e:
        if e.key not in flags:
            raise
        raise ConfigError(flags[e.key], e.reason) from None
    strategies = _strategies(args.compare, config.placement.strategy)
    _check_threshold_strategies(config, strategies)
    from harness.config import trace_file  # Arrow: loaded once the command line holds

    trace_file.check(config, _notice)  # last: it may import a trace
    return config, strategies


def _not_a_results_folder(path: Path) -> None:
    """Refuses a results folder given to `run` as its config, saying what would use it."""
    if (path / "run.json").is_file():
        raise ConfigError(
            str(path),
            f"is a run's results folder, not a scenario: see it with `harness report {path}`, "
            f"or finish an interrupted run with `harness run --resume {path}`",
        )
    if any((path / mark).is_file() for mark in ("sweep.json", "search.json")):
        raise ConfigError(
            str(path), f"is a results folder, not a scenario: see it with `harness report {path}`"
        )


def _writable_name(out: Path) -> Path:
    """`out` if Arrow can name files in it. A name that is not UTF-8 (a byte such as 0xff, which
    the file system allows) reaches Python as a lone surrogate, which Arrow cannot encode."""
    try:
        str(out).encode("utf-8")
    except UnicodeEncodeError:
        raise ConfigError("--out", f"{str(out)!r} is not UTF-8 text, as results need") from None
    return out


def _resumed_config(args: argparse.Namespace) -> tuple[Config, list[str]]:
    """The config and strategies of the run in --resume DIR: its own (run.json), or those the
    command line gives, which must then agree with it (checked by `run`)."""
    if args.config is not None:
        return run_config(args)
    from harness.results.run_folder import resumable

    meta = resumable(args.resume)
    if args.overrides or args.engine or args.address or args.seeds is not None or args.thresholds:
        raise ConfigError("--resume", "without a config file, flags cannot change the run")
    config = stored_config(meta["config"], args.resume / "run.json")
    strategies = _strategies(args.compare, config.placement.strategy)
    return config, strategies if args.compare else list(meta["strategies"])


def _cmd_run(args: argparse.Namespace, console: Console) -> int:
    if args.resume is not None:
        if args.out is not None or args.overwrite:
            raise ConfigError("--resume", "writes into DIR: --out and --overwrite do not apply")
        config, strategies = _resumed_config(args)
    elif args.config is None:
        raise ConfigError("config", "a scenario TOML file is required (or --resume DIR)")
    else:
        _not_a_results_folder(Path(args.config))
        config, strategies = run_config(args)
    from harness.presentation.terminal import LazyProgress, overload_warning
    from harness.results.comparison import FILE as COMPARISON_FILE
    from harness.results.comparison import check_configs, load_side
    from harness.results.comparison import run_config as comparable
    from harness.results.run_folder import new_run_id, state_of
    from harness.running.cost_check import check_run, this_machine
    from harness.running.runner import run

    if args.baseline is not None:  # a bad baseline, or one of another config, before any run
        baseline = load_side(args.baseline)
        check_configs(baseline.config, comparable(config.to_dict()), args.allow_diff)
        _fail_columns(args.fail_on)
    elif args.fail_on or args.columns or args.allow_diff or args.min_effect or args.faithful_only:
        raise ConfigError(
            "--baseline",
            "--fail-on, --columns, --allow-diff, --min-effect and --faithful-only "
            "compare with a baseline: give --baseline DIR",
        )
    remote = _ray_address(config.ray.address)  # the seeds, or the Ray engine's actors, run there
    said = check_run(config, len(strategies), this_machine(), remote, not args.force).line()
    if said:  # a run long enough for its estimate to matter
        _notice(said)
    run_id = new_run_id(config.run.name)  # without --out, the folder is named by it
    out = _writable_name(args.resume or args.out or Path("results") / run_id)
    progress = None if args.quiet else LazyProgress(config.run.name)
    resume = args.resume is not None
    stopped = _until_done(
        lambda: run(config, strategies, out, progress, args.overwrite, run_id, resume, _notice),
        progress,
        console,
        lambda: state_of(out),
    )
    if stopped is not None:
        return stopped
    try:
        meta, frames = _print_run(out, console)
        console.print(f"results: {out}")
        compared = 0
        if args.baseline is not None:  # before the report, which shows the comparison
            compared = _compare(args.baseline, out, args, out / COMPARISON_FILE, console)
        if not args.no_report:
            _write_report(out, console)
    except KeyboardInterrupt as e:  # the run is whole on disk: say so, and of the report
        unwritten = "" if args.no_report else "; report.html not written"
        _stopped(e, f"{state_of(out)}{unwritten}")
        return exit_code(e)
    overload_warning(frames, console)
    thresholds = _threshold_code(meta["thresholds"])
    return thresholds or _violations_code(frames["summary"], args.accept_violations) or compared


def _violations_code(summary: Any, accepted: bool) -> int:
    """VIOLATIONS_COUNTED when the external scheduler placed creates against an eligibility rule
    (only `external.on_violation = "count"` lets a run finish so), saying so on stderr; 0 when
    it did not, or `--accept-violations` accepts it."""
    if "violations" not in summary or not summary["violations"].any():
        return 0
    named = summary["scheduler"].dropna() if "scheduler" in summary else ()
    names = ", ".join(sorted({str(n) for n in named})) or "(unnamed)"
    count = int(summary["violations"].sum())
    then = "accepted (--accept-violations)" if accepted else "--accept-violations accepts them"
    print(
        f"harness: the external scheduler {printable(names)} placed {count} creates against an "
        f"eligibility rule (the summary's violations, by rule violations_*); {then}",
        file=sys.stderr,
    )
    return 0 if accepted else VIOLATIONS_COUNTED


def _cmd_sweep(args: argparse.Namespace, console: Console) -> int:
    sweep = load_sweep(args.sweep, args.overrides, args.seeds, args.thresholds)
    _check_threshold_strategies(
        sweep.base, list(dict.fromkeys(c.config.placement.strategy for c in sweep.cells))
    )
    from harness.presentation.terminal import SweepBar, print_sweep
    from harness.results.sweep_folder import load_sweep_results, sweep_state
    from harness.running.cost_check import check_sweep, this_machine
    from harness.running.sweep_runner import run_sweep  # ray: only loaded when sweeping

    configs = [cell.config for cell in sweep.cells]
    remote = _ray_address(args.address)
    seeds = sweep.base.run.seeds
    said = check_sweep(configs, seeds, this_machine(), remote, not args.force).line()
    if said:  # a sweep long enough for its estimate to matter
        _notice(said)
    out = _writable_name(args.out or Path("results") / sweep.name)
    progress = None if args.quiet else SweepBar(sweep.name)
    stores = []
    stopped = _until_done(
        lambda: stores.append(run_sweep(sweep, out, progress, args.address)),
        progress,
        console,
        lambda: sweep_state(out),
    )
    if stopped is not None:
        return stopped
    meta, summary = load_sweep_results(out)
    print_sweep(meta, summary, console)
    console.print(f"results: {out}")
    if stores[0].reused:
        console.print(
            f"reused {stores[0].reused} of {len(sweep.cells)} cells complete in {out} from an "
            "earlier run of this sweep (another --out runs every cell)",
            soft_wrap=True,
            markup=False,
        )
    if not args.no_report:
        _write_report(out, console)
    failures = [c["error"] for c in meta["cells"] if c["status"] == "failed"]
    return _failed_code("cells", failures, len(meta["cells"]), args.accept_failed) or (
        _threshold_code([r for c in meta["cells"] for r in c.get("thresholds", [])])
    )


def _failed_code(what: str, failures: list[str], total: int, accept: bool) -> int:
    """0 when every one of `total` trials or cells finished; else says on stderr how many
    failed and the first one's error, and returns 1, unless `accept` (`--accept-failed`) and
    at least one finished. Nothing finished is always 1: an empty result is not a result."""
    if not failures and total:
        return 0
    first = f"; the first: {failures[0]}" if failures else ""
    if len(failures) == total:
        said = f"error: all {total} {what} failed{first}" if total else f"error: no {what} ran"
        print(f"harness: {printable(said)}", file=sys.stderr)
        return 1
    said = f"{len(failures)} of {total} {what} failed{first}"
    print(f"harness: {printable(said)}", file=sys.stderr)
    return 0 if accept else 1


def _cmd_search(args: argparse.Namespace, console: Console) -> int:
    from harness.config.search_file import load_search, stored_search, with_budget
    from harness.presentation.search_report import SearchLine, print_search
    from harness.results.search_folder import (
        load_search_results,
        read_search_meta,
        search_state,
        trial_failures,
    )
    from harness.running.search_runner import run_search  # optuna, ray: only when searching

    if args.resume is not None:
        if args.search is not None or args.out is not None or args.overrides:
            raise ConfigError("--resume", "goes on with DIR's own search: no file, --out or --set")
        search = stored_search(read_search_meta(args.resume), args.resume / "search.json")
    elif args.search is None:
        raise ConfigError("search", "a search TOML file is required (or --resume DIR)")
    else:
        search = load_search(args.search, args.overrides)
    for flag, value in (("--trials", args.trials), ("--wall-s", args.wall_s)):
        if value is not None and not value > 0:
            raise ConfigError(flag, f"must be above 0, got {value}")
    search = with_budget(search, args.trials, args.wall_s)
    out = _writable_name(args.resume or args.out or Path("results") / search.name)
    progress = None if args.quiet else SearchLine(search.name, console)
    stopped = _until_done(
        lambda: run_search(
            search, out, progress, args.address, not args.in_process, args.resume is not None
        ),
        progress,
        console,
        lambda: search_state(out),
    )
    if stopped is not None:
        return stopped
    meta, trials = load_search_results(out)
    print_search(meta, trials, console)
    console.print(f"results: {out}")
    if not args.no_report:
        _write_report(out, console)
    return _failed_code("trials", trial_failures(meta, trials), len(trials), args.accept_failed)


def _check_threshold_strategies(config: Config, strategies: list[str]) -> None:
    """Refuses, before anything runs, a threshold on a strategy that will not run."""
    unchecked = not_run(config.thresholds, strategies)
    if unchecked:
        t = unchecked[0]
        raise ConfigError(
            t.origin, f"{t} names {t.strategy}, which does not run ({', '.join(strategies)})"
        )


def _threshold_code(records: list[dict[str, Any]]) -> int:
    """0 when every threshold check passed, else THRESHOLD_FAILED, saying so on stderr."""
    failed = sum(not r["passed"] for r in records)
    if not failed:
        return 0
    print(f"harness: {failed} of {len(records)} threshold checks failed", file=sys.stderr)
    return THRESHOLD_FAILED


def _write_report(folder: Path, console: Console) -> None:
    from harness.presentation.html_report import (
        write_report,  # matplotlib: only loaded when drawing
    )

    console.print(f"report: {write_report(folder)}")


def _print_run(folder: Path, console: Console) -> tuple[dict[str, Any], dict[str, Any]]:
    """Print a run's tables; its run.json and its summary (all a caller needs after). Of the
    large tables, only the load figures pooled over seeds are read, a batch at a time."""
    from harness.presentation.terminal import print_run
    from harness.results.run_folder import open_run
    from harness.results.statistics import pooled_load

    run = open_run(folder)
    frames = {name: run.frame(name) for name in ("summary", "nodes")}
    frames["pooled"] = pooled_load(frames["summary"], run.batches)
    print_run(run.meta, frames, console)
    return run.meta, {"summary": frames["summary"]}


def _cmd_report(args: argparse.Namespace, console: Console) -> int:
    try:
        kind = _results_kind(args.dir)
        if kind is None:  # a parent folder: the runs it holds
            from harness.presentation.folder_list import print_folders

            found = held_under(args.dir)
            if not found:
                raise ResultsError(
                    f"{args.dir} is not a results folder (no run.json) and holds none"
                )
            print_folders(args.dir, found, console)
            return 0
    except OSError as e:  # a name too long, a folder that cannot be read
        raise ResultsError(f"{e.filename or args.dir}: {e.strerror or e}") from None
    # Pandas, Arrow and matplotlib only once the folder is known to hold results.
    from harness.presentation.search_report import print_search
    from harness.presentation.terminal import overload_warning, print_sweep
    from harness.results.search_folder import is_search, load_search_results
    from harness.results.sweep_folder import is_sweep, load_sweep_results

    try:
        if is_search(args.dir):
            meta, trials = load_search_results(args.dir)
            print_search(meta, trials, console)
        elif is_sweep(args.dir):
            meta, summary = load_sweep_results(args.dir)
            stored_config(meta["identity"].get("base"), Path(args.dir) / "sweep.json")
            print_sweep(meta, summary, console)
        else:
            frames = _print_run(args.dir, console)[1]
            _write_report(args.dir, console)
            overload_warning(frames, console)
            return 0
        _write_report(args.dir, console)
    except OSError as e:  # a name too long, a folder that cannot be read
        raise ResultsError(f"{e.filename or args.dir}: {e.strerror or e}") from None
    return 0


def _results_kind(folder: Path) -> str | None:
    """What `folder` holds ("run", "sweep", "search"), None for a folder of other things, or
    ResultsError for what is no folder: told from the files alone, no data library loaded."""
    if not folder.is_dir():
        raise ResultsError(f"{folder} is not a folder")
    return holder(folder)


def _fail_columns(fail_on: str | None) -> list[str] | None:
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


def _compare(base: Path, new: Path, args: argparse.Namespace, out: Path, console: Console) -> int:
    """Compares `new` with `base` as the flags say, prints the table, writes it to `out`, and
    returns the exit code `--fail-on` asks for."""
    from harness.presentation.comparison_view import comparison_lines, summary_line
    from harness.results.comparison import Result, compare, load_side
    from harness.results.comparison import write as write_comparison

    watched = _fail_columns(args.fail_on)
    columns = [c.strip() for c in args.columns.split(",")] if args.columns else None
    result: Result = compare(
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
            print(f"harness: {printable(line)}", file=sys.stderr)
        print(
            "harness: no verdict from an overloaded run: rerun it on a quieter machine (or with "
            "a larger run.time_scale), or --faithful-only to judge the other seeds",
            file=sys.stderr,
        )
        return NOT_JUDGED
    if args.fail_on is None:
        return 0
    worse = result.worse(watched)
    if worse.empty:
        return 0
    named = ", ".join(dict.fromkeys(f"{r.column} ({r.strategy})" for r in worse.itertuples()))
    print(f"harness: worse than the baseline: {printable(named)}", file=sys.stderr)
    return THRESHOLD_FAILED


def _cmd_compare(args: argparse.Namespace, console: Console) -> int:
    from harness.results.comparison import FILE as COMPARISON_FILE

    return _compare(args.base, args.new, args, args.out or args.new / COMPARISON_FILE, console)


def _cmd_plugins(args: argparse.Namespace, console: Console) -> int:
    """One line per plugin under a header: its kind, its name, and where it comes from (the
    package, or an installed entry point's "module:Class")."""
    print(f"{'KIND':<10} {'NAME':<20} FROM")
    for kind, name, source in catalogue(ENGINES, TRACE_FORMATS):
        print(f"{kind:<10} {name:<20} {source}")
    print(f"{'scheduler':<10} {'external':<20} harness.external")  # [external] address or command
    return 0


def _trace_parser(sub: argparse._SubParsersAction) -> None:
    t = sub.add_parser(
        "trace", help="import a published trace into the harness's trace format (Parquet)"
    )
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


def _cmd_trace(args: argparse.Namespace, console: Console) -> int:
    """`harness trace import FORMAT [SOURCE]`: the window of the trace as one Parquet file of
    the harness's format, which `arrival = "trace"` replays."""
    from harness.config.traces.trace_format import check_window
    from harness.results.atomic_files import replace_atomically

    fmt = TRACE_FORMATS[args.format]
    if not fmt.imports:
        raise ConfigError("format", f"{fmt.name} is the harness's own format: nothing to import")
    check_window(args.start, args.span, "--start", "--span")
    files = fmt.files(args.source, "source")
    out = _writable_name(args.out)
    done = []
    replace_atomically(out, lambda tmp: done.append(fmt.convert(files, args.start, args.span, tmp)))
    window = f"seconds {args.start:g} to {args.start + args.span:g}"
    print(f"{out}: {'; '.join(done[0].lines())} ({fmt.describe(args.source)}, {window})")
    return 0


def _cmd_keys(args: argparse.Namespace, console: Console) -> int:
    from harness.presentation.terminal import print_keys

    print_keys(console, markdown=args.markdown)
    return 0


class _Interrupts:
    """The handler of SIGINT (Ctrl-C) and SIGTERM: the first stops the command where it is
    (`harness.running.interrupts.stop`: at once, or when the section writing files ends), so the run
    writes what it has; any later one is only counted, so that writing, and stopping Ray, are
    never cut short. While `shielded`, the first is only counted too. Either way the command
    exits with 128 + the first signal."""

    def __init__(self) -> None:
        self.count = 0
        self.first: int | None = None
        self.shielded = False

    def __call__(self, signum: int, frame: object) -> None:
        self.count += 1
        self.first = self.first or signum
        if self.count == 1 and not self.shielded:
            interrupts.stop(signum)


def _command(argv: list[str] | None, console: Console) -> int:
    try:
        args = parse_args(argv)
        if args is None:
            return 0
        commands = {
            "run": _cmd_run,
            "sweep": _cmd_sweep,
            "search": _cmd_search,
            "report": _cmd_report,
            "compare": _cmd_compare,
            "plugins": _cmd_plugins,
            "keys": _cmd_keys,
            "trace": _cmd_trace,
        }
        return commands[args.command](args, console)
    except (ConfigError, ResultsError) as e:
        print(f"harness: error: {printable(str(e))}", file=sys.stderr)
        return 2
    except WriteFailed as e:
        print(f"harness: error: {printable(str(e))}", file=sys.stderr)
        return WRITE_FAILED
    except InvariantError as e:
        print(f"harness: {printable(str(e))}", file=sys.stderr)
        return 1


def main(argv: list[str] | None = None) -> int:
    """The command line `argv` (else the process's). Run as the program (no `argv`), a signal
    after the command has finished is only counted: the exit code is decided by then."""
    handler = _Interrupts()
    handlers = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    code = exit_code(Interrupted(signal.SIGINT))
    try:
        console = Console()
        if not console.is_terminal and not os.environ.get("COLUMNS", "").strip().isdigit():
            # piped, and no width asked for (rich reads COLUMNS itself): room for the tables
            # rather than 80 columns
            console.width = PIPED_WIDTH
        with ray_scope():  # a Ray the command started is stopped before it returns
            try:
                code = _command(argv, console)
            finally:
                handler.shielded = True
                phase_hooks.at("shutdown")
    except KeyboardInterrupt as e:  # outside a run (a run says what it kept itself)
        print(f"harness: {_signal_word(e)}", file=sys.stderr)
        return exit_code(e)
    finally:
        if argv is not None:
            for signum, previous in handlers.items():
                signal.signal(signum, previous)
    interrupted = exit_code(Interrupted(handler.first)) if handler.first else None
    if interrupted is not None and code in (0, THRESHOLD_FAILED):
        # while Ray stopped, after the command was done: the run's own result stands
        print(f"harness: {_signal_word(Interrupted(handler.first))}", file=sys.stderr)
        code = interrupted
    phase_hooks.at("done")
    return code


if __name__ == "__main__":
    sys.exit(main())
