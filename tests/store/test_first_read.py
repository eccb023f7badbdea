"""The first read after new rows checks what it reads (issue 41: a read right after a sweep's
last compactions checked the thousand per-run files those compactions covered, kept for readers
that listed them before, read by no one after: 3.7 s of CPU at 100,000 runs)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from harness.core import paths
from harness.core.result import RunResult
from harness.store import auto, integrity, written
from harness.store.compact import compact
from harness.store.integrity import check_grid
from harness.store.layout import grid_files
from harness.store.spill import write_or_spill
from tests.runs import tiny_run


def _result(i: int) -> RunResult:
    curve = [
        {"step": 2, "tokens": 2, "train_loss": 4.0, "lr": 1e-3, "val_loss": None, "elapsed_s": 0.1}
    ]
    return RunResult(status="completed", steps_done=2, curve=curve, metrics={"val_loss": 1.0 + i})


def test_a_read_checks_the_files_it_reads_not_those_a_compaction_covered(tmp_path, monkeypatch):
    monkeypatch.setattr(auto, "AUTO_COMPACT_FILES", 10**6)  # compacted by hand below
    runs = [tiny_run(tmp_path / "data", grid="a", lr=1e-4 * (i + 1)) for i in range(8)]
    for i, run in enumerate(runs[:6]):
        write_or_spill(tmp_path, run, _result(i), {})
    compact(tmp_path, "a")  # covers the 6 runs' files, which stay for the grace period
    for i, run in enumerate(runs[6:], start=6):
        write_or_spill(tmp_path, run, _result(i), {})
    paths.verified_path(tmp_path, "a").unlink()  # nothing checked yet: a first read

    assert check_grid(tmp_path, "a") == []

    checked = set(json.loads(paths.verified_path(tmp_path, "a").read_text()))
    found = grid_files(tmp_path, "a")
    gen = found.generation
    assert gen is not None
    read = [*found.rows, *found.curves, *gen.runs, *(p for p, _ in gen.curves)]
    folder = paths.grid_dir(tmp_path, "a")
    want = {str(p.relative_to(folder)) for p in read} | {"manifest.parquet"} & checked
    assert len(found.rows) == 2 and len(list(paths.runs_dir(tmp_path, "a").glob("*"))) == 8
    assert checked == want  # not the 12 covered per-run files still on disk


def test_a_file_is_whole_as_its_writer_wrote_it_and_read_in_full_once_changed(
    tmp_path, monkeypatch
):
    """A row and curve their writer recorded (size and SHA-256) are compared by the first
    reader, not decoded (pyarrow and DuckDB over 255 new rows and curves: 1.5 s of CPU); one
    garbled after its write, its size unchanged, is read in full and moved aside."""
    monkeypatch.setattr(auto, "AUTO_COMPACT_FILES", 10**6)
    runs = [tiny_run(tmp_path / "data", grid="a", lr=1e-4 * (i + 1)) for i in range(3)]
    rows = [write_or_spill(tmp_path, run, _result(i), {}) for i, run in enumerate(runs)]
    data = bytearray(rows[0].read_bytes())
    footer = int.from_bytes(data[-8:-4], "little")
    middle = (len(data) - 8 - footer) // 2  # the pages' middle: only a checksum tells
    data[middle : middle + 16] = bytes(b ^ 0x5A for b in data[middle : middle + 16])
    rows[0].write_bytes(bytes(data))
    decoded: list[str] = []
    real = integrity.arrow_fault
    monkeypatch.setattr(integrity, "arrow_fault", lambda p: decoded.append(p.name) or real(p))

    assert check_grid(tmp_path, "a") == [rows[0]]

    assert decoded == [rows[0].name]  # the other five files were compared, not decoded
    checked = json.loads(paths.verified_path(tmp_path, "a").read_text())
    assert len(checked) == 5 and f"runs/{rows[0].name}" not in checked  # 3 curves, 2 rows


def test_a_compaction_drops_the_record_of_the_files_it_covered(tmp_path, monkeypatch):
    monkeypatch.setattr(auto, "AUTO_COMPACT_FILES", 10**6)
    runs = [tiny_run(tmp_path / "data", grid="a", lr=1e-4 * (i + 1)) for i in range(3)]
    for i, run in enumerate(runs[:2]):
        write_or_spill(tmp_path, run, _result(i), {})
    assert len(written.read(tmp_path, "a")) == 4
    compact(tmp_path, "a")
    last = write_or_spill(tmp_path, runs[2], _result(2), {})
    assert set(written.read(tmp_path, "a")) == {
        f"runs/{last.name}",
        f"curves/{last.name}",
    }


def test_a_writer_records_the_bytes_it_wrote_without_reading_its_files_back(tmp_path, monkeypatch):
    """The record of a row and its curve held what the writer read back from the disk after
    writing them (a second read of each file, per row written): it hashes the bytes before they
    are written, and the record still says each file's size and SHA-256."""
    monkeypatch.setattr(auto, "AUTO_COMPACT_FILES", 10**6)
    run = tiny_run(tmp_path / "data", grid="a", lr=1e-4)
    results = tmp_path / "results"
    real = Path.read_bytes

    def reading(path: Path) -> bytes:
        if path.is_relative_to(results):
            pytest.fail(f"{path.name} read back by its writer")
        return real(path)

    monkeypatch.setattr(Path, "read_bytes", reading)
    row = write_or_spill(results, run, _result(0), {})
    monkeypatch.setattr(Path, "read_bytes", real)
    curve = paths.curve_path(results, "a", run.run_id, paths.per_run_name(row)[1])
    folder = paths.grid_dir(results, "a")
    want = {
        p.relative_to(folder).as_posix(): (len(real(p)), hashlib.sha256(real(p)).hexdigest())
        for p in (row, curve)
    }
    assert written.read(results, "a") == want
    paths.verified_path(results, "a").unlink(missing_ok=True)
    decoded: list[str] = []
    monkeypatch.setattr(integrity, "arrow_fault", lambda p: decoded.append(p.name))
    assert check_grid(results, "a") == [] and decoded == []  # compared with the record
