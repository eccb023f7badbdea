"""``harness watch`` on a workload's grid (issue 44, item 5): the parameter count comes from the
workload (none: a toy problem is not in the compute estimate), not from the GPT's fields; before,
every ``quadratic`` or ``imbalance`` grid (and every bench built on one) exited 2 with "model
quadratic: no value for n_layer, n_head, d_model"."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.core.provenance import provenance
from harness.core.result import RunResult
from harness.grid.load import load_grid
from harness.store.manifest import write_manifest
from harness.store.rows import write_result


@pytest.mark.parametrize("workload", ["quadratic", "imbalance"])
def test_watch_once_shows_a_workload_grid(tmp_path: Path, workload: str) -> None:
    path = tmp_path / "wl.yaml"
    path.write_text(
        textwrap.dedent(
            f"""
            name: wl
            base: {{workload: {workload}, optimizer: sgd, lr: 0.01, steps: 4}}
            seeds: 2
            """
        )
    )
    runs = load_grid(path, vocab={}).runs
    root = tmp_path / "results"
    write_manifest(root, "wl", runs)
    write_result(root, runs[0], RunResult(status="completed", steps_done=4), provenance())

    r = CliRunner().invoke(main, ["watch", "wl", "--once", "--results", str(root)])

    assert r.exit_code == 0, r.output
    assert "wl" in r.output and "1" in r.output
