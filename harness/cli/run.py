"""`harness run`: a scenario on the engine it names, every strategy it compares on the same
seeds; then, with `--baseline`, compared with an earlier run."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console

from harness.cli import compare
from harness.cli.command import Command
from harness.cli.exits import VIOLATIONS_COUNTED, printable, say, threshold_code
from harness.cli.flags import COMPARING
from harness.cli.verb import (
    Verb,
    check_threshold_strategies,
    joins_a_cluster,
    strategies,
)
from harness.config import Config, ConfigError, load, stored_config
from harness.engines import ENGINES
from harness.results.folder_policy import holder, marker

# The modules that load Arrow, pandas, numpy or Ray (results folders, comparisons, terminal
# tables, the runners, the cost check) are imported inside the steps that use them, once the
# config is read: a mistake on the command line or in a config is said before any of them
# loads (tests/config/test_config_cli.py checks it; bench/config_error.py measures it).


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
    named = strategies(args.compare, config.placement.strategy)
    check_threshold_strategies(config, named)
    from harness.config import trace_file  # Arrow: loaded once the command line holds

    trace_file.check(config, say)  # last: it may import a trace
    return config, named


def _not_a_results_folder(path: Path) -> None:
    """Refuses a results folder given to `run` as its config, saying what would use it."""
    held = holder(path)
    if held == "run":
        raise ConfigError(
            str(path),
            f"is a run's results folder, not a scenario: see it with `harness report {path}`, "
            f"or finish an interrupted run with `harness run --resume {path}`",
        )
    if held is not None:
        raise ConfigError(
            str(path), f"is a results folder, not a scenario: see it with `harness report {path}`"
        )


def _resumed_config(args: argparse.Namespace) -> tuple[Config, list[str]]:
    """The config and strategies of the run in --resume DIR: its own (run.json), or those the
    command line gives, which must then agree with it (checked by `run`)."""
    if args.config is not None:
        return run_config(args)
    from harness.results.run_reader import resumable

    meta = resumable(args.resume)
    if args.overrides or args.engine or args.address or args.seeds is not None or args.thresholds:
        raise ConfigError("--resume", "without a config file, flags cannot change the run")
    config = stored_config(meta["config"], args.resume / marker("run"))
    named = strategies(args.compare, config.placement.strategy)
    return config, named if args.compare else list(meta["strategies"])


def print_run(folder: Path, console: Console) -> tuple[dict[str, Any], dict[str, Any]]:
    """Print a run's tables; its run.json and its summary (all a caller needs after). Of the
    large tables, only the load figures pooled over seeds are read, a batch at a time."""
    from harness.presentation.terminal import print_run as tables
    from harness.results.run_reader import open_run
    from harness.results.statistics import pooled_load

    run = open_run(folder)
    frames = {name: run.frame(name) for name in ("summary", "nodes")}
    frames["pooled"] = pooled_load(frames["summary"], run.batches)
    tables(run.meta, frames, console)
    return run.meta, {"summary": frames["summary"]}


class Run(Verb):
    """A run: its config and strategies, its run id, and, once printed, its run.json and
    summary."""

    def load(self) -> None:
        args = self.args
        if args.resume is not None:
            if args.out is not None or args.overwrite:
                raise ConfigError("--resume", "writes into DIR: --out and --overwrite do not apply")
            self.config, self.strategies = _resumed_config(args)
        elif args.config is None:
            raise ConfigError("config", "a scenario TOML file is required (or --resume DIR)")
        else:
            _not_a_results_folder(Path(args.config))
            self.config, self.strategies = run_config(args)
        if args.baseline is not None:  # a bad baseline, or one of another config, before any run
            from harness.results.comparison import check_configs, load_side
            from harness.results.comparison import run_config as comparable

            baseline = load_side(args.baseline)
            check_configs(baseline.config, comparable(self.config.to_dict()), args.allow_diff)
            compare.fail_columns(args.fail_on)
        elif any(getattr(args, flag[2:].replace("-", "_")) for flag in COMPARING):
            raise ConfigError(
                "--baseline",
                f"{', '.join(COMPARING[:-1])} and {COMPARING[-1]} compare with a baseline: "
                "give --baseline DIR",
            )

    def budget(self, refuse: bool) -> str | None:
        from harness.results.machine import this_machine
        from harness.running.cost_check import check_run

        config = self.config
        remote = joins_a_cluster(config.ray.address)  # the seeds, or the Ray engine's actors
        return check_run(config, len(self.strategies), this_machine(), remote, refuse).line()

    def foreseen(self) -> str | None:
        from harness.running.cost_check import over_capacity

        return over_capacity(self.config)

    def out(self) -> Path:
        from harness.results.folder_policy import new_run_id

        self.run_id = new_run_id(self.config.run.name)  # without --out, the folder is named by it
        return self.args.resume or self.args.out or Path("results") / self.run_id

    def refuse_early(self, out: Path) -> None:
        from harness.engines.ray_setup import check_address
        from harness.results.folder_policy import check_out_dir

        if self.args.resume is None:  # a resumed run's own folder was read in `load`
            check_out_dir(out, self.args.overwrite)
        check_address(self.config.ray.address)

    def display(self) -> Any:
        from harness.presentation.progress import LazyProgress

        return LazyProgress(self.config.run.name)

    def work(self, out: Path, progress: Any) -> None:
        from harness.running.runner import run

        args = self.args
        resume = args.resume is not None
        run(self.config, self.strategies, out, progress, args.overwrite, self.run_id, resume, say)

    def kept(self, out: Path) -> str:
        from harness.results.run_reader import state_of

        return state_of(out)

    def show(self, out: Path) -> None:
        self.meta, self.frames = print_run(out, self.console)

    def then(self, out: Path) -> int:
        """With `--baseline`, the comparison (which the report then shows)."""
        from harness.results.comparison import FILE as COMPARISON_FILE

        if self.args.baseline is None:
            return 0
        args = self.args
        return compare.compare(args.baseline, out, args, out / COMPARISON_FILE, self.console)

    def verdict(self, then: int) -> int:
        from harness.presentation.terminal import overload_warning

        overload_warning(self.frames, self.console)
        thresholds = threshold_code(self.meta["thresholds"])
        summary = self.frames["summary"]
        return thresholds or _violations_code(summary, self.args.accept_violations) or then


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
    say(
        f"the external scheduler {printable(names)} placed {count} creates against an "
        f"eligibility rule (the summary's violations, by rule violations_*); {then}"
    )
    return 0 if accepted else VIOLATIONS_COUNTED


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "config", nargs="?", help="scenario TOML file (see configs/); optional with --resume"
    )
    p.add_argument("--engine", choices=tuple(ENGINES), help="overrides run.engine")
    p.add_argument(
        "--compare",
        metavar="S1,S2,...",
        help="run each strategy on the same seeds (`harness plugins` lists them)",
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace the results a run or a sweep left in --out (never other files)",
    )
    p.add_argument(
        "--baseline",
        type=Path,
        metavar="DIR",
        help="then compare the run with the run in DIR (as `harness compare DIR OUT`)",
    )
    p.add_argument(
        "--accept-violations",
        action="store_true",
        help=f"exit 0, not {VIOLATIONS_COUNTED}, although the external scheduler placed creates "
        'against an eligibility rule (external.on_violation = "count"; said on stderr either '
        "way)",
    )


COMMAND = Command(
    "run",
    "run a scenario and write its results",
    Run.act,
    _arguments,
    (
        "--address",
        "--seeds",
        "--set",
        "--out",
        "--resume",
        "--threshold",
        *COMPARING,
        "--force",
        "--quiet",
        "--no-report",
    ),
    {
        "what": "run",
        "units": "seeds",
        "out": "new or empty (default results/<name>-<time>-<run id>/)",
    },
    "harness run configs/seed-herd.toml --compare stale,optimistic --seeds 5",
)
