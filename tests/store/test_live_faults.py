"""A live file holding lines that are JSON but not points (issue 29, item 1): each such line is
skipped with one warning naming the file and the line, and no reader shows a traceback."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.analysis.testing import write_run
from harness.cli import main
from harness.core import paths
from harness.data.catalogue import vocab_lookup
from harness.grid.load import load_grid
from harness.store import live
from harness.store.live import append_point, read_points
from harness.store.manifest import write_manifest

GRID = """
name: lv
base: {model: tiny, dataset: classics-bpe8k, optimizer: adamw, seq_len: 32, batch_size: 8,
       tokens: 1536, eval_tokens: 2048, log_every: 2}
grid: {lr: [1.0e-3, 3.0e-3]}
"""

GOOD = {
    "step": 2,
    "tokens": 512,
    "train_loss": 5.0,
    "lr": 1e-3,
    "val_loss": None,
    "elapsed_s": 1.0,
    "steps": 6,
    "tokens_per_s": 100.0,
}

BAD = {
    '{"step": 4, "train_loss": "abc"}': "'train_loss' expected a number or null, got str 'abc'",
    '{"step": 4, "tokens": {"a": 1}}': "'tokens' expected an integer, got dict",
    '{"step": 1e23}': "'step' expected an integer, got float 1e+23",
    '{"step": 100000000000000000000000}': "'step' expected an integer in [0, 2**62)",
    '{"step": true}': "'step' expected an integer, got bool True",
    '{"step": 4, "steps": "forty"}': "'steps' expected an integer, got str 'forty'",
    '{"step": -3}': "'step' expected an integer in [0, 2**62), got -3",
    '{"step": 4, "elapsed_s": -1}': "'elapsed_s' expected a number >= 0 or null, got -1",
    '{"step": 4, "grad_norm": [1, 2]}': "'grad_norm' expected a number or null, got list",
    '{"step": 4, "lr": 1' + "0" * 400 + "}": "'lr' expected a number that fits a double",
    "[1, 2, 3]": "not a JSON object",
    '{"train_loss": 3.0}': "no 'step'",
}
"""Lines of JSON that are not points, and what the warning about each says."""

READERS = {
    "status": ["status", "lv"],
    "watch": ["watch", "lv", "--once"],
    "query": [
        "query",
        "SELECT step, train_loss FROM curves WHERE running IS NOT NULL",
        "--format",
        "csv",
    ],
    "report": ["report", "lv", "-o", "{tmp}/report.html"],
    "figures": ["figures", "lv", "--figure", "loss_curves", "--runs", "all"],
}


@pytest.fixture
def results(tmp_path: Path, prepared_data: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A results root of grid ``lv``: one run with a row, one with a live file holding a good
    point, every line of :data:`BAD`, then two more good points."""
    monkeypatch.setattr(live, "_WARNED", set(), raising=False)  # each test sees its warnings
    grid_file = tmp_path / "lv.yaml"
    grid_file.write_text(textwrap.dedent(GRID))
    runs = load_grid(grid_file, vocab=vocab_lookup(prepared_data)).runs
    root = tmp_path / "results"
    write_manifest(root, "lv", runs)
    write_run(root, runs[0], val_ppl=100.0, points=3, source=None)
    path = paths.live_path(root, "lv", runs[1].run_id)
    append_point(path, GOOD)
    with open(path, "a") as fh:
        fh.write("".join(line + "\n" for line in BAD))
    append_point(path, {**GOOD, "step": 4, "train_loss": float("nan"), "tokens_per_s": 1e-300})
    append_point(path, {**GOOD, "step": 6, "tokens": None, "tokens_per_s": float("inf")})
    return root


def test_a_bad_line_is_skipped_with_a_warning_naming_file_line_and_field(results, capsys):
    (path,) = paths.live_dir(results, "lv").glob("*.jsonl")

    points = read_points(path)

    assert [p["step"] for p in points] == [2, 4, 6]
    err = capsys.readouterr().err.splitlines()
    assert len(err) == len(BAD), err
    for number, (warning, why) in enumerate(zip(err, BAD.values(), strict=True), 2):
        assert warning.startswith(f"warning: {path}: line {number}: "), warning
        assert why in warning and warning.endswith("; line skipped"), warning
    assert read_points(path) == points and capsys.readouterr().err == ""  # said once


@pytest.mark.parametrize("reader", READERS)
def test_no_reader_shows_a_traceback_for_a_live_files_contents(results, reader, tmp_path):
    argv = [a.format(tmp=tmp_path) for a in READERS[reader]]

    r = CliRunner().invoke(main, [*argv, "--results", str(results)])

    assert r.exit_code == 0, r.output
    assert "Traceback" not in r.output and r.exception is None, r.output
    warnings = [ln for ln in r.output.splitlines() if ln.startswith("warning:")]
    assert len(warnings) == len(BAD), r.output
    assert all("live/" in w and "line skipped" in w for w in warnings)
    if reader == "query":
        assert r.stdout.splitlines()[-3:] == ["2,5.0", "4,", "6,5.0"]  # NaN is NULL in CSV
