"""The documentation is the user's reference: its generated pages match the code, its
runnable commands run, its config snippets parse, and the README stays a short front door."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.config.trace_file import COLUMNS as TRACE_COLUMNS
from harness.results.arrow_schemas import TABLES
from harness.results.column_docs import COLUMNS, COMMON

ROOT = Path(__file__).parents[2]
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.rglob("*.md"))
RUNNABLE = re.compile(
    r"<!-- runnable(?P<options>[^>]*)-->\n```(?P<lang>\w+)\n(?P<code>.*?)\n```", re.S
)
MAIN_JOB = (
    "python3.11 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/harness run "
    "configs/seed-herd.toml --compare stale,in_progress,optimistic"
)


def _generator():
    spec = importlib.util.spec_from_file_location("gen_reference", DOCS / "gen_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_reference_pages_are_current():
    stale = _generator().stale_pages()
    assert not stale, f"run python docs/gen_reference.py: {stale} differ from the code"


@pytest.mark.parametrize("table", list(TABLES))
def test_every_result_column_has_a_unit_and_a_meaning(table):
    documented = {**COMMON, **COLUMNS[table]}
    assert set(documented) == set(TABLES[table].names)
    assert all(unit and meaning for unit, meaning in documented.values())


def test_every_trace_column_is_documented():
    guide = (DOCS / "guides" / "workloads.md").read_text()
    section = guide.split("## Trace replay", 1)[1]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    for column in TRACE_COLUMNS:
        assert any(f"`{column}`" in row.split("|")[1] for row in rows), column


def test_readme_is_a_front_door():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) < 250
    assert MAIN_JOB in readme
    assert 'python -m pytest -m "not slow"' in readme
    assert re.search(r"full suite takes (about )?\d+( to \d+)? minutes", readme)  # how long
    for link in re.findall(r"\]\(((?:docs/)[^)#]+)", readme):
        assert (ROOT / link).exists(), link


TOML_PAGES = [p for p in [ROOT / "README.md", *PAGES] if "```toml" in p.read_text()]


@pytest.mark.parametrize("page", TOML_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_toml_snippets_parse(page):
    """Every TOML fence of the page is read (none the pattern misses) and parses."""
    text = page.read_text()
    snippets = re.findall(r"```toml\n(.*?)\n```", text, re.S)
    assert len(snippets) == text.count("```toml") > 0
    for snippet in snippets:
        tomllib.loads(snippet)


@dataclass
class Block:
    lang: str
    code: str
    exit: int
    file: str | None


def _blocks(page: Path) -> list[Block]:
    blocks = []
    for m in RUNNABLE.finditer(page.read_text()):
        options = dict(o.split("=", 1) for o in m["options"].split())
        blocks.append(Block(m["lang"], m["code"], int(options.get("exit", 0)), options.get("file")))
    return blocks


def _shims(folder: Path) -> dict[str, str]:
    """`harness` and `python` on the PATH as this interpreter with this checkout importable;
    `harness run` made small (2 seeds, no progress bar, no report) and `harness search` drawn
    no report (no block reads one) so the docs run fast."""
    folder.mkdir()
    path = f'export PYTHONPATH="${{PYTHONPATH:+$PYTHONPATH:}}{ROOT}"\n'
    (folder / "harness").write_text(
        f"#!/bin/sh\n{path}"
        f'if [ "$1" = run ]; then exec {sys.executable} -m harness "$@" --seeds 2 --quiet '
        f"--no-report; fi\n"
        f'if [ "$1" = search ]; then exec {sys.executable} -m harness "$@" --no-report; fi\n'
        f'exec {sys.executable} -m harness "$@"\n'
    )
    (folder / "python").write_text(f'#!/bin/sh\n{path}exec {sys.executable} "$@"\n')
    for shim in folder.iterdir():
        shim.chmod(0o755)
    return {**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}


RUNNABLE_PAGES = [p for p in PAGES if _blocks(p)]


@pytest.mark.slow  # about a minute over every page: a dozen runs of the harness
@pytest.mark.parametrize("page", RUNNABLE_PAGES, ids=lambda p: str(p.relative_to(DOCS)))
def test_runnable_blocks_run(page, tmp_path):
    """Each page's blocks marked `<!-- runnable -->`, in order, in one folder holding the
    shipped configs: bash blocks as they are written, python blocks as scripts, and a block
    marked `file=NAME` saved under that name for the blocks after it."""
    work = tmp_path / "work"
    work.mkdir()
    for shipped in ("configs", "examples"):
        (work / shipped).symlink_to(ROOT / shipped)
    env = _shims(tmp_path / "bin")
    python = str(tmp_path / "bin" / "python")
    for block in _blocks(page):
        if block.file:
            (work / block.file).write_text(block.code + "\n")
            continue
        shell = block.lang == "bash"
        command = ["bash", "-e", "-c", block.code] if shell else [python, "-c", block.code]
        done = subprocess.run(
            command, cwd=work, env=env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == block.exit, f"{block.code}\n{done.stdout}\n{done.stderr}"


@pytest.mark.slow  # a process per output block and the main job's 60 seeds
def test_generated_figures_are_current():
    """Every figure docs/generate.py makes is the one committed: a change to what a run draws
    fails here until `python docs/generate.py` is run and its files committed."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "docs" / "generate.py"), "--check"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr


def test_an_output_block_that_differs_from_its_command_is_rewritten(tmp_path):
    """The generator's own check: a block showing what the command no longer prints is
    replaced by what it prints (here `harness plugins`, fast), and then left alone."""
    spec = importlib.util.spec_from_file_location("generate", DOCS / "generate.py")
    generate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generate)
    page = tmp_path / "page.md"
    page.write_text("Text.\n\n<!-- output: harness plugins -->\n```\nKIND  NAME  FROM\n```\n")
    current = generate.with_outputs(page)
    assert current != page.read_bytes() and b"best_of_k" in current
    page.write_bytes(current)
    assert generate.with_outputs(page) == current
