"""Token datasets: the registry of datasets and what a dataset directory holds.

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

Preparation is in :mod:`harness.data.prepare`, batches in :mod:`harness.data.batches`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from harness.core import env
from harness.core.catalogue import default
from harness.core.errors import UserError, unknown_choice
from harness.core.registry import Registry, load_object

REQUIRED_FILES = ("train.bin", "val.bin", "meta.json")
"""Files every dataset directory must hold."""

DTYPE = np.uint16
"""On-disk token dtype (every registered tokenizer has fewer than 65,536 ids)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class DatasetSpec:
    """A registered dataset: which texts and which tokenizer, or a preparation function."""

    name: str
    """Registry key; also the directory name under the data root."""
    vocab_size: int
    """The model's vocabulary: the tokenizer's, padded up to a multiple of 64."""
    doc: str
    """One line for listings."""
    sources: tuple[str, ...] = ()
    """Corpora (``harness.data.corpora.CORPORA`` keys) whose documents it holds."""
    tokenizer: str = ""
    """Tokenizer name (``harness.data.tokenizers.TOKENIZERS`` key)."""
    val_frac: float = 0.05
    """Fraction of each source's characters held out for validation, as whole documents."""
    build: str | None = None
    """A preparation function of the user's (``module:function``) used instead of sources and
    tokenizer: called with an empty directory, it writes ``train.bin``, ``val.bin`` (uint16 token
    ids) and ``meta.json`` (with ``vocab_size``) into it."""


_CLASSICS = ("kjv", "shakespeare")

ENTRY_POINTS = "harness.datasets"
"""Entry-point group under which installed packages offer datasets (each a ``DatasetSpec``)."""


def _entry_points() -> dict[str, DatasetSpec]:
    found = {}
    for ep in metadata.entry_points(group=ENTRY_POINTS):
        spec = load_object(ep.value)
        if not isinstance(spec, DatasetSpec):
            raise UserError(f"entry point {ep.name} = {ep.value}: not a DatasetSpec")
        found[ep.name] = spec
    return found


DATASETS: Registry[DatasetSpec] = Registry(
    "dataset",
    {
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
    },
    discover=_entry_points,
)
"""Registered datasets: name -> spec."""

DEFAULT_DATASET: str = default("dataset")
"""The dataset a grid uses when it names none (the ``dataset`` field's default)."""


def data_root(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The data root: ``explicit`` > ``$HARNESS_DATA`` > the user's data home
    (:func:`harness.core.env.data_home`, one per user: the same from every folder)."""
    root = Path(explicit) if explicit else Path(env.DATA.get() or env.data_home())
    if root.exists() and not root.is_dir():
        given = "--data" if explicit else env.DATA.name if env.DATA.get() else "the data home"
        raise UserError(f"{given}: {root} is not a folder; give a folder for prepared datasets")
    return root


def get_dataset(name: str) -> DatasetSpec:
    """The registered dataset ``name``; UserError listing the valid names otherwise."""
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
    if not isinstance(meta, dict) or not isinstance(v, int) or isinstance(v, bool) or v <= 0:
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


def vocab_lookup(root: Path) -> Callable[[str], int]:
    """``dataset -> vocabulary size`` for datasets under ``root`` (what grid loading needs)."""
    return lambda name: dataset_vocab_size(name, root)
