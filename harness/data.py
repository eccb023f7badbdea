"""Token datasets: the registry, preparation into nanoGPT-style memmaps, and batches.

A prepared dataset is a directory holding

- ``train.bin``, ``val.bin``: token ids as a flat uint16 array, documents each followed by the
  end-of-text token;
- ``meta.json``: ``name``, ``tokenizer``, ``vocab_size`` (the model's, possibly padded),
  ``tokenizer_vocab_size``, ``train_tokens``, ``val_tokens``, ``dtype``, ``sources``,
  ``train_docs``, ``val_docs`` (counts), ``val_doc_names``, ``eot_token``,
  ``val_unigram_entropy_nats`` (entropy of the validation tokens' unigram distribution, the loss
  of a model that learned only token frequencies), ``created_at``;
- ``unigram.npy``: int64 count of each token id in the training split (length ``vocab_size``);
- ``tokenizer.json`` when the tokenizer was trained for the dataset.

A user's own dataset directory needs only ``train.bin``, ``val.bin`` and a ``meta.json`` with
``vocab_size``; ``unigram.npy`` is computed on first use.

Batches are a pure function of ``(seed, step)``: resuming at step k needs no data state, and the
ranks of a DDP run take disjoint slices of the same global batch.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from harness.corpora import Document, load_documents, split_documents
from harness.errors import UserError, unknown_choice
from harness.fsutil import locked
from harness.tokenizers import Encoder, get_tokenizer

if TYPE_CHECKING:  # torch is imported where batches are made: planning a grid needs no torch
    import torch

DATA_ENV = "HARNESS_DATA"
"""Environment variable naming the data root."""

REQUIRED_FILES = ("train.bin", "val.bin", "meta.json")
"""Files every dataset directory must hold."""

DTYPE = np.uint16
"""On-disk token dtype (every registered tokenizer has fewer than 65,536 ids)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class DatasetSpec:
    """A registered dataset: which texts, which tokenizer."""

    name: str
    """Registry key; also the directory name under the data root."""
    sources: tuple[str, ...]
    """Corpora (``harness.corpora.CORPORA`` keys) whose documents it holds."""
    tokenizer: str
    """Tokenizer name (``harness.tokenizers.TOKENIZERS`` key)."""
    vocab_size: int
    """The model's vocabulary: the tokenizer's, padded up to a multiple of 64."""
    doc: str
    """One line for listings."""
    val_frac: float = 0.05
    """Fraction of each source's characters held out for validation, as whole documents."""


_CLASSICS = ("kjv", "shakespeare")

#: Datasets: name -> spec.
DATASETS: dict[str, DatasetSpec] = {
    "classics-bpe8k": DatasetSpec(
        name="classics-bpe8k",
        sources=_CLASSICS,
        tokenizer="bpe8k",
        vocab_size=8192,
        doc="King James Bible + Shakespeare (9 MB), own byte-level BPE 8192; laptop default",
    ),
    "classics-gpt2": DatasetSpec(
        name="classics-gpt2",
        sources=_CLASSICS,
        tokenizer="gpt2",
        vocab_size=50304,
        doc="King James Bible + Shakespeare, GPT-2 BPE (50,257 padded to 50,304): rare tokens",
    ),
}

DEFAULT_DATASET = "classics-bpe8k"
"""The dataset a grid uses when it names none."""


def data_root(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The data root: ``explicit`` > ``$HARNESS_DATA`` > ``./data``."""
    if explicit:
        return Path(explicit)
    return Path(os.environ.get(DATA_ENV) or "data")


def get_dataset(name: str) -> DatasetSpec:
    """The registered dataset ``name``; UserError listing the valid names otherwise."""
    if name not in DATASETS:
        raise unknown_choice("dataset", name, DATASETS)
    return DATASETS[name]


def resolve_dataset(name_or_path: str | os.PathLike[str], root: Path) -> Path:
    """The directory of a dataset: ``root/<name>`` for a registered name (maybe not prepared
    yet), else the given directory, which must hold train.bin, val.bin and meta.json.

    Raises:
        UserError: an unknown name, a missing directory, or missing files (all named).
    """
    name = str(name_or_path)
    if name in DATASETS:
        return Path(root) / name
    path = Path(name).expanduser()
    if "/" not in name and not path.is_dir():
        raise UserError(
            f"{unknown_choice('dataset', name, DATASETS)} (or a directory holding "
            f"{', '.join(REQUIRED_FILES)})"
        )
    registered = ", ".join(sorted(DATASETS))
    if not path.is_dir():
        raise UserError(f"dataset directory {path} does not exist (registered: {registered})")
    missing = [f for f in REQUIRED_FILES if not (path / f).is_file()]
    if missing:
        raise UserError(
            f"dataset directory {path} lacks {', '.join(missing)}; it needs "
            f"{', '.join(REQUIRED_FILES)} (or use a registered dataset: {registered})"
        )
    return path


def read_meta(directory: Path) -> dict[str, Any]:
    """The ``meta.json`` of a dataset directory, checked to carry an integer ``vocab_size``."""
    path = Path(directory) / "meta.json"
    try:
        meta = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise UserError(f"cannot read {path}: {e}") from None
    v = meta.get("vocab_size") if isinstance(meta, dict) else None
    if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
        raise UserError(f"{path}: needs a positive integer 'vocab_size', got {v!r}")
    if meta.get("dtype", "uint16") != "uint16":
        raise UserError(f"{path}: dtype {meta['dtype']!r} is not supported; valid: uint16")
    return meta


def dataset_vocab_size(name_or_path: str | os.PathLike[str], root: Path) -> int:
    """The model vocabulary of a dataset, without preparing it."""
    name = str(name_or_path)
    if name in DATASETS:
        return DATASETS[name].vocab_size
    return int(read_meta(resolve_dataset(name, root))["vocab_size"])


# --- preparation -------------------------------------------------------------------------------


def prepare(name: str, root: Path, force: bool = False) -> Path:
    """Build registered dataset ``name`` under ``root`` (idempotent) and return its directory.

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
            build_dataset(spec, tmp)
            _replace_dir(tmp, out)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return out


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


# --- batches -----------------------------------------------------------------------------------

_CHUNK = 1 << 24  # tokens per chunk when scanning train.bin


class TokenData:
    """Memory-mapped train/val tokens of one dataset directory, and deterministic batches."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.dir = Path(directory)
        self.meta = read_meta(self.dir)
        self.vocab_size = int(self.meta["vocab_size"])
        self.train = self._open("train.bin")
        self.val = self._open("val.bin")
        self._unigram: np.ndarray | None = None
        self._check_ids()

    @classmethod
    def open(cls, name_or_path: str | os.PathLike[str], root: Path) -> TokenData:
        """Open a dataset by registered name (prepared on first use) or directory."""
        return cls(ensure_prepared(name_or_path, root))

    def _open(self, fname: str) -> np.ndarray:
        path = self.dir / fname
        size = path.stat().st_size if path.is_file() else 0
        if size < 2 * DTYPE().itemsize or size % DTYPE().itemsize:
            raise UserError(f"{path}: expected a non-empty flat uint16 array, got {size} bytes")
        return np.memmap(path, dtype=DTYPE, mode="r")

    def _check_ids(self) -> None:
        """Token ids must be < vocab_size; checks each file's head and 4,096 spread-out ids
        (cheap on a multi-GB file: the full check happens when unigram counts are computed)."""
        for name, arr in (("train.bin", self.train), ("val.bin", self.val)):
            spread = np.linspace(0, len(arr) - 1, num=4096, dtype=np.int64)
            top = int(max(arr[spread].max(), arr[: 1 << 20].max()))
            if top >= self.vocab_size:
                raise UserError(
                    f"{self.dir / name}: token id {top} >= vocab_size {self.vocab_size} "
                    "of meta.json"
                )

    def batch(
        self, step: int, seed: int, batch_size: int, seq_len: int, rank: int = 0, world: int = 1
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """This rank's rows of the global training batch of ``step``: (x, y) int64 (B/world, T).

        The global batch is ``batch_size`` windows at offsets drawn by
        ``np.random.default_rng([seed, step])``; rank r takes the contiguous rows
        ``[r * B/world, (r+1) * B/world)``; y is x shifted by one token.
        """
        assert batch_size % world == 0 and 0 <= rank < world, (batch_size, rank, world)
        n_offsets = len(self.train) - seq_len  # window [o, o + T] needs o + T < len
        if n_offsets < 1:
            raise UserError(f"{self.dir}/train.bin has {len(self.train)} tokens < seq_len + 1")
        offsets = np.random.default_rng([seed, step]).integers(0, n_offsets, size=batch_size)
        local = batch_size // world
        return _windows(self.train, offsets[rank * local : (rank + 1) * local], seq_len)

    def micro_batches(
        self,
        step: int,
        seed: int,
        batch_size: int,
        micro_batch_size: int,
        seq_len: int,
        rank: int = 0,
        world: int = 1,
    ) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """This rank's part of ``batch(step, ...)`` in consecutive chunks of
        ``micro_batch_size`` rows (gradient accumulation), in order."""
        x, y = self.batch(step, seed, batch_size, seq_len, rank, world)
        assert x.size(0) % micro_batch_size == 0, (x.size(0), micro_batch_size)
        for i in range(0, x.size(0), micro_batch_size):
            yield x[i : i + micro_batch_size], y[i : i + micro_batch_size]

    def eval_windows(self, eval_tokens: int, seq_len: int) -> int:
        """Number of evaluation windows: ``eval_tokens // seq_len`` (UserError if val is short)."""
        n = eval_tokens // seq_len
        if n < 1:
            raise UserError(f"eval_tokens {eval_tokens} is less than one sequence ({seq_len})")
        if n * seq_len + 1 > len(self.val):
            raise UserError(
                f"{self.dir}/val.bin has {len(self.val)} tokens; eval_tokens {eval_tokens} at "
                f"seq_len {seq_len} needs {n * seq_len + 1}; lower eval_tokens"
            )
        return n

    def eval_batches(
        self, eval_tokens: int, seq_len: int, batch_size: int, rank: int = 0, world: int = 1
    ) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """(x, y) batches over the fixed prefix of val.bin: window i covers tokens
        ``[i*T, (i+1)*T]`` for i < ``eval_windows``; rank r evaluates windows r, r + world, ...
        (the union over ranks is the same for every run)."""
        starts = np.arange(self.eval_windows(eval_tokens, seq_len))[rank::world] * seq_len
        for i in range(0, len(starts), batch_size):
            yield _windows(self.val, starts[i : i + batch_size], seq_len)

    def unigram_counts(self) -> np.ndarray:
        """int64 count of each token id (length vocab_size) in train.bin; computed and cached to
        ``unigram.npy`` when absent (a read-only directory just skips the cache)."""
        if self._unigram is None:
            path = self.dir / "unigram.npy"
            counts = np.load(path) if path.is_file() else None
            if counts is None or counts.shape != (self.vocab_size,):
                counts = self._count_train()
                _save_quietly(path, counts)
            self._unigram = counts
        return self._unigram

    def _count_train(self) -> np.ndarray:
        counts = np.zeros(self.vocab_size, dtype=np.int64)
        for i in range(0, len(self.train), _CHUNK):
            c = np.bincount(self.train[i : i + _CHUNK], minlength=self.vocab_size)
            if len(c) > self.vocab_size:
                raise UserError(f"{self.dir}/train.bin holds ids >= vocab_size {self.vocab_size}")
            counts += c
        return counts


def _windows(data: np.ndarray, offsets: np.ndarray, seq_len: int) -> tuple[torch.Tensor, ...]:
    """x = data[o : o+T], y = data[o+1 : o+T+1] for each offset; int64 tensors (len, T)."""
    import torch

    buf = np.stack([data[o : o + seq_len + 1] for o in offsets]).astype(np.int64)  # (B, T+1)
    return torch.from_numpy(buf[:, :-1].copy()), torch.from_numpy(buf[:, 1:].copy())


def _save_quietly(path: Path, arr: np.ndarray) -> None:
    """Atomically save ``arr`` to ``path``; skip silently where the directory is not writable."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=".unigram-", suffix=".npy", dir=path.parent)
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as f:
            np.save(f, arr)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except OSError:
        Path(tmp).unlink(missing_ok=True)
