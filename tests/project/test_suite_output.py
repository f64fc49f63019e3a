"""What `python -m pytest` tells its reader, with the project's own options (pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys

from tests.support.doc_blocks import ROOT

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
