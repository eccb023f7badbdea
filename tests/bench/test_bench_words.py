"""What ``harness bench`` says while it runs (issue 38, item 5): the command that resumes a
stopped bench, the ETA of the whole bench, its scale's name."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

import harness.bench
from harness.cli import main
from harness.core.errors import Stopped


def test_ctrl_c_names_the_bench_command_that_resumes_it(tmp_path: Path, monkeypatch) -> None:
    """Before: "the next submit resumes them", when the command was bench."""

    def stopped(*_: object, **__: object) -> None:
        raise Stopped(2, ["stopped by SIGINT:", "  3 runs checkpointed"])

    monkeypatch.setattr(harness.bench, "run", stopped)
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

    from harness import api
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

    monkeypatch.setattr(api, "submit", submit)
    d = harness.bench.derive_bench("torch.optim:SGD", root=tmp_path, scale="ci")
    with pytest.raises(Stopped):
        harness.bench.run(
            d,
            root=tmp_path,
            data_root=tmp_path,
            launcher=None,
            wait=None,
            out=io.StringIO(),
            most=10,
        )
    assert "bench: 0 of at most 10 runs" in lines[0] and "ETA ?" in lines[0], lines
    assert "bench: 2 of at most 10 runs" in lines[1], lines
    assert "bench: 3 of at most 10 runs" in lines[3], lines
    assert all("every phase" in ln for ln in lines), lines
    outside = Progress(1, stream=io.StringIO()).line()
    assert "bench" not in outside  # a submit outside a bench: its batch's ETA only
