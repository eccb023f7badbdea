"""A dataset's fingerprint: a hash of what decides the tokens a run reads, so that a result
trained on data that has changed since is never taken for current.

What it covers: the bytes of ``train.bin`` and ``val.bin``, and the fields of ``meta.json`` that
say how to read them and what they mean (:data:`META_KEYS`: the tokenizer's name, the vocabulary
size, the token type, the end-of-text token). What it leaves out: the rest of ``meta.json``
(``created_at``, the source documents' names, statistics derived from the tokens), so a dataset
prepared again elsewhere with byte-identical tokens keeps its fingerprint.

Hashing a multi-GB corpus takes seconds, so the fingerprint is cached next to the data
(``.harness-fingerprint.json``, or under ``~/.cache/harness/fingerprints/`` for a folder the user
cannot write), keyed by each file's size, modification time, inode and inode-change time
(ctime): it is recomputed whenever one of them changes. An edit in place changes the ctime even
when the mtime is set back (only the kernel sets ctime), so it is always seen.

Rows written before this fingerprint (versions up to issue 20) recorded the *legacy* one, the
SHA-256 of ``meta.json``, ``train.bin`` and ``val.bin`` whole; :func:`fingerprints` returns both,
so those rows stay current while the dataset's files are unchanged.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from harness.core import env
from harness.core.files import atomic_write_text

FILES = ("meta.json", "train.bin", "val.bin")
"""The files a fingerprint (or its cache key) reads."""
META_KEYS = ("tokenizer", "vocab_size", "dtype", "eot_token")
"""The fields of ``meta.json`` that decide the tokens (how ``*.bin`` is read, what an id means)."""
CACHE = ".harness-fingerprint.json"
"""Name of the cache file in a dataset folder."""
VERSION = 2
"""Version of the cache file's contents (a cache written by another version is recomputed)."""
_BLOCK = 1 << 24  # bytes read at a time


@dataclass(frozen=True, slots=True)
class Fingerprints:
    """A dataset's fingerprint, and the legacy one rows of earlier versions recorded."""

    current: str
    """What a new row records (module docstring)."""
    legacy: str
    """The hash of ``meta.json``, ``train.bin`` and ``val.bin`` whole (rows of earlier
    versions)."""

    def matches(self, recorded: str) -> bool:
        """Whether a row's recorded fingerprint is this dataset's, in either form."""
        return recorded in (self.current, self.legacy)


def _stamps(directory: Path) -> dict[str, list[int]]:
    out = {}
    for name in FILES:
        st = (directory / name).stat()
        out[name] = [st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns]
    return out


def _cache_paths(directory: Path) -> list[Path]:
    key = hashlib.sha256(str(directory.resolve()).encode()).hexdigest()[:16]
    return [directory / CACHE, env.cache_dir() / "fingerprints" / f"{key}.json"]


def _hash(directory: Path) -> Fingerprints:
    """Both fingerprints, in one read of the files."""
    current, legacy = hashlib.sha256(), hashlib.sha256()
    meta_bytes = (directory / "meta.json").read_bytes()
    meta = json.loads(meta_bytes)
    decides = {k: meta[k] for k in META_KEYS if k in meta}
    current.update(json.dumps(decides, sort_keys=True).encode())
    legacy.update(b"meta.json" + meta_bytes)
    for name in ("train.bin", "val.bin"):
        current.update(name.encode())
        legacy.update(name.encode())
        with open(directory / name, "rb") as fh:
            while block := fh.read(_BLOCK):
                current.update(block)
                legacy.update(block)
    return Fingerprints(current.hexdigest()[:16], legacy.hexdigest()[:16])


def fingerprints(directory: Path) -> Fingerprints:
    """The fingerprints of the dataset folder ``directory`` (from the cache when its files are
    unchanged since they were computed)."""
    directory = Path(directory)
    stamps = _stamps(directory)
    for path in _cache_paths(directory):
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            doc = json.loads(path.read_text())
            if doc["version"] == VERSION and doc["stamps"] == stamps:
                return Fingerprints(str(doc["fingerprint"]), str(doc["legacy"]))
    found = _hash(directory)
    text = json.dumps(
        {"version": VERSION, "stamps": stamps, "fingerprint": found.current, "legacy": found.legacy}
    )
    for path in _cache_paths(directory):
        with contextlib.suppress(OSError):  # a read-only folder: the next place
            atomic_write_text(path, text)
            break
    return found


def dataset_fingerprint(directory: Path) -> str:
    """The fingerprint a row trained on the dataset folder ``directory`` records."""
    return fingerprints(directory).current
