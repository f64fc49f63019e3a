"""`harness report` writes one self-contained HTML file whose pictures decode, for a run and
for a sweep; the sweep-heartbeat report is opened in a real headless Chromium."""

from __future__ import annotations

import base64
import html
import io
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from matplotlib.image import imread

from harness.cli import main
from harness.ledgers import LEDGERS
from harness.ray_setup import start_ray, stop_ray
from harness.report_html import _beats
from tests.conftest import CONFIGS, scenario

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
def ray_instance():
    """One local Ray for every sweep in this module."""
    start_ray()
    yield
    stop_ray()


@pytest.fixture(scope="module")
def heartbeat_report(ray_instance, tmp_path_factory) -> Path:
    """configs/sweep-heartbeat.toml with 2 seeds instead of 20, and its report."""
    out = tmp_path_factory.mktemp("sweep-heartbeat")
    sweep = str(CONFIGS / "sweep-heartbeat.toml")
    assert main(["sweep", sweep, "--seeds", "2", "--out", str(out), "--quiet"]) == 0
    assert main(["report", str(out)]) == 0
    return out / "report.html"


def test_run_report_draws_every_strategy(tmp_path, capsys):
    out = tmp_path / "run"
    args = ["--seeds", "2", "--set", "run.duration_s=8", "--out", str(out), "--quiet"]
    compare = ["--compare", "stale,optimistic"]
    assert main(["run", str(CONFIGS / "seed-herd.toml"), *compare, *args]) == 0
    capsys.readouterr()
    assert main(["report", str(out)]) == 0
    assert f"report: {out / 'report.html'}" in capsys.readouterr().out
    page = (out / "report.html").read_text()
    _self_contained(page)
    images = _images(page)
    assert set(images) == {
        "sandboxes per node for each strategy",
        "CV of sandboxes per node over time for each strategy",
        "accounting error over time for each strategy",
    }
    assert all(h > 100 and w > 100 for h, w in images.values())
    assert "<td>stale</td>" in page and "<td>optimistic</td>" in page  # the table over seeds


def test_sweep_report_has_the_curve_against_the_swept_key(heartbeat_report):
    page = heartbeat_report.read_text()
    _self_contained(page)
    images = _images(page)
    assert "CV against heartbeat.interval_s for each strategy" in images
    assert "sandboxes per node for each strategy" in images
    assert "heartbeat.interval_s = 20 (the base config" in page
    meta = json.loads((heartbeat_report.parent / "sweep.json").read_text())
    assert meta["completed"]
    assert len(meta["cells"]) == 7 * len(LEDGERS)


def test_two_swept_keys_give_heat_maps(ray_instance, tmp_path):
    path = tmp_path / "two.toml"
    path.write_text(
        f'[sweep]\nbase = "{CONFIGS / "seed-herd.toml"}"\nseeds = 2\n'
        '[set]\n"run.duration_s" = 5.0\n'
        '[grid]\n"placement.strategy" = ["stale", "optimistic"]\n'
        '"heartbeat.interval_s" = [1, 20]\n"cluster.nodes" = [5, 10]\n'
    )
    out = tmp_path / "out"
    assert main(["sweep", str(path), "--out", str(out), "--quiet"]) == 0
    assert main(["report", str(out)]) == 0
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
    (img) => [img.alt, img.complete, img.naturalWidth, img.naturalHeight])});
  document.body.appendChild(out);
});
</script>"""


@pytest.mark.skipif(_browser() is None, reason="no Chromium installed (apt-get install chromium)")
def test_sweep_heartbeat_report_opens_in_chromium(heartbeat_report, tmp_path):
    """The page loads without errors and the browser decodes every image at its full size.
    The checker script goes into a copy: the report itself has no script."""
    page = heartbeat_report.read_text()
    checked = heartbeat_report.parent / "checked.html"
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
    expected = _images(page)
    assert len(check["images"]) == len(expected) >= 4
    for alt, complete, width, height in check["images"]:
        assert complete
        assert (height, width) == expected[alt]


def test_beats_drawn_are_the_heartbeat_plan_the_sync_at_0_without_delay() -> None:
    aligned = scenario(heartbeat={"interval_s": 10.0, "delay_ms": 250.0}, run={"duration_s": 25})
    assert _beats(aligned)[0] == [0.0, 10.25, 20.25]
    staggered = scenario(heartbeat={"phase": "staggered"})
    assert _beats(staggered)[0] == []
