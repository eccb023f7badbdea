"""A re-submit is linear in the grid's size (issue 28 item 1): the work of a no-op re-submit (and
of its idempotence check) grows with the runs once, never with runs x runs. Asserted on work
done (configs parsed, row reads), never on time; ``benchmarks/resubmit.py`` times it."""

from __future__ import annotations

import io
from collections import Counter
from pathlib import Path

import pytest

from harness.core.provenance import provenance
from harness.core.result import RunResult, Status
from harness.data.catalogue import vocab_lookup
from harness.grid.load import load_grid
from harness.launch.inputs import Inputs
from harness.launch.submit import submit
from harness.store.manifest import write_manifest
from harness.store.rows import write_result


def finished_grid(folder: Path, data_root: Path, lrs: int) -> Path:
    """A grid of ``lrs`` x 2 quadratic runs, each with a completed row (as a trained run writes
    it: provenance and today's input fingerprints)."""
    values = [round(1e-3 * (1 + i / 10), 6) for i in range(lrs)]
    path = folder / f"lin{lrs}.yaml"
    path.write_text(
        f"name: lin{lrs}\nbase: {{workload: quadratic, steps: 4, optimizer: sgd}}\n"
        f"grid: {{lr: {values}}}\nseeds: 2\n"
    )
    grid = load_grid(path, vocab=vocab_lookup(data_root))
    root = folder / "results"
    write_manifest(root, grid.name, grid.runs)
    reader = Inputs(data_root)
    for run in grid.runs:
        result = RunResult(status=Status.COMPLETED, steps_done=4, metrics={"val_loss": 1.0})
        write_result(root, run, result, provenance("1") | reader.of(run))
    return path


def _counted(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Counts of configs parsed from the manifest and of whole-grid row reads."""
    import harness.store.db as db
    import harness.store.manifest as manifest

    calls: Counter[str] = Counter()
    parse, newest = manifest.from_flat, db.newest_values

    def counting_parse(*a, **k):
        calls["configs parsed"] += 1
        return parse(*a, **k)

    def counting_newest(*a, **k):
        calls["row reads"] += 1
        return newest(*a, **k)

    monkeypatch.setattr(manifest, "from_flat", counting_parse)
    monkeypatch.setattr(db, "newest_values", counting_newest)
    return calls


@pytest.mark.parametrize("lrs", [4, 12])
def test_a_no_op_resubmit_parses_no_config_and_reads_the_rows_a_fixed_number_of_times(
    tmp_path, monkeypatch, lrs
):
    data_root = tmp_path / "data"
    grid = finished_grid(tmp_path, data_root, lrs)
    calls = _counted(monkeypatch)
    out = io.StringIO()
    report = submit(grid, root=tmp_path / "results", data_root=data_root, launcher="local", out=out)
    assert (report.planned, report.skipped, report.launched) == (2 * lrs, 2 * lrs, 0)
    # before: each row's run_id was looked up in a freshly parsed manifest (runs x runs configs)
    assert calls["configs parsed"] == 0, calls
    assert calls["row reads"] == 1, calls  # the idempotence check


def test_a_no_op_resubmit_makes_no_manifest_rows(tmp_path, monkeypatch):
    """Issue 41: the manifest's rows are made for the new runs only (a 100k-row table was
    built, then not written)."""
    import harness.store.manifest as manifest

    data_root = tmp_path / "data"
    grid = finished_grid(tmp_path, data_root, 4)
    made: list[int] = []
    table = manifest._table

    def counting(runs):
        runs = list(runs)
        made.append(len(runs))
        return table(runs)

    monkeypatch.setattr(manifest, "_table", counting)
    root = tmp_path / "results"
    submit(grid, root=root, data_root=data_root, launcher="local", out=io.StringIO())
    assert made == []


def test_the_stale_check_hashes_each_source_file_once_not_once_per_run(tmp_path, monkeypatch):
    """Issue 41: rows whose optimizer fingerprint differs from today's (an edited optimizer)
    cost a hash of its files per run before the refusal (130 s of CPU at 10k runs)."""
    import harness.launch.inputs as inputs

    data_root = tmp_path / "data"
    path = finished_grid(tmp_path, data_root, 12)
    runs = load_grid(path, vocab=vocab_lookup(data_root)).runs
    recorded = {r.run_id: {"optimizer_fingerprint": "0" * 16} for r in runs}
    hashed: list[int] = []
    real = inputs.code_fingerprint

    def counting(objects):
        hashed.append(1)
        return real(objects)

    monkeypatch.setattr(inputs, "code_fingerprint", counting)
    stale = inputs.stale_runs(runs, recorded, data_root)
    assert len(stale) == len(runs) == 24
    assert len(hashed) <= 2  # the optimizer's files and the workload's, once each
