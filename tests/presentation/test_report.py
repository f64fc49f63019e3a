"""`harness report` writes one self-contained HTML file whose pictures decode, for a run and
for a sweep; the run report and the sweep-heartbeat report are opened in a real headless
Chromium."""

from __future__ import annotations

import base64
import html
import io
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure
from matplotlib.image import imread

from harness.cli import main
from harness.model.scheduling.strategies import STRATEGIES
from harness.presentation import plots
from harness.presentation.html_report import _beats, write_report
from tests.support.configs import CONFIGS, scenario

# Its Ray tests check what the reports draw, not timing: they may share the machine.
pytestmark = pytest.mark.shares_machine

IMAGE = re.compile(r'<img alt="([^"]*)" src="data:image/png;base64,([^"]+)">')


def _images(page: str) -> dict[str, tuple[int, int]]:
    """alt text -> (height, width) of every embedded PNG, decoded for real."""
    return {
        alt: imread(io.BytesIO(base64.b64decode(data))).shape[:2]
        for alt, data in IMAGE.findall(page)
    }


def _self_contained(page: str) -> None:
    assert "<script" not in page
    assert not re.search(r'(src|href)="(?!data:)', page), "the report links something outside"


@pytest.fixture(scope="module")
def heartbeat_report(local_ray, tmp_path_factory) -> Path:
    """configs/sweep-heartbeat.toml with 2 seeds instead of 20, and its report."""
    out = tmp_path_factory.mktemp("sweep-heartbeat")
    sweep = str(CONFIGS / "sweep-heartbeat.toml")
    assert main(["sweep", sweep, "--seeds", "2", "--out", str(out), "--quiet"]) == 0
    return out / "report.html"  # written by the sweep itself


RUN_IMAGES = {
    "sandboxes per node for each strategy",
    "placement latency over time for each strategy",
    "throughput over time for each strategy",
    "CV of sandboxes per node over time for each strategy",
    "accounting error over time for each strategy",
}


@pytest.fixture(scope="module")
def run_report(tmp_path_factory) -> Path:
    """The README's first command, shortened: `harness run` writes its report itself."""
    out = tmp_path_factory.mktemp("seed-herd") / "run"
    args = ["--seeds", "2", "--set", "run.duration_s=8", "--out", str(out), "--quiet"]
    compare = ["--compare", "stale,in_progress,optimistic"]
    assert main(["run", str(CONFIGS / "seed-herd.toml"), *compare, *args]) == 0
    return out / "report.html"


def test_run_writes_a_report_that_draws_every_strategy(run_report, capsys, monkeypatch):
    page = run_report.read_text()
    _self_contained(page)
    images = _images(page)
    assert set(images) == RUN_IMAGES
    assert all(h > 100 and w > 100 for h, w in images.values())
    assert "<td>stale</td>" in page and "<td>optimistic</td>" in page  # the table over seeds
    # stale and in_progress place every create alike here: drawn once, named as identical.
    legends = _legends(run_report, monkeypatch)
    assert "stale = in_progress (identical)" in legends  # CV and accounting error
    assert "stale = in_progress = optimistic (identical)" in legends  # latency, throughput
    assert "Mean over 2 seeds with its 95% bootstrap band" in page
    assert main(["report", str(run_report.parent)]) == 0
    assert f"report: {run_report}" in capsys.readouterr().out


def _legends(report: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The labels of every legend the report's figures are drawn with, from drawing the
    report again and keeping them (the PNGs hold pixels, not text)."""
    drawn: list[str] = []
    real = Figure.legend

    def keep(self: Figure, *args: Any, **kwargs: Any) -> Any:
        legend = real(self, *args, **kwargs)
        drawn.extend(" ".join(t.get_text().split()) for t in legend.get_texts())  # unwrapped
        return legend

    monkeypatch.setattr(Figure, "legend", keep)
    write_report(report.parent)
    return drawn


def test_one_seed_promises_no_band_and_no_report_flag_writes_none(tmp_path, capsys):
    one, none = tmp_path / "one", tmp_path / "none"
    args = [str(CONFIGS / "seed-herd.toml"), "--seeds", "1", "--set", "run.duration_s=5"]
    assert main(["run", *args, "--out", str(one), "--quiet"]) == 0
    page = (one / "report.html").read_text()
    assert "One seed, so no band" in page and "95%" not in page
    assert main(["run", *args, "--out", str(none), "--quiet", "--no-report"]) == 0
    assert "report:" not in capsys.readouterr().out.split("results:")[-1]
    assert not (none / "report.html").exists()


def test_a_run_that_places_nothing_still_gets_its_report(tmp_path):
    """Every create fails (an rpc_error on all of them): the latency chart has no point, and
    the report is written all the same (it raised before)."""
    config = tmp_path / "c.toml"
    config.write_text('[run]\nduration_s = 2\n[[faults]]\nkind = "rpc_error"\n')
    out = tmp_path / "out"
    assert main(["run", str(config), "--seeds", "1", "--out", str(out), "--quiet"]) == 0
    assert "placement latency" in (out / "report.html").read_text()


@pytest.mark.ray
def test_sweep_report_has_the_curve_against_the_swept_key(heartbeat_report):
    page = heartbeat_report.read_text()
    _self_contained(page)
    images = _images(page)
    assert images.keys() == RUN_IMAGES | {"CV against heartbeat.interval_s for each strategy"}
    assert "heartbeat.interval_s = 20 (the base config" in page
    meta = json.loads((heartbeat_report.parent / "sweep.json").read_text())
    assert meta["completed"]
    assert len(meta["cells"]) == 7 * len(STRATEGIES)


@pytest.mark.ray
def test_two_swept_keys_give_heat_maps(local_ray, tmp_path):
    path = tmp_path / "two.toml"
    path.write_text(
        f'[sweep]\nbase = "{CONFIGS / "seed-herd.toml"}"\nseeds = 2\n'
        '[set]\n"run.duration_s" = 5.0\n'
        '[grid]\n"placement.strategy" = ["stale", "optimistic"]\n'
        '"heartbeat.interval_s" = [1, 20]\n"cluster.nodes" = [5, 10]\n'
    )
    out = tmp_path / "out"
    assert main(["sweep", str(path), "--out", str(out), "--quiet"]) == 0
    images = _images((out / "report.html").read_text())
    assert "heat maps of CV mean per strategy" in images


def _browser() -> str | None:
    return next(
        (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p),
        None,
    )


CHECK = """<script>
const errors = [];
window.addEventListener("error", (e) => errors.push(String(e.message || e.target.outerHTML)), true);
window.addEventListener("load", () => {
  const out = document.createElement("pre");
  out.id = "page-check";
  out.textContent = JSON.stringify({errors, images: [...document.images].map(
    (img) => [img.alt, img.complete, img.naturalWidth, img.naturalHeight]),
    width: document.documentElement.scrollWidth, window: window.innerWidth});
  document.body.appendChild(out);
});
</script>"""


@pytest.mark.skipif(_browser() is None, reason="no Chromium installed (apt-get install chromium)")
@pytest.mark.slow  # a browser started for each
@pytest.mark.parametrize(
    "which", ["run_report", pytest.param("heartbeat_report", marks=pytest.mark.ray)]
)
def test_reports_open_in_chromium(which, request, tmp_path):
    """The page loads without errors, the browser decodes every image (the latency and
    throughput charts among them) at its full size, and nothing sticks out to the right of
    a 1280 px window. The checker script goes into a copy: the report itself has no script."""
    report: Path = request.getfixturevalue(which)
    page = report.read_text()
    checked = report.parent / "checked.html"
    checked.write_text(page.replace("<body>", "<body>" + CHECK, 1))
    result = subprocess.run(
        [
            _browser(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--window-size=1280,1000",
            "--virtual-time-budget=5000",
            "--dump-dom",
            checked.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    found = re.search(r'<pre id="page-check">(.*?)</pre>', result.stdout, re.S)
    assert found, "the page never finished loading"
    check = json.loads(html.unescape(found.group(1)))
    assert check["errors"] == []
    assert check["width"] <= check["window"], "the page is wider than the window"
    expected = _images(page)
    assert len(check["images"]) == len(expected) >= 5
    assert {alt for alt, *_ in check["images"]} >= RUN_IMAGES
    for alt, complete, width, height in check["images"]:
        assert complete
        assert (height, width) == expected[alt]


def test_beats_drawn_are_the_heartbeat_plan_the_sync_at_0_without_delay() -> None:
    aligned = scenario(heartbeat={"interval_s": 10.0, "delay_ms": 250.0}, run={"duration_s": 25})
    assert _beats(aligned)[0] == [0.0, 10.25, 20.25]
    staggered = scenario(heartbeat={"phase": "staggered"})
    assert _beats(staggered)[0] == []


def test_identical_series_are_grouped_and_a_dwarfing_one_turns_the_axis_logarithmic():
    t = [0.0, 1.0, 2.0]
    frame = pd.DataFrame(
        {
            "strategy": ["stale"] * 3 + ["in_progress"] * 3 + ["optimistic"] * 3,
            "t": t * 3,
            "cv_mean": [0.9, 0.95, 0.96, 0.9, 0.95, 0.96, 0.9, 0.05, 0.02],
        }
    )
    groups = plots.identical(frame, ["t", "cv_mean"])
    assert groups == [["stale", "in_progress"], ["optimistic"]]
    assert plots.group_label(groups[0]) == "stale = in_progress (identical)"
    series = [g["cv_mean"].to_numpy() for _, g in frame.groupby("strategy", sort=False)]
    # sweep-heartbeat's picture: stale climbs to 0.95 at the longest interval, the rest stay
    # near 0.02 (medians only 3.5x apart, but a linear axis squashes them to its bottom).
    climbing = np.array([0.02, 0.02, 0.03, 0.07, 0.12, 0.62, 0.95])
    axes = {name: Figure().subplots() for name in ("over time", "climbing", "even")}
    plots._log_if_dwarfed(axes["over time"], series, "CV")  # median 0.05 under top 0.96
    plots._log_if_dwarfed(axes["climbing"], [climbing, np.full(7, 0.02)], "CV")
    plots._log_if_dwarfed(axes["even"], [series[0], series[0] / 2], "CV")
    assert (axes["over time"].get_yscale(), axes["over time"].get_ylabel()) == (
        "log",
        "CV (log scale)",
    )
    assert axes["climbing"].get_yscale() == "log"
    assert (axes["even"].get_yscale(), axes["even"].get_ylabel()) == ("linear", "CV")


def _drawn(monkeypatch: pytest.MonkeyPatch) -> list[Figure]:
    """Every figure `plots` turns into a PNG from now on, laid out as drawn."""
    drawn: list[Figure] = []
    real = plots._png

    def keep(fig: Figure) -> bytes:
        drawn.append(fig)
        return real(fig)

    monkeypatch.setattr(plots, "_png", keep)
    return drawn


def test_figures_keep_the_legend_right_of_every_panel_and_every_label_uncut(monkeypatch):
    """The layout, fitted once per figure: no title, label or tick label (wide ones here)
    crosses the figure's edge, panels and their labels do not overlap, and the figure's
    legend (a long, wrapped entry) lies right of every panel, over no data; the colour bar
    of the heat maps likewise."""
    drawn = _drawn(monkeypatch)
    names = ["stale", "in_progress", "optimistic", "best_of_k", "power_of_two"]
    t = np.arange(0.0, 30.0, 2.0)
    latency = pd.DataFrame(
        {
            "strategy": np.repeat(names[:3], len(t)),
            "t": np.tile(t, 3),
            "p50": np.tile(t, 3) * 400 + 1,
            "p99": np.concatenate([t * 4000 + 1, t * 4000 + 1, t + 1]),
        }
    )
    plots.latency_over_time(latency, plots.colors(names))
    panels = [plots.NodeCounts(s, 1, 0.5, [120_000, 3, 1, 0], 2, 120_004) for s in names]
    plots.node_counts(panels, plots.colors(names))
    grid = pd.DataFrame(
        [(s, r, c, 0.1 * i) for i, s in enumerate(names) for r in (1, 20) for c in (5, 10)],
        columns=["strategy", "heartbeat.interval_s", "cluster.nodes", "cv_mean"],
    )
    plots.heatmaps(grid, "heartbeat.interval_s", "cluster.nodes")
    for fig in drawn:
        renderer = fig.canvas.get_renderer()
        edge = fig.bbox
        boxes = [ax.get_tightbbox(renderer) for ax in fig.axes]
        for box in boxes:
            assert edge.x0 <= box.x0 and box.x1 <= edge.x1, (box, edge)
            assert edge.y0 <= box.y0 and box.y1 <= edge.y1, (box, edge)
        frames = [ax.get_window_extent(renderer) for ax in fig.axes]
        for i, frame in enumerate(frames):  # a panel's labels stay off every other panel
            assert not any(frame.overlaps(other) for other in boxes[:i] + boxes[i + 1 :])
        for legend in fig.legends:
            box = legend.get_window_extent(renderer)
            assert edge.x0 <= box.x0 and box.x1 <= edge.x1
            assert all(box.x0 > panel.x1 for panel in boxes)
    assert len(drawn) == 3 and all(fig.legends for fig in drawn[:2])
    assert "stale = in_progress (identical)" in [
        " ".join(t.get_text().split()) for t in drawn[0].legends[0].get_texts()
    ]


def _run_table_cells(page: str) -> dict[str, str]:
    """The report's run table: header -> the first strategy's cell."""
    table = page[page.index("<table") : page.index("</table>")]
    headers = [
        re.sub(r"<[^>]+>", "", h).strip() for h in re.findall(r"<th[^>]*>(.*?)</th>", table, re.S)
    ]
    row = table[table.index("<tbody") :]
    cells = [
        re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
    ]
    return dict(
        zip(headers[-len(cells) :] if len(headers) > len(cells) else headers, cells, strict=False)
    )


def test_failed_is_a_count_in_the_report_as_in_the_terminal(tmp_path, capsys):
    """Every create fails: the terminal and the report both give the failed creates as a
    count (a mean over seeds), not one a count and the other a share."""
    config = tmp_path / "c.toml"
    config.write_text('[run]\nduration_s = 2\n[[faults]]\nkind = "rpc_error"\n')
    out = tmp_path / "out"
    assert main(["run", str(config), "--seeds", "1", "--out", str(out), "--quiet"]) == 0
    shown = capsys.readouterr().out
    failed = _run_table_cells((out / "report.html").read_text())["failed"]
    assert failed.isdigit() and int(failed) > 0
    assert re.search(rf"│ +{failed} │", shown), shown


def test_the_run_table_says_what_its_less_obvious_columns_mean(run_report):
    """The utilisation columns are shown and explained; the real-time ones, absent on the
    virtual engine, are not explained either."""
    page = run_report.read_text()
    assert "util CV mean" in _run_table_cells(page)
    assert "util CV: the spread (CV) of the nodes&#x27; CPU utilisation" in page
    assert "beat late:" not in page
