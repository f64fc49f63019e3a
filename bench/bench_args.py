"""What every script in bench/ declares alike: its description, and `--tiny`, the smallest run
of each of its parts, which tests/project/test_bench.py runs so that the commands of
docs/performance.md keep working as the code under them changes."""

from __future__ import annotations

import argparse

TINY = "to check the script works (tests/project/test_bench.py): its figures mean nothing"


def bench_parser(doc: str, tiny: str, *, whole_doc: bool = False) -> argparse.ArgumentParser:
    """A script's parser, described by the first line of its docstring (`whole_doc`: all of it,
    laid out as written), with `--tiny`; `tiny` says what the tiny mode of this script runs."""
    if whole_doc:
        return _with_tiny(
            argparse.ArgumentParser(
                description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
            ),
            tiny,
        )
    return _with_tiny(argparse.ArgumentParser(description=doc.splitlines()[0]), tiny)


def _with_tiny(parser: argparse.ArgumentParser, tiny: str) -> argparse.ArgumentParser:
    parser.add_argument("--tiny", action="store_true", help=f"{tiny}, {TINY}")
    return parser
