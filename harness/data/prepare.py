"""Preparation of registered datasets into nanoGPT-style memmaps (``harness data prepare``).

A registered dataset is built from text shipped in packages (:mod:`harness.data.corpora`) and a
tokenizer (:mod:`harness.data.tokenizers`) into ``<data root>/<name>/``: ``train.bin``,
``val.bin``, ``meta.json`` (written last: its presence means the directory is complete),
``unigram.npy`` and, for a trained tokenizer, ``tokenizer.json``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from harness.core.errors import UserError
from harness.core.files import locked
from harness.core.registry import load_object
from harness.data.catalogue import (
    DATASETS,
    DTYPE,
    REQUIRED_FILES,
    DatasetSpec,
    get_dataset,
    read_meta,
    resolve_dataset,
)
from harness.data.corpora import Document, load_documents, split_documents
from harness.data.fingerprint import dataset_fingerprint
from harness.data.tokenizers import Encoder, get_tokenizer


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def prepare(
    name: str, root: Path, force: bool = False, log: Callable[[str], None] | None = _to_stderr
) -> Path:
    """Build registered dataset ``name`` under ``root`` (idempotent) and return its directory;
    ``log`` is told where it was built (the data root is per user: say where it went).

    The dataset is built in a temporary directory beside the target and renamed into place, under
    an exclusive lock on ``root/.<name>.lock``; a concurrent caller waits, then finds it done.
    ``meta.json`` is written last, so its presence means the directory is complete.
    """
    spec = get_dataset(name)
    root = Path(root)
    out = root / name
    if not force and (out / "meta.json").is_file():
        return out
    root.mkdir(parents=True, exist_ok=True)
    with locked(root / f".{name}.lock"):
        if not force and (out / "meta.json").is_file():
            return out  # built by a concurrent caller while we waited
        tmp = Path(tempfile.mkdtemp(prefix=f".{name}.build-", dir=root))
        tmp.chmod(0o755)  # mkdtemp makes it private; the dataset is for everyone
        try:
            if spec.build is None:
                build_dataset(spec, tmp)
            else:
                _build_with(spec, tmp)
            _replace_dir(tmp, out)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    dataset_fingerprint(out)  # computed once here, cached for every later submit
    if log is not None:
        log(f"dataset {name}: prepared in {out}")
    return out


def _build_with(spec: DatasetSpec, out: Path) -> None:
    """Run a user's preparation function into ``out`` and check what it wrote."""
    assert spec.build is not None
    load_object(spec.build)(out)
    missing = [f for f in REQUIRED_FILES if not (out / f).is_file()]
    if missing:
        raise UserError(f"dataset {spec.name}: {spec.build} wrote no {', '.join(missing)}")
    vocab = read_meta(out)["vocab_size"]
    if vocab != spec.vocab_size:
        raise UserError(
            f"dataset {spec.name}: meta.json says vocab_size {vocab}, the registration "
            f"{spec.vocab_size}"
        )


def ensure_prepared(name_or_path: str | os.PathLike[str], root: Path) -> Path:
    """Prepare a registered dataset on first use; check a user directory. Returns the dir."""
    name = str(name_or_path)
    if name in DATASETS:
        return prepare(name, root)
    return resolve_dataset(name, root)


def _replace_dir(src: Path, dst: Path) -> None:
    """Move ``src`` to ``dst``, replacing an existing ``dst`` (old copy removed afterwards)."""
    old = None
    if dst.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{dst.name}.old-", dir=dst.parent))
        dst.rename(old / dst.name)
    src.rename(dst)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def build_dataset(spec: DatasetSpec, out: Path) -> dict[str, Any]:
    """Write ``spec``'s files into the existing directory ``out``; return its meta."""
    docs = load_documents(spec.sources)
    train_docs, val_docs = split_documents(docs, spec.val_frac)
    encoder = get_tokenizer(spec.tokenizer).build([d.text for d in train_docs])
    assert encoder.vocab_size <= spec.vocab_size <= np.iinfo(DTYPE).max + 1
    train = encode_documents(encoder, train_docs)
    val = encode_documents(encoder, val_docs)
    train.tofile(out / "train.bin")
    val.tofile(out / "val.bin")
    np.save(out / "unigram.npy", np.bincount(train, minlength=spec.vocab_size).astype(np.int64))
    encoder.save(out)
    meta = {
        "name": spec.name,
        "tokenizer": spec.tokenizer,
        "vocab_size": spec.vocab_size,
        "tokenizer_vocab_size": encoder.vocab_size,
        "train_tokens": len(train),
        "val_tokens": len(val),
        "dtype": "uint16",
        "sources": list(spec.sources),
        "train_docs": len(train_docs),
        "val_docs": len(val_docs),
        "val_doc_names": [d.name for d in val_docs],
        "eot_token": encoder.eot_token,
        "val_unigram_entropy_nats": unigram_entropy(val, spec.vocab_size),
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    return meta


def encode_documents(encoder: Encoder, docs: list[Document]) -> np.ndarray:
    """Token ids of ``docs``, each followed by the end-of-text token, as one uint16 array."""
    eot = np.array([encoder.eot_token], dtype=np.int64)
    parts = [p for ids in encoder.encode_docs([d.text for d in docs]) for p in (ids, eot)]
    ids = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    assert ids.size == 0 or int(ids.max()) < encoder.vocab_size
    return ids.astype(DTYPE)


def unigram_entropy(tokens: np.ndarray, vocab_size: int) -> float:
    """Entropy (nats/token) of the unigram distribution of ``tokens``."""
    counts = np.bincount(tokens, minlength=vocab_size)
    p = counts[counts > 0] / counts.sum()
    return float(-(p * np.log(p)).sum())


def dataset_encoder(directory: Path) -> Encoder:
    """The tokenizer of a prepared registered dataset (to decode samples)."""
    meta = read_meta(directory)
    if "tokenizer" not in meta:
        raise UserError(f"{directory}/meta.json names no 'tokenizer'")
    return get_tokenizer(str(meta["tokenizer"])).load(Path(directory))
