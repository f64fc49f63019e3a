"""`harness search`: a space of scenarios searched for where a design does worst."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from harness.cli.command import Command
from harness.cli.exits import failed_code
from harness.cli.verb import Verb
from harness.config import ConfigError
from harness.results.folder_policy import marker


class Search(Verb):
    """A search: its file (or the one in --resume DIR) with the budget of the command line,
    and, once printed, its search.json and trials."""

    def load(self) -> None:
        from harness.config.search_file import load_search, stored_search, with_budget
        from harness.results.search_folder import read_search_meta

        args = self.args
        if args.resume is not None:
            if args.search is not None or args.out is not None or args.overrides:
                raise ConfigError(
                    "--resume", "goes on with DIR's own search: no file, --out or --set"
                )
            meta = read_search_meta(args.resume)
            search = stored_search(meta, args.resume / marker("search"))
        elif args.search is None:
            raise ConfigError("search", "a search TOML file is required (or --resume DIR)")
        else:
            search = load_search(args.search, args.overrides)
        for flag, value in (("--trials", args.trials), ("--wall-s", args.wall_s)):
            if value is not None and not value > 0:
                raise ConfigError(flag, f"must be above 0, got {value}")
        self.search = with_budget(search, args.trials, args.wall_s)

    def out(self) -> Path:
        return self.args.resume or self.args.out or Path("results") / self.search.name

    def display(self) -> Any:
        from harness.presentation.progress import SearchLine

        return SearchLine(self.search.name)

    def work(self, out: Path, progress: Any) -> None:
        from harness.running.search_runner import run_search  # optuna, ray: only when searching

        args = self.args
        on_ray = not args.in_process
        run_search(self.search, out, progress, args.address, on_ray, args.resume is not None)

    def kept(self, out: Path) -> str:
        from harness.results.search_folder import search_state

        return search_state(out)

    def show(self, out: Path) -> None:
        from harness.presentation.search_report import print_search
        from harness.results.search_folder import load_search_results

        self.meta, self.trials = load_search_results(out)
        print_search(self.meta, self.trials, self.console)

    def verdict(self, then: int) -> int:
        from harness.results.search_folder import trial_failures

        failures = trial_failures(self.meta, self.trials)
        return failed_code("trials", failures, len(self.trials), self.args.accept_failed)


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("search", nargs="?", help="search TOML file (a [search] table; see configs/)")
    p.add_argument("--trials", type=int, metavar="N", help="overrides the search's trials")
    p.add_argument(
        "--wall-s", type=float, metavar="S", help="overrides the search's wall_s (seconds)"
    )
    p.add_argument(
        "--in-process", action="store_true", help="run the trials in this process, without Ray"
    )


COMMAND = Command(
    "search",
    "search a space of scenarios for where a design does worst, on Ray",
    Search.act,
    _arguments,
    ("--out", "--resume", "--address", "--set", "--accept-failed", "--quiet", "--no-report"),
    {"what": "search", "units": "trials", "out": "new or empty (default results/<name>/)"},
    "harness search configs/searches/optimistic.toml --trials 100",
    "not run: 100 trials on Ray, an hour",
)
