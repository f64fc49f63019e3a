"""Declared once, named from there: the file that marks a results folder (`MARKS`) is spelled
nowhere else in the package, and a flag more than one command takes is declared once
(`harness.cli.flags.FLAGS`) and added, as declared, to every command that takes it."""

from __future__ import annotations

import argparse
import ast
from collections import defaultdict
from pathlib import Path

import harness
from harness.cli.parser import COMMANDS, parser
from harness.results.folder_policy import MARKS

PACKAGE = Path(harness.__file__).parent
POLICY = PACKAGE / "results" / "folder_policy.py"
FILES = {("compare", "--out"), ("trace", "--out")}
"""A command's own `--out` that names a file it writes, not the output folder the shared
`--out` names."""


def test_no_module_spells_a_results_folders_marker_but_the_folder_policy():
    """`folder / "run.json"` in a reader, a writer or a command: the markers come from
    `folder_policy.marker`, so what marks a folder is said in one place."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == POLICY:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value in MARKS:
                found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {node.value}")
    assert found == []


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    top = parser()
    (sub,) = [a for a in top._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def test_a_flag_more_than_one_command_takes_is_declared_once_and_added_as_declared():
    from harness.cli.flags import FLAGS

    taken: dict[str, list[tuple[str, argparse.Action]]] = defaultdict(list)
    for name, sub in _subparsers().items():
        for action in sub._actions:
            for option in action.option_strings:
                if option not in ("-h", "--help") and (name, option) not in FILES:
                    taken[option].append((name, action))
    shared = {option for option, uses in taken.items() if len(uses) > 1}
    assert shared and shared <= set(FLAGS), shared - set(FLAGS)
    for option in shared:
        flag = FLAGS[option]
        for name, action in taken[option]:
            assert option in COMMANDS[name].flags, (name, option)  # added from FLAGS
            assert action.help == flag.help.format(**COMMANDS[name].words), (name, option)
            for key, value in flag.options.items():
                if key != "action":
                    assert getattr(action, key) == value, (name, option, key)
