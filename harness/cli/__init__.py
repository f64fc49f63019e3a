"""The `harness` command: `run`, `sweep`, `search`, `report`, `compare`, `plugins`, `keys` and
`trace` (`trace_import`), one module each (`harness.cli.parser.COMMANDS`); the commands that
run things share one skeleton (`harness.cli.verb`) and every flag more than one takes is declared once
(`harness.cli.flags`). Exit codes: 0 ok, 1 an engine failure, a broken invariant, a failed
sweep cell or search trial, 2 a user mistake or a damaged results folder (one line), 3 the
external scheduler misbehaved (one line; `harness.external`), 74 a results file could not be
written (disk full, permission lost: one line naming the file and the reason; what is on disk
is whole), 97 an external scheduler's placements against an eligibility rule, 98 a comparison
judged nothing (a run was overloaded), 99 a threshold failed (as k6) or a comparison with
`--fail-on` found a column worse than the baseline, 130 interrupted by SIGINT (Ctrl-C), 143 by
SIGTERM (128 + the signal, as a shell reports it); `harness.cli.exits.EXIT_CODES` says each. A
signal after the command has finished changes nothing."""

from harness.cli.entry import PIPED_WIDTH, main
from harness.cli.exits import (
    EXIT_CODES,
    NOT_JUDGED,
    THRESHOLD_FAILED,
    VIOLATIONS_COUNTED,
    WRITE_FAILED,
)
from harness.cli.parser import parse_args

__all__ = [
    "EXIT_CODES",
    "NOT_JUDGED",
    "PIPED_WIDTH",
    "THRESHOLD_FAILED",
    "VIOLATIONS_COUNTED",
    "WRITE_FAILED",
    "main",
    "parse_args",
]
