"""docs/contributing.md names the files to touch to add an engine capability, an axis or a
command. Each is added here to a copy of the project by touching only the files its table lists
(and running the generator it names), and then works there: the capability is asked of the
engines, the axis's designs are listed, named by a config key and exported, the command runs
and its reference is current. A file the addition needed that the table does not list, or a
file the table lists that the addition did not need, fails the test: the page is then wrong."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "contributing.md"
COPIED = (
    "harness",
    "actors",
    "tests",
    "configs",
    "pyproject.toml",
    "docs/gen_reference.py",
    "docs/reference",
)
"""What of the project the copy holds: the packages, the tests with their settings, and the
generator with the pages it writes."""
LEFT_OUT = shutil.ignore_patterns(".pytest_cache", "*.so", "_compiled.json", "*.pyc.*")
"""Not copied: pytest's cache, and the compiled modules with their record (the copy runs pure
Python). The bytecode caches are: Python checks each against its source's size and time, so a
file the test edits is compiled again and the others need not be (`_changed` skips them). But
not a bytecode file being written (`NAME.pyc.NUMBER`, renamed to NAME.pyc once whole) by a
process beside this test: it may be gone before it is copied."""


def listed(section: str) -> list[list[str]]:
    """The paths each row of the section's table lists in its first column (backticked): a
    path with a `<name>` is a file the addition makes (`<name>` any folders and name), a folder
    (ending in /) where its new files go, any other an existing file it edits. A row that names
    no path (the code a change reaches, in prose) is left out."""
    text = PAGE.read_text(encoding="utf-8").split(f"\n## {section}\n", 1)[1].split("\n## ")[0]
    rows = [line.split("|")[1] for line in text.splitlines() if line.startswith("| `")]
    return [re.findall(r"`([^`]+)`", cell) for cell in rows]


def _stands_for(pattern: str, name: str, new: bool) -> bool:
    """Whether `pattern`, a path a row lists, stands for the file `name` (`new`: made by the
    addition, else edited)."""
    if pattern.endswith("/"):
        return new and name.startswith(pattern)
    if "<" not in pattern:
        return not new and name == pattern
    pieces = [re.escape(piece) for piece in re.split(r"<[^>]+>", pattern)]
    return new and re.fullmatch(r"[^/]+(?:/[^/]+)*".join(pieces), name) is not None


def assert_touched_as_listed(section: str, copy: Path) -> None:
    """Every file made or edited in `copy` is one a row of `section` lists, and every row is
    touched; but a row of folders (`tests/model/`), where the addition's own tests go."""
    rows = listed(section)
    changed = _changed(copy)
    assert rows and changed

    def row_of(name: str, new: bool) -> list[list[str]]:
        return [row for row in rows if any(_stands_for(p, name, new) for p in row)]

    unlisted = {name for name, new in changed.items() if not row_of(name, new)}
    assert not unlisted, f"{section}: touched, but not in docs/contributing.md: {unlisted}"
    touched = [row for name, new in changed.items() for row in row_of(name, new)]
    untouched = [
        row for row in rows if row not in touched and not all(p.endswith("/") for p in row)
    ]
    assert not untouched, f"{section}: listed in docs/contributing.md, not needed: {untouched}"


def _changed(copy: Path) -> dict[str, bool]:
    """The files of `copy` that are new (True) or differ from the project's, by path from its
    root."""
    found = {}
    for path in copy.rglob("*"):
        if path.is_dir() or {"__pycache__", ".pytest_cache"} & set(path.parts):
            continue
        name = path.relative_to(copy).as_posix()
        original = ROOT / name
        if not original.is_file():
            found[name] = True
        elif original.read_bytes() != path.read_bytes():
            found[name] = False
    return found


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """The project, copied (its packages run from there, as pure Python)."""
    to = tmp_path / "project"
    for name in COPIED:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, to / name, ignore=LEFT_OUT)
        else:
            (to / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, to / name)
    return to


def run_in(copy: Path, *args: str) -> subprocess.CompletedProcess:
    """`python ARGS` with the copy's packages imported, in the copy."""
    env = {**os.environ, "PYTHONPATH": str(copy), "HARNESS_PURE": "1"}
    return subprocess.run(
        [sys.executable, *args], cwd=copy, env=env, capture_output=True, text=True, timeout=300
    )


def ok(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    return done.stdout


def edit(copy: Path, name: str, anchor: str, added: str) -> None:
    """`added` written into the copy's file `name` right after `anchor` (once)."""
    path = copy / name
    text = path.read_text(encoding="utf-8")
    assert text.count(anchor) == 1, (name, anchor)
    path.write_text(text.replace(anchor, anchor + added), encoding="utf-8")


def write(copy: Path, name: str, text: str) -> None:
    (copy / name).parent.mkdir(parents=True, exist_ok=True)
    (copy / name).write_text(text, encoding="utf-8")


def regenerated(copy: Path) -> None:
    """The generated reference written, then found current."""
    ok(run_in(copy, "docs/gen_reference.py"))
    ok(run_in(copy, "docs/gen_reference.py", "--check"))


@pytest.mark.slow  # a copy of the project, and `harness` run in it
def test_an_engine_capability_is_added_by_the_files_the_page_lists(copy):
    edit(
        copy,
        "harness/config/engine_kind.py",
        "    real_time: ClassVar[bool] = False\n",
        '    warms_up: ClassVar[bool] = False\n    """Whether its first seed is slower."""\n',
    )
    edit(copy, "harness/engines/virtual.py", '    name = "virtual"\n', "    warms_up = True\n")
    regenerated(copy)
    asked = (
        "from harness.engines import ENGINES; import harness.api as api; "
        "assert ENGINES.resolve('virtual').warms_up and not ENGINES.resolve('ray').warms_up; "
        "assert api.EngineKind.warms_up is False"
    )
    ok(run_in(copy, "-c", asked))
    assert "`warms_up`" in (copy / "docs" / "reference" / "plugins.md").read_text()
    assert_touched_as_listed("An engine capability", copy)


FRUIT = '''"""What a fruit is: an axis added as docs/contributing.md says."""

from __future__ import annotations

from typing import ClassVar


class Fruit:
    """A fruit each create brings along (`workload.fruit`)."""

    name: ClassVar[str] = ""
    sweet: ClassVar[bool] = False
    """Whether it is sweet: a capability, asked instead of the name."""
'''
APPLE = '''"""The apple."""

from harness.model.workload.fruits.fruit import Fruit


class Apple(Fruit):
    """A sweet one."""

    name = "apple"
    sweet = True
'''
FRUITS = '''"""Fruits by name (`FRUITS`, the key `workload.fruit`)."""

from harness.model.registry import Registry
from harness.model.workload.fruits.apple import Apple
from harness.model.workload.fruits.fruit import Fruit

FRUITS = Registry("fruits", "fruit", Fruit, (Apple,))
"""Fruits by name."""
'''


@pytest.mark.slow  # a copy of the project, and `harness` run in it
def test_an_axis_is_added_by_the_files_the_page_lists(copy):
    axis = "harness/model/workload/fruits"
    write(copy, f"{axis}/fruit.py", FRUIT)
    write(copy, f"{axis}/apple.py", APPLE)
    write(copy, f"{axis}/__init__.py", FRUITS)
    imported = "from harness.model.workload.fruits import FRUITS\n"
    keys = "harness/model/workload/workload_keys.py"
    edit(
        copy, keys, "from harness.model.workload.distributions import DRAWS, LIFETIMES\n", imported
    )
    edit(
        copy,
        keys,
        "        choices=ARRIVALS,\n    )\n",
        '    fruit: str = key("apple", "The fruit each create brings.", choices=FRUITS)\n',
    )
    catalogue = "harness/model/catalogue.py"
    edit(copy, catalogue, "from harness.model.registry import Registry\n", imported)
    edit(copy, catalogue, "    FAULT_KINDS,\n", "    FRUITS,\n")
    edit(copy, "harness/api.py", "from __future__ import annotations\n\n", imported)
    edit(
        copy, "harness/api.py", imported, "from harness.model.workload.fruits.fruit import Fruit\n"
    )
    edit(copy, "harness/api.py", "__all__ = [\n", '    "FRUITS",\n    "Fruit",\n')
    page = "docs/reference/api.md"
    edit(
        copy,
        page,
        "| `Node` | a node's true state, as a fault kind's hooks are handed it |\n",
        "| `Fruit` | a fruit each create brings (`workload.fruit`) |\n",
    )
    edit(copy, page, "`FAULT_KINDS`, ", "`FRUITS`, ")
    edit(copy, "docs/gen_reference.py", "AXES_SAID = {\n", '    "fruits": ("Fruits", ""),\n')
    edit(
        copy,
        "tests/project/test_public_api.py",
        '    "ConfigError",\n',
        '    "FRUITS",\n    "Fruit",\n',
    )
    regenerated(copy)
    rows = [line.split() for line in ok(run_in(copy, "-m", "harness", "plugins")).splitlines()]
    assert ["fruit", "apple", "harness"] in rows
    named = (
        "from harness.config import ConfigError, from_dict\n"
        "assert from_dict({'workload': {'fruit': 'apple'}}).workload.fruit == 'apple'\n"
        "try:\n    from_dict({'workload': {'fruit': 'pear'}})\n"
        "except ConfigError as e:\n    assert str(e).startswith('workload.fruit: '), e\n"
        "else:\n    raise AssertionError('pear accepted')\n"
    )
    ok(run_in(copy, "-c", named))
    checks = "exported or every_axis or lists_every_registry"  # the tests that find every axis
    tests = ["tests/project/test_public_api.py", "tests/project/test_registries.py"]
    pytest_in_copy = [
        "-m",
        "pytest",
        "-q",
        "-n",
        "0",
        "-p",
        "no:randomly",
        "-p",
        "no:cacheprovider",
    ]
    ok(run_in(copy, *pytest_in_copy, "-k", checks, *tests))
    assert_touched_as_listed("An axis", copy)


HELLO = '''"""`harness hello`: a command added as docs/contributing.md says."""

from __future__ import annotations

import argparse

from rich.console import Console

from harness.cli.command import Command


def _act(args: argparse.Namespace, console: Console) -> int:
    console.print(f"hello, {args.who}" + ("" if args.quiet else "!"))
    return 0


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("who", help="whom to greet")


COMMAND = Command("hello", "say hello", _act, _arguments, ("--quiet",), example="harness hello you")
'''


@pytest.mark.slow  # a copy of the project, and `harness` run in it
def test_a_command_is_added_by_the_files_the_page_lists(copy):
    write(copy, "harness/cli/hello.py", HELLO)
    parser = "harness/cli/parser.py"
    edit(copy, parser, "from harness.cli import ", "hello, ")
    edit(copy, parser, "        keys.COMMAND,\n", "        hello.COMMAND,\n")
    regenerated(copy)
    assert ok(run_in(copy, "-m", "harness", "hello", "you")) == "hello, you!\n"
    assert ok(run_in(copy, "-m", "harness", "hello", "you", "--quiet")) == "hello, you\n"
    wrong = run_in(copy, "-m", "harness", "hello")
    assert wrong.returncode == 2 and wrong.stderr.startswith("harness: error: ")
    assert "hello" in (copy / "docs" / "reference" / "cli.md").read_text()
    assert_touched_as_listed("A command", copy)


def test_the_page_lists_the_files_of_each_addition_that_exist():
    """The three tables name existing files and folders (a placeholder aside), so a file
    renamed or moved fails here first."""
    for section in ("An engine capability", "An axis", "A command"):
        rows = listed(section)
        assert rows, section
        for pattern in (p for row in rows for p in row if "<" not in p):
            assert (ROOT / pattern).exists(), (section, pattern)
