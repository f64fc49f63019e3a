"""The skeleton of the commands that run things (`harness run`, `sweep`, `search`): load and
check the input, check the budget, claim the output, run with progress under the stop
handling, print, draw the report, and decide the exit code. A verb is a `Verb` subclass that
fills in the steps that are its own; the order, the stop handling and what is said when a
command stops early are the same for all."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from rich.console import Console

from harness.cli.exits import WRITE_FAILED, printable, say, stopped
from harness.config import Config, ConfigError
from harness.engines import EngineError
from harness.external import EXIT_CODE as SCHEDULER_FAILED
from harness.external import SchedulerError
from harness.model.registry import RegistryError
from harness.model.scheduling.strategies import STRATEGIES
from harness.results.failures import WriteFailed
from harness.results.thresholds import not_run


class Display(Protocol):
    """A progress display (`harness.presentation.progress`): told as the work goes, closed
    before anything else is said."""

    def close(self) -> None: ...


class Verb:
    """One command that runs things, as the command line asked for it (`args`). `perform` takes
    the steps in order; a subclass fills in its own: `load`, `budget` and `foreseen` (when it
    has a cost check), `out`, `display`, `work`, `kept`, `show`, `then` and `verdict`."""

    def __init__(self, args: argparse.Namespace, console: Console) -> None:
        self.args = args
        self.console = console

    @classmethod
    def act(cls, args: argparse.Namespace, console: Console) -> int:
        """The command: `perform` for this command line (`Command.act`)."""
        return cls(args, console).perform()

    def perform(self) -> int:
        """Every step in order; the exit code."""
        self.load()
        estimate = self.budget(refuse=not getattr(self.args, "force", False))
        out = writable_name(self.out())
        self.refuse_early(out)  # a mistake is one line: before anything else is said
        if estimate is not None and not self.args.quiet:  # long enough for it to matter
            say(estimate)
        foreseen = self.foreseen()
        if foreseen is not None:
            say(foreseen)
        progress = None if self.args.quiet else self.display()
        code = until_done(lambda: self.work(out, progress), progress, lambda: self.kept(out))
        if code is not None:
            return code
        try:
            self.show(out)
            self.console.print(f"results: {out}")
            then = self.then(out)
            if not self.args.no_report:  # after `then`: the report shows what it added
                write_report(out, self.console)
        except KeyboardInterrupt as e:  # the results are whole on disk: say so, and of the report
            unwritten = "" if self.args.no_report else "; report.html not written"
            return stopped(e, f"{self.kept(out)}{unwritten}")
        return self.verdict(then)

    def load(self) -> None:
        """Read and check what the command line names, before anything runs (ConfigError)."""
        raise NotImplementedError

    def budget(self, refuse: bool) -> str | None:
        """The estimate of what the work will need, as a line to say before it starts (None:
        too short for it to matter, or no cost check); with `refuse` (no `--force`), refuse
        what this machine cannot hold or would take days over (ConfigError naming the key)."""
        return None

    def foreseen(self) -> str | None:
        """A line said before the work starts about how it will go (a cluster too small)."""
        return None

    def out(self) -> Path:
        """The output folder."""
        raise NotImplementedError

    def refuse_early(self, out: Path) -> None:
        """Refuse what the work would refuse as it starts (ResultsError, ConfigError): an
        output folder it will not take, a Ray cluster that does not answer; by the rules the
        work applies, before anything is said of it."""

    def display(self) -> Display:
        """The progress display the work tells."""
        raise NotImplementedError

    def work(self, out: Path, progress: Any) -> None:
        """Run it, every result into `out` as it finishes."""
        raise NotImplementedError

    def kept(self, out: Path) -> str:
        """What is on disk in `out`, read from it now: the line said when the command stops."""
        raise NotImplementedError

    def show(self, out: Path) -> None:
        """Print the tables of what `out` holds."""
        raise NotImplementedError

    def then(self, out: Path) -> int:
        """Lines of its own after `results: OUT`, before the report; the exit code they ask."""
        return 0

    def verdict(self, then: int) -> int:
        """The exit code of the finished command (`then`'s included), saying why on stderr."""
        return then


def until_done(
    work: Callable[[], object], progress: Display | None, kept: Callable[[], str]
) -> int | None:
    """Runs `work`, always closing the progress display (before anything else is said); when
    it stops early, says what is on disk (`kept()`, read from the disk then) and returns the
    exit code (128 + the signal when interrupted, 1 an engine failure, SCHEDULER_FAILED the
    external scheduler's, WRITE_FAILED a file that could not be written)."""
    try:
        try:
            work()
        finally:
            if progress is not None:
                progress.close()
    except KeyboardInterrupt as e:
        return stopped(e, kept())
    except (EngineError, SchedulerError, WriteFailed) as e:
        print(f"harness: error: {printable(f'{e}; {kept()}')}", file=sys.stderr)
        codes = {EngineError: 1, SchedulerError: SCHEDULER_FAILED, WriteFailed: WRITE_FAILED}
        return next(code for kind, code in codes.items() if isinstance(e, kind))
    return None


def write_report(folder: Path, console: Console) -> None:
    """Draws `folder`'s report.html, saying where it is."""
    from harness.presentation.html_report import (
        write_report as draw,  # matplotlib: only loaded when drawing
    )
    from harness.presentation.progress import ticking

    with ticking(f"drawing {folder / 'report.html'}"):
        written = draw(folder)
    console.print(f"report: {written}")


def writable_name(out: Path) -> Path:
    """`out` if Arrow can name files in it. A name that is not UTF-8 (a byte such as 0xff, which
    the file system allows) reaches Python as a lone surrogate, which Arrow cannot encode."""
    try:
        str(out).encode("utf-8")
    except UnicodeEncodeError:
        raise ConfigError("--out", f"{str(out)!r} is not UTF-8 text, as results need") from None
    return out


def joins_a_cluster(address: str | None) -> bool:
    """Whether Ray will be joined at an address (given, or RAY_ADDRESS) rather than started
    here: the budget then checks only what comes back to this machine."""
    from harness.engines.ray_setup import joined_address

    return joined_address(address) is not None


def strategies(compare: str | None, default: str) -> list[str]:
    """The strategies `--compare` names (checked), else `default` alone."""
    if compare is None:
        return [default]
    names = [s.strip() for s in compare.split(",") if s.strip()]
    for name in names:
        try:
            STRATEGIES.resolve(name)
        except RegistryError as e:
            raise ConfigError("--compare", str(e)) from None
    if not names or len(set(names)) != len(names):
        raise ConfigError("--compare", "needs distinct strategy names separated by commas")
    return names


def check_threshold_strategies(config: Config, strategies: list[str]) -> None:
    """Refuses, before anything runs, a threshold on a strategy that will not run."""
    unchecked = not_run(config.thresholds, strategies)
    if unchecked:
        t = unchecked[0]
        raise ConfigError(
            t.origin, f"{t} names {t.strategy}, which does not run ({', '.join(strategies)})"
        )
