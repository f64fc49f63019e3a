"""The documentation is the user's reference: its generated pages match the code, its
runnable commands run, its config snippets parse, and the README stays a short front door."""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import pytest

import harness
from harness.config import load
from harness.config.trace_file import COLUMNS as TRACE_COLUMNS
from harness.config.traces.cache import CACHE_ENV
from harness.model.scheduling.placement.filters.memory_overcommit import MemoryOvercommit
from harness.model.scheduling.strategies import STRATEGIES
from harness.presentation.progress import PROGRESS_ENV
from harness.results.arrow_schemas import TABLES
from harness.results.column_docs import COLUMNS, COMMON
from tests.support.configs import SCENARIOS
from tests.support.doc_blocks import PAGES, ROOT, Block, blocks, difference
from tests.support.schedulers import SKELETON

DOCS = ROOT / "docs"
PATH_WORD = f"({harness.PATH})"
DEFAULT_PATH_WORD = "(compiled)"
"""How `harness --version` and a comparison name the path that ran: the pages show a default
install's, and the test may run pure Python."""
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


def test_the_plugins_reference_names_classes_by_their_public_paths():
    """Every axis is on the page with its base class as `harness.api` exports it; no class is
    named by the internal path it is defined in (which may move in any release)."""
    import harness.api

    page = _generator().plugins_page()
    bases = re.findall(r"Base class `([\w.]+)`", page)
    assert len(bases) == len(harness.api.AXES)
    assert all(b.startswith("harness.api.") for b in bases), bases
    assert not re.findall(r"`harness\.[\w.]+:\w+`", page)  # no "module:Class" of a built-in


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
    tests = readme.split("\n## Tests\n", 1)[1].split("\n## ", 1)[0]
    assert "(docs/performance.md)" in tests  # how long: measured there, never in the README
    for link in re.findall(r"\]\(((?:docs/)[^)#]+)", readme):
        assert (ROOT / link).exists(), link


TOML_PAGES = [p for p in PAGES if "```toml" in p.read_text()]


@pytest.mark.parametrize("page", TOML_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_toml_snippets_parse(page):
    """Every TOML fence of the page is read (none the pattern misses) and parses."""
    text = page.read_text()
    snippets = re.findall(r"```toml\n(.*?)\n```", text, re.S)
    assert len(snippets) == text.count("```toml") > 0
    for snippet in snippets:
        tomllib.loads(snippet)


def test_every_command_block_runs_or_says_why_not():
    """A reader follows a page top to bottom: each command block of every page is run by
    `test_a_page_runs_top_to_bottom` (`<!-- runnable -->`) or says why it cannot run here
    (`<!-- not run: REASON -->`), and an output block marked `<!-- prints -->` follows a block
    that runs, whose output it is (or names the test that compares it)."""
    unmarked, unexplained, orphans = [], [], []
    for page in PAGES:
        found = blocks(page)
        for before, block in zip([None, *found], found, strict=False):
            if block.command and block.marker not in ("runnable", "not run"):
                unmarked.append(str(block))
            if block.marker == "not run" and len(block.reason.split()) < 2:
                unexplained.append(str(block))
            compared_elsewhere = "why" in block.options  # `prints: <the test that does>`
            follows_a_run = before is not None and before.runnable
            if block.marker == "prints" and not (follows_a_run or compared_elsewhere):
                orphans.append(str(block))
    assert not unmarked, f"command blocks neither runnable nor `not run: REASON`: {unmarked}"
    assert not unexplained, f"`not run` blocks that do not say why: {unexplained}"
    assert not orphans, f"`prints` blocks not right after a runnable block: {orphans}"


SEEDS = "HARNESS_DOCS_SEEDS"
"""The seeds a block's `harness run` commands run, where its marker says (`seeds=N`)."""


def _shims(folder: Path) -> dict[str, str]:
    """`harness` and `python` on the PATH as this interpreter with this checkout importable,
    `harness run` with `--seeds $HARNESS_DOCS_SEEDS` where a block asks for fewer seeds, and
    the 80-column terminal the shown outputs were printed in."""
    folder.mkdir()
    path = f'export PYTHONPATH="${{PYTHONPATH:+$PYTHONPATH:}}{ROOT}"\n'
    (folder / "harness").write_text(
        f"#!/bin/sh\n{path}"
        f'if [ "$1" = run ] && [ -n "${SEEDS}" ]; then\n'
        f'  exec {sys.executable} -m harness "$@" --seeds "${SEEDS}"\nfi\n'
        f'exec {sys.executable} -m harness "$@"\n'
    )
    (folder / "python").write_text(f'#!/bin/sh\n{path}exec {sys.executable} "$@"\n')
    for shim in folder.iterdir():
        shim.chmod(0o755)
    path = f"{folder}{os.pathsep}{os.environ['PATH']}"
    # Unbuffered, as in a terminal: what a command prints on stdout and stderr keeps its order;
    # no progress line, whose coming depends on the machine's pace.
    quiet = {PROGRESS_ENV: "86400"}
    return {**os.environ, "PATH": path, "COLUMNS": "80", "PYTHONUNBUFFERED": "1", **quiet}


def _generate():
    spec = importlib.util.spec_from_file_location("generate", DOCS / "generate.py")
    generate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generate)
    return generate


def _words(command: str) -> tuple[str, ...] | None:
    """A command as the words it is run with, a line continued by a backslash joined to the
    next as bash joins it; None where it is not a plain command (quotes left open)."""
    try:
        return tuple(shlex.split(command.replace("\\\n", " ")))
    except ValueError:
        return None


_GENERATOR = _generate()
SHOWN = {
    _words(m["command"]): m["command"]
    for page in _GENERATOR.pages()
    for m in _GENERATOR.OUTPUT.finditer(page.read_text())
    if not m["long"]
}
"""The commands whose output docs/generate.py checks (`test_generated_figures_are_current`),
by their words."""
_ran: dict[str, tuple[str, Path]] = {}
"""Each command of `SHOWN` a page ran as a block of its own, as written: what it printed and a
copy of its results folder. The generator's check reads them rather than run the same
command a second time in the same worker."""
SHARES_RUNS = pytest.mark.xdist_group("docs-shown-runs")
"""One worker's (`-n`, `--dist loadgroup`): the pages that run a command of `SHOWN`, then the
generator's check, which reads their runs (`_ran`)."""


def _shown(block: Block) -> str | None:
    """The command of `SHOWN` that `block` is, run as written (no `seeds=`), or None."""
    if block.lang not in ("bash", "sh") or "seeds" in block.options:
        return None
    return SHOWN.get(_words(block.code))


RUNNABLE_PAGES = [
    pytest.param(
        p,
        marks=[SHARES_RUNS] if any(b.runnable and _shown(b) for b in blocks(p)) else [],
        id=str(p.relative_to(ROOT)),
    )
    for p in PAGES
    if any(b.runnable for b in blocks(p))
]


@pytest.mark.slow  # every page's runs, as written
@pytest.mark.parametrize("page", RUNNABLE_PAGES)
def test_a_page_runs_top_to_bottom(page, tmp_path):
    """The page's runnable blocks, in order, in one folder holding the shipped configs and
    examples, as a reader runs them: bash blocks as they are written, python blocks as
    scripts, a block marked `file=NAME` saved under that name for the blocks after it. Each
    ends with its exit code (`exit=N`, else 0), and a `prints` block after it is what it
    printed."""
    work = tmp_path / "work"
    work.mkdir()
    for shipped in ("configs", "examples"):
        (work / shipped).symlink_to(ROOT / shipped)
    env = _shims(tmp_path / "bin")
    python = str(tmp_path / "bin" / "python")
    found = blocks(page)
    for block, after in zip(found, [*found[1:], None], strict=True):
        if not block.runnable:
            continue
        if "file" in block.options:
            (work / block.options["file"]).write_text(block.code + "\n")
            continue
        shell = block.lang in ("bash", "sh")
        command = ["bash", "-e", "-c", block.code] if shell else [python, "-c", block.code]
        seeds = {SEEDS: block.options["seeds"]} if "seeds" in block.options else {}
        done = subprocess.run(
            command,
            cwd=work,
            env={**env, **seeds},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=300,
        )
        printed = done.stdout.replace(PATH_WORD, DEFAULT_PATH_WORD)
        assert done.returncode == int(block.options.get("exit", 0)), f"{block}\n{printed}"
        shown = _shown(block)
        if shown is not None and "--out" in (words := shlex.split(shown)):
            folder = work / words[words.index("--out") + 1]
            kept = tmp_path / "shown" / str(len(_ran))
            if folder.is_dir():  # a copy: a later block of the page may write into the folder
                shutil.copytree(folder, kept)
            _ran[shown] = (done.stdout, kept)
        if after is not None and after.marker == "prints":
            assert not difference(after.code, printed), (
                f"{after}: {difference(after.code, printed)}\n{printed}"
            )


@pytest.mark.parametrize(
    ("shown", "printed", "differs"),
    [
        ("a\n...\nc 12 d\n...", "a\nx\ny\nc 12 d\nz", False),  # `...` lines: any lines
        ("a\nc ... d", "a\nc 12 d", False),  # `...` in a line: any text
        ("a\nb", "a\nc", True),  # a shown line not printed
        ("a\nb", "b\na", True),  # not in this order
        ("a", "a\nb", True),  # a printed line the page does not show, nor elides
        ("(pure Python) on both", "(compiled) on both", True),
    ],
)
def test_a_shown_output_is_held_to_what_the_command_printed(shown, printed, differs):
    assert bool(difference(shown, printed)) == differs


GUIDE = DOCS / "guides" / "external-scheduler.md"


def test_the_guides_skeleton_scheduler_is_the_one_the_tests_run():
    """The guide shows examples/python-scheduler/skeleton.py whole, which
    tests/external/test_external_examples.py runs (and the page's own run runs the copy)."""
    shown = next(b for b in blocks(GUIDE) if b.options.get("file") == "skeleton.py")
    assert shown.code + "\n" == SKELETON.read_text()


def test_the_guide_names_every_config_that_turns_a_rule_on():
    """The guide's table of which shipped configs make the memory, labels and CPU family
    rules bite is what the configs say: a config whose memory rule is on (M > 0), or with
    creates that need labels or a CPU family, has a row, and only such a config."""
    section = GUIDE.read_text().split("Which shipped configs make which rule bite", 1)[1]
    rows = {}
    for line in section.split("\n\n", 2)[1].splitlines()[2:]:
        config, memory, labels, family = (c.strip() for c in line.strip("|").split("|"))
        rows[config.strip("`")] = (memory, labels != "none", family != "none")
    found = {}
    for path in SCENARIOS:
        config = load(path)
        ratio = config.placement.settings_of(MemoryOvercommit).ratio
        w = config.workload
        shapes = w.templates or [w]
        asks = (any(s.labels for s in shapes), any(s.cpu_family for s in shapes))
        if ratio > 0 or any(asks):
            found[path.name] = (f"on, M = {ratio:g}" if ratio > 0 else "off", *asks)
    assert rows == found


@pytest.mark.slow  # a process per output block and the main job's 60 seeds
@SHARES_RUNS
def test_generated_figures_are_current(monkeypatch, capsys):
    """Every figure docs/generate.py makes is the one committed: a change to what a run draws
    fails here until `python docs/generate.py` is run and its files committed.

    `generate.py --check`, with the runs of the commands a page ran as written handed to it
    (`_ran`): the same command, printing as the generator's run of it prints, kept as the
    generator keeps its runs (`Runs`); it runs the others itself."""
    generate = _generate()
    for command, (printed, folder) in _ran.items():
        kept = "".join(line.rstrip() + "\n" for line in printed.splitlines())  # as `Runs._run`
        generate.runs().done[command] = (kept, folder)
    monkeypatch.setattr(sys, "argv", [str(DOCS / "generate.py"), "--check"])
    assert generate.main() == 0, capsys.readouterr().err


def test_an_output_block_that_differs_from_its_command_is_rewritten(tmp_path):
    """The generator's own check: a block showing what the command no longer prints is
    replaced by what it prints (here `harness plugins`, fast), and then left alone."""
    generate = _generate()
    page = tmp_path / "page.md"
    page.write_text("Text.\n\n<!-- output: harness plugins -->\n```\nKIND  NAME  FROM\n```\n")
    current = generate.with_outputs(page)
    assert current != page.read_bytes() and b"best_of_k" in current
    page.write_bytes(current)
    assert generate.with_outputs(page) == current


def test_every_run_a_long_figure_draws_is_a_long_block_shown_on_a_page():
    """A long figure is drawn from the results of an output block's own run, so each command
    it draws from is marked long on a page: a figure drawn from a run no page shows would run
    the hour again, and a page whose command went stale (a strategy added to the registry
    changes the hour's `--compare`) fails here until the page shows the new command."""
    generate = _generate()
    shown = {
        m["command"]
        for page in generate.pages()
        for m in generate.OUTPUT.finditer(page.read_text())
        if m["long"]
    }
    drawn = {command for lines in generate.LONG_FIGURES.values() for command, _ in lines}
    assert drawn and drawn <= shown, sorted(drawn - shown)
    assert f"--compare {','.join(STRATEGIES)} " in generate.HOUR  # every strategy shipped


def test_the_herd_chart_draws_on_the_run_of_an_output_block():
    """The herd chart is drawn from the results of an output block's run (`HERD_RUN`, getting
    started's), so a generation runs the main job once for both: a page whose command moved
    fails here, where the chart would quietly run the main job a second time."""
    generate = _generate()
    shown = {
        m["command"]
        for page in generate.pages()
        for m in generate.OUTPUT.finditer(page.read_text())
    }
    assert generate.HERD_RUN in shown


def test_an_output_block_prints_no_import_whether_or_not_the_cache_holds_its_trace(
    tmp_path, monkeypatch
):
    """A command replaying a trace of another format is shown as it prints on a machine whose
    trace cache holds the import: the generator imports first, so a fresh machine (CI, with
    an empty cache) prints the same, and no line names a cache path or key of its own."""
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    trace = tmp_path / "slice"
    trace.mkdir()
    (trace / "sample_tasks.csv").write_text("0,j_1,M1,60,50,0.3,2\n2,j_2,M1,10,200,1.0,1\n")
    (trace / "sample_instances.csv").write_text(
        "0,j_1,M1,ins_1,52,74,0.1\n0,j_1,M1,ins_2,3,0,0.1\n2,j_2,M1,ins_3,7,100,0.9\n"
    )
    config = tmp_path / "slice.toml"
    config.write_text(
        '[run]\nduration_s = 5\n[cluster]\nnodes = 4\n[workload]\narrival = "trace"\n'
        f'trace_format = "alibaba-2018"\ntrace = "{trace}"\n'
    )
    command = f"harness run {config} --seeds 1 --quiet --no-report --out results/slice"
    generate = _generate()
    # the results in the system's temporary folder, as the generator's: a short path, which
    # the 80 columns do not wrap before it is named results/slice
    with tempfile.TemporaryDirectory() as first, tempfile.TemporaryDirectory() as second:
        fresh, folder = generate.Runs(Path(first)).run(command)
        held, _ = generate.Runs(Path(second)).run(command)
        assert (folder / "summary.parquet").is_file()  # the run's results, for a figure
    assert "import" not in fresh and "results: results/slice" in fresh, fresh
    assert held == fresh


def test_the_generator_makes_only_the_files_named():
    """`generate.py --long PAGE FIGURE`: the files named, from the project root or as absolute
    paths, and no other (the searches' long page is not rerun); a long figure named without
    --long, or a file it does not make, is refused, saying which."""
    generate = _generate()
    cv = "docs/assets/real-traffic-cv.png"
    page = "docs/explanation/real-traffic.md"
    makers = generate.generated(long=True)
    assert generate.named([cv, str(ROOT / page)], makers) == [cv, page]
    refused = f"{cv}: not a file docs/generate.py makes without --long"
    with pytest.raises(ValueError, match=f"^{re.escape(refused)}$"):
        generate.named([cv], generate.generated())
    refused = "docs/nope.md: not a file docs/generate.py makes"
    with pytest.raises(ValueError, match=f"^{re.escape(refused)}$"):
        generate.named(["docs/nope.md"], makers)
