"""`harness report` as a user types it: on a folder of runs (`harness report results`) it lists
them, and a folder that holds none is one line, said before any data library loads."""

from __future__ import annotations

import os
import subprocess
import sys

from harness.cli import THRESHOLD_FAILED, main
from tests.support.configs import CONFIGS

HERD = str(CONFIGS / "seed-herd.toml")
DATA_LIBRARIES = ("pandas", "pyarrow", "numpy", "ray", "matplotlib")


def _probe(argv: list[str]) -> tuple[int, list[str], str, str]:
    """`harness` in a fresh interpreter: its exit code, the data libraries it loaded, and what
    it printed on stdout and stderr."""
    probe = (
        "import sys\nfrom harness.cli import main\n"
        f"code = main({argv!r})\n"
        f"print('PROBE', code, [m for m in {DATA_LIBRARIES!r} if m in sys.modules])"
    )
    env = {**os.environ, "COLUMNS": "200"}  # a row per line, whatever the test's terminal
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env)
    out, _, said = done.stdout.rpartition("PROBE ")
    code, loaded = said.split(" ", 1)
    return int(code), eval(loaded), out, done.stderr


def test_a_folder_of_runs_is_listed_with_each_runs_verdict(tmp_path) -> None:
    results = tmp_path / "results"
    base = ["run", HERD, "--seeds", "1", "--quiet", "--no-report", "--out"]
    assert main([*base, str(results / "first")]) == 0
    gate = ["--threshold", "cv < 0.01", "--set", "run.name=gated"]
    assert main([*base, str(results / "second"), *gate]) == THRESHOLD_FAILED
    (results / "notes").mkdir()  # not results: not listed

    code, loaded, out, err = _probe(["report", str(results)])
    assert (code, loaded, err) == (0, [], "")
    rows = [line for line in out.splitlines() if "│" in line]
    first, second = ([c.strip() for c in row.split("│")[1:-1]] for row in rows)
    assert first[:2] == ["first", "run"] and first[2].startswith("seed-herd-")
    assert first[3:] == ["seed-herd", first[4], "yes", "invariants hold"]
    assert second[:2] == ["second", "run"] and second[3] == "gated"
    assert second[5:] == ["yes", "1 of 1 threshold failed"]
    assert f"harness report {results / 'FOLDER'}" in out


def test_a_folder_that_holds_no_results_is_one_line_before_any_data_library(tmp_path) -> None:
    """As fast as `harness run` says a mistake: the folder is looked at before pandas,
    Arrow or matplotlib load."""
    (tmp_path / "notes").mkdir()
    for folder, said in (
        (tmp_path, "is not a results folder (no run.json) and holds none"),
        (tmp_path / "missing", "is not a folder"),
    ):
        code, loaded, out, err = _probe(["report", str(folder)])
        assert (code, loaded, out) == (2, [], "")
        assert err == f"harness: error: {folder} {said}\n"
