"""A run in real time that could not keep the model's time says so before any claim drawn from
its seeds, and marks what it drew from overloaded ones: the verdict leads the headline in the
terminal and the report, each sentence drawn from an overloaded seed says so first, and each
row of the run tables names its overloaded seeds. Made on a virtual run whose summary is given
the verdicts a Ray run would write (the presentation reads only those columns)."""

from __future__ import annotations

import contextlib
import html
import io
import math
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from harness.cli import main
from harness.results.summary_columns import FAITHFUL, OVERLOADED
from tests.support.configs import CONFIGS

VERDICTS = {
    # (strategy, seed): (verdict, figure, value, limit, fitting time scale)
    ("stale", 0): (OVERLOADED, "choice_lateness_ms", 13_837.0, 250.0, 12.0),
    ("stale", 1): (OVERLOADED, "report_lateness_ms", 8_879.0, 100.0, 18.0),
    ("optimistic", 0): (FAITHFUL, None, math.nan, math.nan, math.nan),
    ("optimistic", 1): (OVERLOADED, "rpc_excess_ms", 1_042.0, 100.0, 2.1),
}


def _as_if_on_ray(folder: Path, verdicts: dict) -> None:
    """The run's summary with the time-keeping columns a Ray run writes."""
    path = folder / "summary.parquet"
    table = pq.read_table(path)
    frame = table.to_pandas()
    keys = list(zip(frame["strategy"], frame["seed"], strict=True))
    columns = ("time_keeping", "overload_figure", "overload_value", "overload_limit")
    for i, column in enumerate((*columns, "fitting_time_scale")):
        frame[column] = [verdicts[k][i] for k in keys]
    frame["time_scale"], frame["host_load"], frame["driver_cpu"] = 0.2, 4.2, 0.05
    pq.write_table(pa.Table.from_pandas(frame, schema=table.schema, preserve_index=False), path)


@pytest.fixture
def herd(tmp_path: Path) -> Path:
    out = tmp_path / "herd"
    args = ["run", str(CONFIGS / "seed-herd.toml"), "--compare", "stale,optimistic"]
    args += ["--seeds", "2", "--set", "run.sample_interval_s=0", "--out", str(out)]
    with contextlib.redirect_stdout(io.StringIO()):
        assert main([*args, "--quiet", "--no-report"]) == 0
    return out


def _report(folder: Path) -> tuple[str, str]:
    """What `harness report` prints (whitespace folded) and the page it writes."""
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        assert main(["report", str(folder)]) == 0
    return " ".join(printed.getvalue().split()), (folder / "report.html").read_text()


def test_the_verdict_comes_before_every_claim_and_overloaded_ones_are_marked(herd):
    _as_if_on_ray(herd, VERDICTS)
    text, page = _report(herd)
    verdict = "time keeping: OVERLOADED in 3 of 4 seeds: report lateness p99"
    stale = "[OVERLOADED: stale in 2 of 2 seeds] stale: CV"
    optimistic = "[OVERLOADED: optimistic in 1 of 2, stale in 2 of 2 seeds] optimistic cuts CV"
    assert 0 <= text.index(verdict) < text.index(stale) < text.index(optimistic)
    # Each row of the table: the strategy, then its time keeping.
    assert re.search(r"│ stale\s+│ OVERLOADED 2 of 2\s+│", text)
    assert re.search(r"│ optimistic\s+│ OVERLOADED 1 of 2\s+│", text)
    assert re.search(r"stale: seed \d, CV [\d.]+ OVERLOADED", text)  # the median seed's panel

    story = page.index('<ul class="story">')
    said = page.index('<p class="bad"><strong>' + html.escape(verdict))
    assert said < story < page.index(html.escape(stale)) < page.index(html.escape(optimistic))
    assert page.count('<td class="bad">OVERLOADED 2 of 2</td>') == 1
    assert page.count('<td class="bad">OVERLOADED 1 of 2</td>') == 1


def test_a_faithful_run_says_so_first_and_marks_no_claim(herd):
    _as_if_on_ray(herd, dict.fromkeys(VERDICTS, VERDICTS["optimistic", 0]))
    text, page = _report(herd)
    verdict = "time keeping: faithful at time_scale 0.2 (every seed within its limits)"
    assert text.index(verdict) < text.index("stale: CV")
    marked = re.compile(r"\[OVERLOADED|OVERLOADED \d|time keeping: OVERLOADED")
    assert not marked.search(text) and not marked.search(page)
    assert re.search(r"│ stale\s+│ faithful\s+│", text)
    assert page.index(verdict) < page.index('<ul class="story">')
    assert page.count(f"<td>{FAITHFUL}</td>") == 2


def test_a_virtual_run_has_no_time_keeping_to_show(herd):
    text, page = _report(herd)
    assert "time keeping" not in text and "time keeping" not in page
