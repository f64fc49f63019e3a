"""The fenced blocks of the docs as a reader meets them, and what the docs test (tests/project/
test_docs.py) does with each: a command block is run in order or says why not, and an output
block marked `<!-- prints -->` is what the block before it prints.

The marker is an HTML comment on the line right above the fence, unseen on the site:

- `<!-- runnable -->` (options `exit=N`, the exit code it ends with; `file=NAME`, a block
  saved under that name for the blocks after it instead of run; `seeds=N`, its `harness run`
  commands run N seeds, with after a colon why: `<!-- runnable seeds=2: twenty take a
  minute -->`);
- `<!-- not run: REASON -->`, the reason it cannot run here (Ray, an install, hours of CPU);
- `<!-- prints -->` on an output block: what the runnable block before it prints, compared
  line by line, where `...` stands for any text (a whole line of it: any lines); after a
  block not run here, `<!-- prints: ... -->` names the test that compares it instead;
- `<!-- output: harness ... -->` (or `output (long):`) on an output block docs/generate.py
  writes.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).parents[2]
PAGES = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").rglob("*.md")),
    *sorted((ROOT / "examples").glob("*/README.md")),
]
"""Every page a reader follows: the README, the docs site, the examples' READMEs."""
COMMANDS = frozenset({"bash", "sh", "shell", "console", "python"})
"""The languages of a block a reader runs."""
FENCE = re.compile(
    r"(?:^<!-- (?P<marker>[^\n]*?) -->\n)?^```(?P<lang>[\w-]*)\n(?P<code>.*?)^```$", re.S | re.M
)
NOT_RUN = "not run:"
ANY = "..."
"""In a shown output, any text; a line of it alone, any lines."""


@dataclass
class Block:
    """One fenced block of a page, with its marker's word and options."""

    page: Path
    line: int
    lang: str
    code: str
    marker: str = ""
    options: dict[str, str] = field(default_factory=dict)

    @property
    def command(self) -> bool:
        return self.lang in COMMANDS

    @property
    def runnable(self) -> bool:
        return self.marker == "runnable"

    @property
    def reason(self) -> str:
        """Why a block marked `not run` is not: empty when it does not say."""
        return self.options.get("reason", "")

    def __str__(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """Every fenced block of `page`, in order."""
    text = page.read_text()
    found = []
    for m in FENCE.finditer(text):
        marker, options = "", {}
        said = (m["marker"] or "").strip()
        if said.startswith(NOT_RUN):
            marker, options = "not run", {"reason": said.removeprefix(NOT_RUN).strip()}
        elif said.startswith("output"):  # `output: COMMAND`, `output (long): COMMAND`
            marker, options = "output", {"command": said.partition(":")[2].strip()}
        elif said:
            head, _, why = said.partition(":")
            marker, *rest = head.split()
            options = dict(o.split("=", 1) for o in rest) | ({"why": why.strip()} if why else {})
        line = text.count("\n", 0, m.start("lang")) + 1
        found.append(Block(page, line, m["lang"], m["code"].removesuffix("\n"), marker, options))
    return found


def _line_matches(shown: str, printed: str) -> bool:
    parts = [re.escape(part) for part in shown.split(ANY)]
    return re.fullmatch(".*".join(parts), printed) is not None


def difference(shown: str, printed: str) -> str:
    """Where `printed` departs from `shown` (trailing spaces aside), `...` in `shown` standing
    for any text and a line of `...` alone for any lines; empty when it does not."""
    want = [line.rstrip() for line in shown.splitlines()]
    got = [line.rstrip() for line in printed.splitlines()]

    @functools.cache
    def match(i: int, j: int) -> bool:
        if i == len(want):
            return j == len(got)
        if want[i] == ANY:
            return any(match(i + 1, k) for k in range(j, len(got) + 1))
        return j < len(got) and _line_matches(want[i], got[j]) and match(i + 1, j + 1)

    if match(0, 0):
        return ""
    for i, line in enumerate(want):  # the first shown line found nowhere, for the message
        if line != ANY and not any(_line_matches(line, g) for g in got):
            return f"shown line {i + 1} is not printed: {line!r}"
    return "the shown lines are printed, but not in this order or not all of them"
