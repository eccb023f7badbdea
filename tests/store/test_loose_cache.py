"""The loose rows' table kept between readers (harness.store.loose_cache): a reader after the
first reads no per-run row file while they are as they were; a new, changed or removed file is
read again; the table kept equals the one read; a cache that refuses costs nothing but itself."""

from __future__ import annotations

import os

import pytest

from harness.analysis.testing import make_run, write_run
from harness.core import paths
from harness.store import db, loose_cache


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """The cache folder in the test's own temp folder."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "harness" / loose_cache.FOLDER


@pytest.fixture
def reads(monkeypatch):
    """The per-run files each read of the loose rows read (a list per read)."""
    seen: list[list[str]] = []
    read = db._read_rows

    def counted(files):
        seen.append(sorted(p.name for p in files))
        return read(files)

    monkeypatch.setattr(db, "_read_rows", counted)
    return seen


def _rows(root):
    with db.connect(root, "g") as con:
        return con.sql("SELECT * FROM runs ORDER BY run_id, attempt").to_arrow_table()


def _store(root, n=4):
    runs = [make_run(grid="g", optimizer="sgd", lr=0.1 * (i + 1), seed=1) for i in range(n)]
    for i, run in enumerate(runs):
        write_run(root, run, val_ppl=10.0 + i)
    return runs


def test_a_reader_after_the_first_reads_no_row_file_and_sees_the_same_rows(tmp_path, cache, reads):
    root = tmp_path / "results"
    _store(root)
    first = _rows(root)
    assert len(reads) == 1 and len(reads[0]) == 4
    assert len(list(cache.glob("*.arrow"))) == 1
    again = _rows(root)
    assert len(reads) == 1  # from the cache
    assert again.schema == first.schema and again.schema.metadata == first.schema.metadata
    assert again.equals(first)
    assert not any(p.name.startswith(".") for p in paths.runs_dir(root, "g").iterdir())


def test_a_new_changed_or_removed_row_file_is_read_again(tmp_path, cache, reads):
    root = tmp_path / "results"
    runs = _store(root)
    _rows(root)
    write_run(root, runs[0], val_ppl=99.0)  # a second attempt: a new file
    got = _rows(root)
    assert len(reads) == 2 and len(reads[1]) == 5
    assert 99.0 in got.column("val_ppl").to_pylist()
    # a file replaced under its name by other bytes (no writer does: a user might)
    files = sorted(paths.runs_dir(root, "g").glob("*.parquet"))
    victim, donor = files[0], files[1]
    st = victim.stat()
    victim.write_bytes(donor.read_bytes())
    os.utime(victim, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    (paths.grid_dir(root, "g") / ".written").unlink(missing_ok=True)  # no record to compare
    _rows(root)
    assert len(reads) == 3
    donor.unlink()
    assert _rows(root).num_rows == 4
    assert len(reads) == 4 and len(reads[3]) == 4


def test_a_table_kept_under_another_key_is_not_read(tmp_path, cache, reads):
    root = tmp_path / "results"
    _store(root)
    _rows(root)
    (kept,) = cache.glob("*.arrow")
    other = tmp_path / "other.arrow"
    files = sorted(paths.runs_dir(root, "g").glob("*.parquet"))
    loose_cache._keep(other, "another key", db._read_rows(files[:1]))
    kept.write_bytes(other.read_bytes())
    assert _rows(root).num_rows == 4
    assert len(reads) == 3  # _keep's table above was read too
    kept.write_bytes(b"not arrow")
    assert _rows(root).num_rows == 4 and len(reads) == 4


def test_a_cache_folder_that_refuses_costs_only_the_cache(tmp_path, monkeypatch, reads):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))  # a file: no folder can be made in it
    root = tmp_path / "results"
    _store(root)
    assert _rows(root).num_rows == 4 and _rows(root).num_rows == 4
    assert len(reads) == 2


def test_the_folder_keeps_the_newest_files_only(tmp_path, cache, monkeypatch):
    monkeypatch.setattr(loose_cache, "KEEP", 3)
    for i in range(5):
        root = tmp_path / f"results{i}"
        _store(root, n=1)
        _rows(root)
    kept = sorted(cache.glob("*.arrow"), key=lambda p: p.stat().st_mtime_ns)
    assert len(kept) == 3
    assert kept[-1] == loose_cache._place(sorted(paths.runs_dir(root, "g").glob("*.parquet")))
