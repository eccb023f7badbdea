"""A dataset's fingerprint: a hash of its contents, so that a result trained on data that has
changed since is never taken for current.

The fingerprint is the SHA-256 (16 hex digits) of ``meta.json``, ``train.bin`` and ``val.bin``.
Hashing a multi-GB corpus takes seconds, so it is cached next to the data
(``.harness-fingerprint.json``, or under ``~/.cache/harness/fingerprints/`` for a folder the
user cannot write) together with each file's size and modification time: it is recomputed only
when one of them changes.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from pathlib import Path

from harness.core import env
from harness.core.files import atomic_write_text

FILES = ("meta.json", "train.bin", "val.bin")
"""The files whose contents a fingerprint covers."""
CACHE = ".harness-fingerprint.json"
"""Name of the cache file in a dataset folder."""
_BLOCK = 1 << 24  # bytes read at a time


def _stamps(directory: Path) -> dict[str, list[int]]:
    out = {}
    for name in FILES:
        st = (directory / name).stat()
        out[name] = [st.st_size, st.st_mtime_ns]
    return out


def _cache_paths(directory: Path) -> list[Path]:
    key = hashlib.sha256(str(directory.resolve()).encode()).hexdigest()[:16]
    return [directory / CACHE, env.cache_dir() / "fingerprints" / f"{key}.json"]


def _hash(directory: Path) -> str:
    h = hashlib.sha256()
    for name in FILES:
        h.update(name.encode())
        with open(directory / name, "rb") as fh:
            while block := fh.read(_BLOCK):
                h.update(block)
    return h.hexdigest()[:16]


def dataset_fingerprint(directory: Path) -> str:
    """The fingerprint of the dataset folder ``directory`` (from the cache when its files are
    unchanged since it was computed)."""
    directory = Path(directory)
    stamps = _stamps(directory)
    for path in _cache_paths(directory):
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            doc = json.loads(path.read_text())
            if doc["stamps"] == stamps:
                return str(doc["fingerprint"])
    fingerprint = _hash(directory)
    text = json.dumps({"stamps": stamps, "fingerprint": fingerprint})
    for path in _cache_paths(directory):
        with contextlib.suppress(OSError):  # a read-only folder: the next place
            atomic_write_text(path, text)
            break
    return fingerprint
