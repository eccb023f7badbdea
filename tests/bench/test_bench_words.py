"""What ``harness bench`` says while it runs (issue 38, item 5): the command that resumes a
stopped bench, the ETA of the whole bench, its scale's name."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

import harness.bench
import harness.bench.phases
from harness.cli import main
from harness.core.errors import Stopped


def test_ctrl_c_names_the_bench_command_that_resumes_it(tmp_path: Path, monkeypatch) -> None:
    """Before: "the next submit resumes them", when the command was bench."""

    def stopped(*_: object, **__: object) -> None:
        raise Stopped(2, ["stopped by SIGINT:", "  3 runs checkpointed"])

    monkeypatch.setattr(harness.bench.phases, "run", stopped)
    root = tmp_path / "r"
    r = CliRunner().invoke(main, ["bench", "torch.optim:SGD", "--scale", "ci", "--results", root])
    assert r.exit_code == 130, r.output
    last = r.output.strip().splitlines()[-1]
    assert last == f"resume with: harness bench torch.optim:SGD --scale ci --results {root}", last
    assert "submit" not in last


def test_progress_shows_one_eta_for_every_phase_of_the_bench(tmp_path: Path, monkeypatch) -> None:
    """Before: each phase's batch had its own ETA ("ETA 1h08m" for phase 1 alone). The
    batches of the bench's rounds count toward one whole: the most runs still to train."""
    import io

    from harness import services
    from harness.core.result import Status
    from harness.launch.progress import Progress

    lines: list[str] = []

    def submit(*_: object, **__: object) -> object:
        for batch in (2, 1):  # two rounds: a tuning batch, then an extension batch
            shown = Progress(batch, stream=io.StringIO())
            lines.append(shown.line())
            for _ in range(batch):
                shown.finished(Status.COMPLETED)
            lines.append(shown.line())
        raise Stopped(2, ["stopped"])  # what follows submit is not this test's

    monkeypatch.setattr(services, "submit", submit)
    d = harness.bench.derive_bench("torch.optim:SGD", root=tmp_path, scale="ci")
    with pytest.raises(Stopped):
        how = harness.bench.phases.Launching(None, None, io.StringIO())
        harness.bench.run(d, how, root=tmp_path, data_root=tmp_path, most=10)
    assert "bench: 0 of at most 10 runs" in lines[0] and "ETA ?" in lines[0], lines
    assert "bench: 2 of at most 10 runs" in lines[1], lines
    assert "bench: 3 of at most 10 runs" in lines[3], lines
    assert all("every phase" in ln for ln in lines), lines
    outside = Progress(1, stream=io.StringIO()).line()
    assert "bench" not in outside  # a submit outside a bench: its batch's ETA only


def test_the_plan_gives_cpu_hours_locally_and_gpu_hours_on_a_cluster(tmp_path: Path) -> None:
    """Before: the laptop dry run said "0.00 GPU-hours" and gave no CPU estimate."""
    import re

    from harness.bench.render import plan_text

    d = harness.bench.derive_bench("torch.optim:SGD", root=tmp_path, scale="local")
    text = plan_text(harness.bench.plan(d, tmp_path, tmp_path / "data"), d)
    found = re.search(r"locally: about ([0-9.e+-]+) CPU-hours.*on a cluster: ([0-9.,]+) GPU", text)
    assert found, text
    cpu_h = float(found.group(1))
    assert 0.05 < cpu_h < 2.0  # the laptop bench: minutes to an hour of a core, not 0


def test_the_laptop_estimate_is_the_measured_cpu_per_run() -> None:
    """Before: the dry run estimated 0.21 CPU-hours for at most 136 runs (5.6 s a run) where the
    laptop bench of pytorch_optimizer:Lion measured 1,622.7 s of CPU for the 96 runs it trained
    (16.9 s a run: user + sys, idle 2-core machine, 2026-11-27; benchmarks/RESULTS.md section 9)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        d = harness.bench.derive_bench("torch.optim:SGD", root=root, scale="local")
        p = harness.bench.plan(d, root, root / "data")
    per_run_s = p.cpu_hours * 3600 / p.total_max
    assert 0.75 * 16.9 < per_run_s < 1.5 * 16.9, per_run_s


def test_the_card_names_the_benchs_scale_not_full_scale(tmp_path: Path) -> None:
    """Before: a bench at --scale local made a card of "N runs at full scale" (the runs' scale
    field: the grid as written), in its subtitle, figures and provenance."""
    import pandas as pd

    from harness import api
    from harness.analysis.present.figures.common import describe
    from harness.analysis.testing import make_run, write_run

    root = tmp_path / "r"
    for k, lr in enumerate((1e-3, 3e-3)):
        write_run(root, make_run(grid="bench_ci", optimizer="adamw", lr=lr), val_ppl=30.0 + k)
    name = harness.bench.scale_name("local", None)
    page = api.report(
        "bench_ci", results=root, metric="val_ppl", names=("lr_sensitivity",), scale_name=name
    )
    assert "2 runs at local scale (" in page and "full scale" not in page
    assert "<tr><th>scale</th><td>local scale</td></tr>" in page
    rows = pd.DataFrame({"method": ["adamw"], "scale": ["full"]})
    assert describe(rows, scale_name=name).endswith("| local scale")
    assert describe(rows).endswith("| full scale")  # any other report: the rows' own scale
    assert harness.bench.scale_name(None, Path("p/my.yaml")) == "protocol my.yaml"


def test_the_benchs_grid_names_its_scale_for_the_submit_line(tmp_path: Path) -> None:
    """Before: a bench at --scale local printed "64 runs planned (full scale)" (the runs' scale
    field: the grid as written) in every phase's submit line."""
    from harness.bench.derive import grid_of

    d = harness.bench.derive_bench("torch.optim:SGD", root=tmp_path, scale="local")
    grid = grid_of(d)
    assert grid.scale == "full" and grid.scale_name == "local scale"  # run_ids unchanged
    mine = harness.bench.derive_bench("torch.optim:SGD", root=tmp_path, protocol=d.protocol.path)
    assert grid_of(mine).scale_name == "protocol laptop.yaml"


def test_status_of_a_bench_grid_names_the_benchs_scale(tmp_path: Path) -> None:
    """Before: `harness status bench_laptop` headed its table "grid bench_laptop" and a row
    "full": the runs' scale field (the grid as written), with no word of the bench's scale."""
    from collections import Counter

    from harness.bench.derive import write_grid
    from harness.core import paths
    from harness.store.status import GridStatus, format_status

    d = harness.bench.derive_bench("torch.optim:SGD", root=tmp_path, scale="local")
    write_grid(d)
    assert paths.scale_name_path(tmp_path, "bench_laptop").read_text() == "local scale\n"
    counts = {"full": Counter(completed=3)}
    text = format_status(GridStatus("bench_laptop", counts, [], 0, (), "local scale"))
    assert text.splitlines()[0] == (
        "grid bench_laptop (local scale; the runs' scale field: the grid as written)"
    )
    plain = format_status(GridStatus("g", {"full": Counter(completed=3)}, []))
    assert plain.splitlines()[0] == "grid g"
