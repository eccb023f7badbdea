"""Covered lists read once per process, and without their files where only their parts are asked
(issue 41: a writer asks the current generation at every row; with more than 64 lists within the
grace, as a sweep of two writers keeps, the cache forgot them all and every row read every list:
2.3 s of CPU per row at 66 lists of 28,000 runs, the spike windows of RESULTS §10.4)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from harness.core import paths
from harness.core.stamped import StampedCache
from harness.store import layout

GRID = "g"
LISTS = 80
"""More than the 64 lists the former cache held."""


def _files(k: int) -> list[str]:
    return [
        f"{kind}/{k:08d}{i:056d}.000001.parquet" for kind in ("runs", "curves") for i in range(3)
    ]


def _store(root: Path, lists: int = LISTS) -> None:
    """``lists`` complete generations, each one part of its own, as a sweep leaves them."""
    paths.compact_dir(root, GRID).mkdir(parents=True)
    for k in range(1, lists + 1):
        for kind in paths.GENERATION_KINDS:
            paths.generation_path(root, GRID, kind, k).write_bytes(b"part")
        part = {"number": k, "rows": 256, "shadows": [f"r{k}"], "kinds": ["runs", "curves"]}
        layout.write_covered(root, GRID, k, _files(k), [part], 256 * k)


@pytest.fixture
def reads(monkeypatch) -> Counter[str]:
    """Each read of a covered list, whole or its head only, counted by kind and file."""
    layout._HEADS.clear()
    layout._FILES.clear()
    seen: Counter[str] = Counter()
    whole, head = layout._read_covered, layout._read_head

    def counted_whole(path: Path):
        seen["whole"] += 1
        seen[path.name] += 1
        return whole(path)

    def counted_head(path: Path):
        seen["head"] += 1
        seen[path.name] += 1
        return head(path)

    monkeypatch.setattr(layout, "_read_covered", counted_whole)
    monkeypatch.setattr(layout, "_read_head", counted_head)
    return seen


def test_a_writer_asking_the_generation_row_after_row_reads_one_head_once(tmp_path, reads):
    _store(tmp_path)
    for _ in range(5):  # five rows written
        gen = layout.current_generation(tmp_path, GRID)
        assert gen is not None and gen.number == LISTS and gen.arrivals == 256 * LISTS
    assert reads == Counter({"head": 1, f"covered-{LISTS:06d}.json": 1})  # no file list read


def test_every_list_is_read_once_however_many_a_removal_asks_again(tmp_path, reads):
    _store(tmp_path)
    for _ in range(3):  # three compactions' removals in one process
        complete, incomplete = layout.generations(tmp_path, GRID)
        assert [g.number for g in complete] == list(range(1, LISTS + 1)) and not incomplete
    assert reads["head"] == LISTS and reads["whole"] == 0
    assert all(n == 1 for name, n in reads.items() if name.startswith("covered-"))


def test_the_files_are_read_when_asked_and_only_the_last_few_are_kept(tmp_path, reads):
    _store(tmp_path)
    complete, _ = layout.generations(tmp_path, GRID)
    for gen in complete:
        assert gen.covered == frozenset(_files(gen.number))
        assert gen.parts[0].shadows == {f"r{gen.number}"} and gen.parts[0].rows == 256
    assert reads["whole"] == LISTS and len(layout._FILES) == layout.FILES_CACHED
    newest = complete[-1]
    again = layout.current_generation(tmp_path, GRID)
    assert again is not None and again.covered == newest.covered
    assert reads["whole"] == LISTS  # the newest one's files were kept


def test_a_list_written_files_first_by_an_earlier_harness_reads_the_same(tmp_path, reads):
    _store(tmp_path, lists=2)
    listing = paths.covered_path(tmp_path, GRID, 2)
    doc = json.loads(listing.read_text())
    old = {"generation": 2, "files": doc["files"], "parts": doc["parts"], "arrivals": 512}
    listing.write_text(json.dumps(old))  # no format, files first
    gen = layout.current_generation(tmp_path, GRID)
    assert gen is not None and gen.number == 2 and gen.arrivals == 512
    assert gen.parts[0].shadows == {"r2"} and gen.covered == frozenset(_files(2))
    assert (reads["head"], reads["whole"]) == (1, 1)  # its head is not first: read whole
    assert layout.current_generation(tmp_path, GRID) == gen
    assert (reads["head"], reads["whole"]) == (1, 1)  # and once


def test_a_list_whose_head_is_longer_than_what_is_read_for_it_is_read_whole(tmp_path, reads):
    _store(tmp_path, lists=1)
    many = [f"run{i:060d}" for i in range(layout.HEAD_BYTES // 60)]
    part = {"number": 1, "rows": 256, "shadows": many, "kinds": ["runs", "curves"]}
    layout.write_covered(tmp_path, GRID, 1, _files(1), [part], 7)
    gen = layout.current_generation(tmp_path, GRID)
    assert gen is not None and gen.parts[0].shadows == frozenset(many) and gen.arrivals == 7
    assert reads["whole"] == 1


def test_the_index_of_a_part_in_use_is_kept_while_parts_come_and_go(tmp_path, monkeypatch):
    """A writer looks each row's run up in the current generation's parts (``row_mark``); each
    compaction makes a new part. The index cache forgot every part once it held 64."""
    from harness.store import rows

    read: Counter[str] = Counter()
    monkeypatch.setattr(rows, "_PART_MARKS", StampedCache(rows.PARTS_CACHED))
    monkeypatch.setattr(
        rows, "_read_marks", lambda marks, files, _: read.update(f.name for f in files)
    )
    live = [tmp_path / f"runs-{k:06d}.parquet" for k in range(1, 6)]  # a generation's big parts
    for part in live:
        part.write_bytes(b"part")
    for k in range(6, 6 + 3 * rows.PARTS_CACHED):  # a compaction each: a new part, then rows
        new = tmp_path / f"runs-{k:06d}.parquet"
        new.write_bytes(b"part")
        for part in [*live, new]:
            rows.part_marks(part)
    assert all(read[p.name] == 1 for p in live), read  # read once, kept in use
    assert len(rows._PART_MARKS) <= rows.PARTS_CACHED
