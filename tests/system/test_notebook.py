"""The example notebook (analysis/example.ipynb) runs from top to bottom on a small grid."""

from __future__ import annotations

import math
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from harness.analysis.testing import make_run, write_run

pytestmark = pytest.mark.slow  # executes the notebook in a kernel

NOTEBOOK = Path(__file__).resolve().parents[2] / "analysis" / "example.ipynb"


@pytest.fixture
def results(tmp_path: Path) -> Path:
    """AdamW and SGD over three lrs and two seeds, with loss curves (no training)."""
    for opt, best in (("adamw", 3.6), ("sgd", 4.0)):
        for k, lr in enumerate((1e-3, 3e-3, 1e-2)):
            for seed in range(2):
                final = best + 0.1 * abs(k - 1) + 0.01 * seed
                curve = [
                    final + (math.log(256) - final) * math.exp(-4 * (i + 1) / 8) for i in range(8)
                ]
                run = make_run(grid="nb", optimizer=opt, lr=lr, seed=seed)
                write_run(tmp_path, run, val_ppl=math.exp(final), losses=curve)
    return tmp_path


def _text(cell: dict) -> str:
    out = []
    for o in cell.get("outputs", []):
        out.append(o.get("text", ""))
        out.append(o.get("data", {}).get("text/plain", ""))
    return "\n".join(out)


def test_example_notebook_runs(results: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("HARNESS_RESULTS", str(results))
    monkeypatch.setenv("HARNESS_GRID", "nb")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(
        nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(results)}}
    ).execute()
    cells = [c for c in nb.cells if c.cell_type == "code"]
    assert all(not any(o.get("output_type") == "error" for o in c.outputs) for c in cells)
    counts = _text(cells[1])
    assert "adamw" in counts and "completed" in counts and "6" in counts  # DuckDB's view
    best = _text(cells[2])  # api.analyze: the table harness analyze best prints
    assert "two_sigma" in best and "adamw" in best and "tuned over: lr" in best
    figure = cells[3].outputs
    assert any("image/png" in o.get("data", {}) for o in figure)  # the figure is drawn
    assert "drawn; notes" in _text(cells[3])
    half = _text(cells[4])
    assert "loss_at_half" in half and "adamw" in half and "sgd" in half
    rank = float(_text(cells[5]).strip().splitlines()[-1])
    assert rank > 0.9  # the curves fall to their final loss: the ranking holds at 50 %
