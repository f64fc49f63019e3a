"""What `harness` exits with, and the lines on stderr that say why: the exit codes (the
reference's table), a line made printable, and the codes of a finished command's verdicts
(thresholds, failed cells or trials)."""

from __future__ import annotations

import sys
from typing import Any

from harness import interrupts
from harness.external import EXIT_CODE as SCHEDULER_FAILED

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


def printable(text: str) -> str:
    """`text` on one line with nothing a terminal acts on: characters that do not print (a
    newline or an escape code in a file name, a lone surrogate from a byte that is not UTF-8)
    are written as Python escapes."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


def say(line: str) -> None:
    """A line on stderr, beside the errors (`harness: ...`): a notice about the command's
    state (a damaged part run again), or why it exits as it does."""
    print(f"harness: {printable(line)}", file=sys.stderr)


def stopped(error: BaseException, kept: str) -> int:
    """Says what a command a signal stopped left (on stderr with the errors: stdout holds
    results, which a stopped command has not printed); its exit code."""
    print(f"{interrupts.word(error)}: {printable(kept)}", file=sys.stderr)
    return interrupts.exit_code(error)


def threshold_code(records: list[dict[str, Any]]) -> int:
    """0 when every threshold check passed, else THRESHOLD_FAILED, saying so on stderr."""
    failed = sum(not r["passed"] for r in records)
    if not failed:
        return 0
    say(f"{failed} of {len(records)} threshold checks failed")
    return THRESHOLD_FAILED


def failed_code(what: str, failures: list[str], total: int, accept: bool) -> int:
    """0 when every one of `total` trials or cells finished; else says on stderr how many
    failed and the first one's error, and returns 1, unless `accept` (`--accept-failed`) and
    at least one finished. Nothing finished is always 1: an empty result is not a result."""
    if not failures and total:
        return 0
    first = f"; the first: {failures[0]}" if failures else ""
    if len(failures) == total:
        say(f"error: all {total} {what} failed{first}" if total else f"error: no {what} ran")
        return 1
    say(f"{len(failures)} of {total} {what} failed{first}")
    return 0 if accept else 1
