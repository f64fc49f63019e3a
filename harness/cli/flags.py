"""The flags more than one command takes, each declared once (`FLAGS`) and added to every
command that names it (`Command.flags`), its help said of that command's work: `{what}` (run,
sweep, search), `{units}` (seeds, cells, trials), `{out}` (what its output folder may be, and
its default)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from harness.cli.exits import NOT_JUDGED, THRESHOLD_FAILED
from harness.config import ConfigError
from harness.results.thresholds import FORM


class Parser(argparse.ArgumentParser):
    """argparse whose mistakes (`--seeds abc`, `--engine gpu`) are a ConfigError like any other,
    so they end with the same single line and exit code 2 rather than the usage block.
    Subcommand parsers are of the same class (argparse makes them with the parent's)."""

    def error(self, message: str) -> NoReturn:
        raise ConfigError("", message)


@dataclass(frozen=True)
class Flag:
    """One flag: its name, what argparse is told of it, and its help (a template: see the
    module)."""

    name: str
    help: str
    options: dict[str, Any] = field(default_factory=dict)

    def add(self, parser: argparse.ArgumentParser, words: dict[str, str]) -> None:
        parser.add_argument(self.name, help=self.help.format(**words), **self.options)


FLAGS = {
    flag.name: flag
    for flag in (
        Flag(
            "--out",
            "output folder, {out}",
            {"type": Path},
        ),
        Flag(
            "--resume",
            "go on with the {what} stopped in DIR, by the config it keeps: its finished {units} "
            "are kept and the others run",
            {"type": Path, "metavar": "DIR"},
        ),
        Flag(
            "--address",
            "the Ray cluster to join, overriding ray.address (default RAY_ADDRESS, else a local "
            "Ray on this machine's cores)",
            {"metavar": "HOST:PORT"},
        ),
        Flag("--seeds", "overrides the {what}'s number of seeds", {"type": int, "metavar": "N"}),
        Flag(
            "--set",
            "override a config key, e.g. --set placement.k=2 (repeatable)",
            {"action": "append", "default": [], "metavar": "KEY=VALUE", "dest": "overrides"},
        ),
        Flag(
            "--threshold",
            f"fail (exit {THRESHOLD_FAILED}) unless {FORM}; repeatable",
            {"action": "append", "default": [], "metavar": "EXPR", "dest": "thresholds"},
        ),
        Flag(
            "--accept-failed",
            "exit 0 although some {units} failed, as long as one finished (they are said on "
            "stderr either way)",
            {"action": "store_true"},
        ),
        Flag(
            "--force",
            "run even what the budget refuses: more memory than this machine has available, or "
            "over a day of computing (docs: Configuration keys)",
            {"action": "store_true"},
        ),
        Flag(
            "--quiet",
            "no progress bar or line, nor the estimate said before a long run",
            {"action": "store_true"},
        ),
        Flag("--no-report", "do not write report.html", {"action": "store_true"}),
        # A comparison with a baseline (`harness compare`, `harness run --baseline`).
        Flag(
            "--columns",
            "summary columns to compare (default: every result column but wall time)",
            {"metavar": "C1,C2,..."},
        ),
        Flag(
            "--allow-diff",
            "a config key (or section) the two runs may differ in, e.g. placement.algorithm "
            "(repeatable; otherwise the configs must be equal)",
            {"action": "append", "default": [], "metavar": "KEY"},
        ),
        Flag(
            "--min-effect",
            "the noise band: a smaller change is ~ (2%% of the base, or an amount in the "
            "column's unit; default per kind of column; repeatable)",
            {"action": "append", "default": [], "metavar": "[COLUMN=]VALUE"},
        ),
        Flag(
            "--fail-on",
            f"exit {THRESHOLD_FAILED} if any column (or one of these) is worse",
            {"metavar": "worse|C1,C2,..."},
        ),
        Flag(
            "--faithful-only",
            "judge only the seeds that kept time (time_keeping faithful), leaving out those an "
            f"engine in real time ran overloaded (otherwise none is judged: exit {NOT_JUDGED})",
            {"action": "store_true"},
        ),
    )
}
"""Every flag more than one command takes, by name."""
COMPARING = ("--columns", "--allow-diff", "--min-effect", "--fail-on", "--faithful-only")
"""The flags of a comparison with a baseline."""
