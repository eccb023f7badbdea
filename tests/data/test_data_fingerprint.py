"""A dataset's fingerprint covers what decides its tokens, and sees every change of them (issue
20, B12): a dataset prepared again with byte-identical tokens keeps it; ``train.bin`` edited in
place with its mtime set back does not; rows that recorded the legacy fingerprint stay current."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from harness.data.fingerprint import dataset_fingerprint
from harness.launch.inputs import inputs_of, stale_runs
from tests.runs import tiny_run


def _copy(prepared_data: Path, root: Path) -> Path:
    """A copy of the prepared dataset under ``root`` (a data root); returns its folder."""
    folder = root / "classics-bpe8k"
    folder.mkdir(parents=True)
    for name in ("meta.json", "train.bin", "val.bin", "tokenizer.json"):
        shutil.copy2(prepared_data / "classics-bpe8k" / name, folder / name)
    return folder


def _edit_meta(folder: Path, **changes: object) -> None:
    meta = json.loads((folder / "meta.json").read_text())
    (folder / "meta.json").write_text(json.dumps(meta | changes, indent=1) + "\n")


def test_a_dataset_prepared_again_with_the_same_tokens_keeps_its_fingerprint(
    tmp_path, prepared_data
):
    here, there = _copy(prepared_data, tmp_path / "a"), _copy(prepared_data, tmp_path / "b")
    _edit_meta(there, created_at="2030-01-01T00:00:00+00:00", train_docs=1)  # not the tokens
    run = tiny_run(tmp_path / "a")
    recorded = {run.run_id: inputs_of(run, tmp_path / "a")}

    assert dataset_fingerprint(here) == dataset_fingerprint(there)
    assert stale_runs([run], recorded, tmp_path / "b") == []

    _edit_meta(there, tokenizer="another")  # what the ids mean: another dataset
    assert dataset_fingerprint(here) != dataset_fingerprint(there)
    assert [s.changed for s in stale_runs([run], recorded, tmp_path / "b")] == [
        ("data_fingerprint",)
    ]


def test_train_bin_edited_in_place_with_its_mtime_restored_is_seen(tmp_path, prepared_data):
    folder = _copy(prepared_data, tmp_path / "d")
    before = dataset_fingerprint(folder)  # cached next to the data from here on
    train = folder / "train.bin"
    st = train.stat()
    with open(train, "r+b") as fh:  # same size, one token changed, mtime set back
        fh.seek(1000)
        token = fh.read(2)
        fh.seek(1000)
        fh.write(bytes([token[0] ^ 1, token[1]]))
    os.utime(train, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (train.stat().st_size, train.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)

    assert dataset_fingerprint(folder) != before


def _legacy(folder: Path) -> str:
    """The fingerprint earlier versions recorded: meta.json, train.bin and val.bin whole."""
    h = hashlib.sha256()
    for name in ("meta.json", "train.bin", "val.bin"):
        h.update(name.encode())
        h.update((folder / name).read_bytes())
    return h.hexdigest()[:16]


@pytest.mark.parametrize("edited", [False, True])
def test_rows_recording_the_legacy_fingerprint_stay_current_while_the_data_is(
    tmp_path, prepared_data, edited
):
    from harness.data.fingerprint import fingerprints

    folder = _copy(prepared_data, tmp_path / "d")
    run = tiny_run(tmp_path / "d")
    recorded = {run.run_id: {**inputs_of(run, tmp_path / "d"), "data_fingerprint": _legacy(folder)}}
    assert fingerprints(folder).legacy == _legacy(folder)
    if edited:
        (folder / "val.bin").write_bytes((folder / "val.bin").read_bytes()[:-2])

    stale = stale_runs([run], recorded, tmp_path / "d")

    assert [s.changed for s in stale] == ([("data_fingerprint",)] if edited else [])
