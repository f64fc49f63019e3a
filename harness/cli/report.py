"""`harness report`: the tables of a run, sweep or search folder, and its HTML report; of a
folder of them, a list."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from harness.cli.command import Command
from harness.cli.run import print_run
from harness.cli.verb import write_report
from harness.config import stored_config
from harness.results.failures import ResultsError
from harness.results.folder_policy import held_under, holder, marker


def _act(args: argparse.Namespace, console: Console) -> int:
    try:
        kind = _results_kind(args.dir)
        if kind is None:  # a parent folder: the runs it holds
            from harness.presentation.folder_list import print_folders

            found = held_under(args.dir)
            if not found:
                raise ResultsError(
                    f"{args.dir} is not a results folder (no {marker('run')}) and holds none"
                )
            print_folders(args.dir, found, console)
            return 0
    except OSError as e:  # a name too long, a folder that cannot be read
        raise ResultsError(f"{e.filename or args.dir}: {e.strerror or e}") from None
    # Pandas, Arrow and matplotlib only once the folder is known to hold results.
    from harness.presentation.search_report import print_search
    from harness.presentation.terminal import overload_warning, print_sweep
    from harness.results.search_folder import load_search_results
    from harness.results.sweep_folder import load_sweep_results

    try:
        if kind == "search":
            meta, trials = load_search_results(args.dir)
            print_search(meta, trials, console)
        elif kind == "sweep":
            meta, summary = load_sweep_results(args.dir)
            stored_config(meta["identity"].get("base"), Path(args.dir) / marker("sweep"))
            print_sweep(meta, summary, console)
        else:
            frames = print_run(args.dir, console)[1]
            write_report(args.dir, console)
            overload_warning(frames, console)
            return 0
        write_report(args.dir, console)
    except OSError as e:  # a name too long, a folder that cannot be read
        raise ResultsError(f"{e.filename or args.dir}: {e.strerror or e}") from None
    return 0


def _results_kind(folder: Path) -> str | None:
    """What `folder` holds ("run", "sweep", "search"), None for a folder of other things, or
    ResultsError for what is no folder: told from the files alone, no data library loaded."""
    if not folder.is_dir():
        raise ResultsError(f"{folder} is not a folder")
    return holder(folder)


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "dir",
        type=Path,
        help="a run's, sweep's or search's output folder; a folder of them: lists them",
    )


COMMAND = Command(
    "report",
    "print the tables of a run or sweep and write its HTML report",
    _act,
    _arguments,
    example="harness report results/reference",
    example_runs="not run: reads the sweep above",
)
