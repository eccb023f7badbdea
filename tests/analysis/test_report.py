"""``harness report``: one self-contained HTML file, checked in headless Chromium (its tables,
every figure, the arm toggles, no console message) and by reading the file (nothing external)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from harness.analysis.testing import make_run, write_run
from harness.cli import main

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
FLAGS = (
    *("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"),
    *("--disable-background-networking", "--disable-component-update", "--disable-sync"),
)


def chromium() -> str:
    """The browser; missing: a skip, or a failure under CI=true (scripts/test.sh installs it)."""
    for name in BROWSERS:
        if found := shutil.which(name):
            return found
    message = "chromium not installed: apt-get install chromium (scripts/test.sh does, as root)"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


def browse(html: Path, tmp: Path, *args: str, fragment: str = "") -> subprocess.CompletedProcess:
    profile = tmp / f"profile-{len(list(tmp.glob('profile-*')))}"
    cmd = [
        chromium(),
        *FLAGS,
        f"--user-data-dir={profile}",
        "--enable-logging=stderr",
        "--v=0",
        *args,
        f"file://{html}{fragment}",
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=True)


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    """SGD, AdamW and Signum over 2 lrs x 2 seeds with validation points; Lion only failed."""
    root = tmp_path_factory.mktemp("results")
    level = {"sgd": 40.0, "adamw": 30.0, "signum": 32.0}
    for opt, base in level.items():
        for k, lr in enumerate((1e-3, 3e-3)):
            for s in range(2):
                run = make_run(grid="opt", optimizer=opt, lr=lr, seed=s, eval_every=2)
                write_run(root, run, val_ppl=base + 3 * k + 0.5 * s)
    for s in range(2):
        write_run(root, make_run(grid="opt", optimizer="lion", lr=1e-4, seed=s), status="failed")
    out = root / "report.html"
    res = CliRunner().invoke(main, ["report", "opt", "--results", str(root), "-o", str(out)])
    assert res.exit_code == 0, res.output
    return out


def test_report_is_self_contained(report: Path):
    html = report.read_text()
    pattern = r"""(?:src|href)\s*=\s*["']?(?:https?:)?//|url\(\s*["']?https?:|@import"""
    external = re.findall(pattern, html)
    assert external == []
    assert all(u == "http://www.w3.org/2000/svg" for u in re.findall(r"https?://[^\s\"'<]+", html))
    figures = re.findall(
        r'<figure data-figure="([a-z_]+)"><img alt="[a-z_]+" src="data:image/png;base64,', html
    )
    assert figures == ["lr_sensitivity", "gap_closure", "loss_curves"]
    assert "lion: 2 failed" in html  # the failed arm is named
    for part in ("rows SHA-256", "report code commit", "duckdb", "SELECT * FROM runs WHERE"):
        assert part in html


@pytest.mark.slow
def test_report_in_headless_chromium(report: Path, tmp_path: Path):
    dom = browse(report, tmp_path, "--dump-dom")
    assert not [ln for ln in dom.stderr.splitlines() if "CONSOLE" in ln], dom.stderr
    page = dom.stdout
    assert 'data-ready="yes"' in page  # the script ran to its end
    best = re.search(r'<table class="data" id="table-best">(.*?)</table>', page, re.S)
    assert best, "no best-per-cell table"
    rows = re.findall(r"<tr><td>([^<]+)</td>", best.group(1))
    assert sorted(rows) == ["adamw", "sgd", "signum"]
    assert "two_sigma" in best.group(1)
    gap = re.search(r'<table class="data" id="table-gap">(.*?)</table>', page, re.S)
    assert gap and "ci_low_pct" in gap.group(1) and "signum" in gap.group(1)
    assert len(re.findall(r'<img alt="[a-z_]+" src="data:image/png;base64,', page)) == 3
    # toggles: one checkbox per arm drawn, each hides its arm's group of lines
    boxes = re.findall(r'<input type="checkbox" checked="" data-arm="(\d+)">', page)
    assert len(boxes) == 3
    hidden = browse(report, tmp_path, "--dump-dom", fragment=f"#hide={boxes[0]}").stdout
    assert re.search(rf'<g data-arm="{boxes[0]}"[^>]*style="display: none;"', hidden)
    assert not re.search(rf'<g data-arm="{boxes[1]}"[^>]*display: none', hidden)
    # a screenshot that shows something
    shot = tmp_path / "report.png"
    browse(report, tmp_path, f"--screenshot={shot}", "--window-size=1200,1600")
    import matplotlib.image

    pixels = matplotlib.image.imread(shot)
    assert pixels.shape[:2] == (1600, 1200) and np.std(pixels) > 0.05


@pytest.mark.slow
def test_report_reads_the_curves_of_the_runs_it_draws_only(report: Path, monkeypatch):
    """Beyond MAX_THIN runs a chart draws one run in k thin, and only the drawn runs' curve
    points are read (at 100,000 runs the whole statement is 20 million points): counted."""
    import harness.analysis.present.report as report_module
    from harness.analysis.rows.load import Selection

    read: list[str] = []
    chosen: list[set[str]] = []
    frame, curves_of = Selection.frame, Selection.curves_of
    monkeypatch.setattr(
        Selection, "frame", lambda s, n, *columns: read.append(n) or frame(s, n, *columns)
    )
    monkeypatch.setattr(
        Selection, "curves_of", lambda s, ids: chosen.append(set(ids)) or curves_of(s, ids)
    )
    monkeypatch.setattr(report_module, "MAX_THIN", 5)
    from harness.analysis.questions.query import Query

    req = report_module.ReportRequest(Query(grid=["opt"], results=str(report.parent)))
    html = report_module.build_report(req)
    assert "curves" not in read  # the whole statement was never read
    thin = html.count('stroke-width="0.8"')
    assert thin == 4 and "thin: 4 of the cell&#x27;s 12 runs (one in 3, by run_id)" in html
    # the report's chart: the 4 thin runs and the 3 arms' tuned seeds (2 each), at most
    drawn = chosen[-1]
    assert 4 <= len(drawn) <= 4 + 3 * 2 < 12
    assert "<th>rows</th><td>14 runs, 70 curve points</td>" in html  # what the SQL selects
