"""What `python -m pytest` tells its reader, with the project's own options (pyproject.toml)."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.support.doc_blocks import ROOT
from tests.support.suite_cpu import FILE_ENV, by_file

SKIPPING = """
import pytest

@pytest.mark.parametrize("n", range(3))
def test_needs_a_browser(n):
    pytest.skip("no Chromium installed")

def test_overloaded():
    pytest.skip("time keeping: OVERLOADED in 1 of 1 seeds")

def test_runs():
    pass
"""


def test_the_quiet_summary_names_every_skip_reason(tmp_path) -> None:
    """README's test command prints `-q` output: the skips still end it, each reason with its
    count, so a skip for an overloaded machine is told from one for a missing browser."""
    (tmp_path / "test_skipping.py").write_text(SKIPPING)
    options = ["-c", str(ROOT / "pyproject.toml"), "-n", "0", "-p", "no:cacheprovider"]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *options, "--rootdir", str(tmp_path), str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert any("SKIPPED [3]" in line and "no Chromium installed" in line for line in lines)
    assert any("SKIPPED [1]" in line and "OVERLOADED in 1 of 1 seeds" in line for line in lines)
    assert "1 passed, 4 skipped" in lines[-1]


def test_no_two_test_modules_share_a_name() -> None:
    """pytest imports each test file by its name (tests/ has no packages), so a second file of
    one name anywhere under tests/ stops the whole suite at collection; and a reader finds a
    test file by its module's name (docs/contributing.md, "A test")."""
    seen: dict[str, str] = {}
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        where = str(path.relative_to(ROOT))
        assert path.name not in seen, f"{where} and {seen[path.name]}"
        seen[path.name] = where


BUSY = """
import subprocess, sys

def test_busy():
    subprocess.run([sys.executable, "-c", "x = 0\\nfor i in range(10**7): x += i"], check=True)

def test_idle():
    pass
"""


def test_the_cpu_plugin_counts_a_tests_children(tmp_path) -> None:
    """tests/support/suite_cpu.py, which docs/performance.md's accounting of the suite runs:
    a test whose child process spins has that CPU counted, a second session's record replaces
    the first's, and the summary adds up per file; with workers (-n 2) it refuses to run."""
    (tmp_path / "test_busy.py").write_text(BUSY)
    record = tmp_path / "cpu.tsv"
    options = ["-c", str(ROOT / "pyproject.toml"), "-n", "0", "-p", "no:cacheprovider"]
    options += ["-p", "tests.support.suite_cpu", "--rootdir", str(tmp_path)]
    argv = [sys.executable, "-m", "pytest", *options, str(tmp_path)]
    env = {**os.environ, "PYTHONPATH": str(ROOT), FILE_ENV: str(record)}
    done = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    record.write_text(record.read_text() + "stale line of another session\n")
    assert subprocess.run(argv, capture_output=True, cwd=tmp_path, env=env).returncode == 0
    rows = {line.split("\t")[2]: line.split("\t")[:2] for line in record.read_text().splitlines()}
    busy_wall, busy_cpu = map(float, rows["test_busy.py::test_busy"])
    assert busy_cpu >= 0.5 * busy_wall > 0.1, rows  # the child's spinning, counted here
    assert float(rows["test_busy.py::test_idle"][1]) < busy_cpu
    [(name, cpu, _, tests)] = by_file(record)
    assert name == "test_busy.py" and tests == 2 and cpu >= busy_cpu
    workers = subprocess.run(
        [*argv, "-n", "2"], capture_output=True, text=True, cwd=tmp_path, env=env
    )
    assert workers.returncode != 0 and "needs one worker: pass -n 0" in workers.stderr
