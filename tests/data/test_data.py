"""Datasets: corpora, split, tokenizers, prepared files, deterministic batches, user paths."""

from __future__ import annotations

import json
import math
import multiprocessing
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from harness.core.errors import UserError
from harness.data.batches import TokenData
from harness.data.catalogue import (
    DATASETS,
    DEFAULT_DATASET,
    DatasetSpec,
    data_root,
    dataset_vocab_size,
    read_meta,
    resolve_dataset,
)
from harness.data.corpora import CORPORA, Document, load_documents, split_documents, strip_markdown
from harness.data.prepare import dataset_encoder, ensure_prepared, prepare
from harness.data.tokenizers import TOKENIZERS, gpt2_encoder, load_bpe, train_bpe

NAME = "classics-bpe8k"


@pytest.fixture(scope="module")
def ds(prepared_data: Path) -> Path:
    return prepared_data / NAME


@pytest.fixture(scope="module")
def td(ds: Path) -> TokenData:
    return TokenData(ds)


@pytest.fixture(scope="module")
def split() -> tuple[list[Document], list[Document]]:
    return split_documents(load_documents(["kjv", "shakespeare"]))


# --- corpora -----------------------------------------------------------------------------------


def test_corpora_are_clean_whole_works() -> None:
    kjv, plays = CORPORA["kjv"](), CORPORA["shakespeare"]()
    assert len(kjv) == 66 and kjv[0].name == "kjv/Genesis" and kjv[-1].name == "kjv/Revelation"
    assert len(plays) == 38
    assert kjv[0].text.startswith("In the beginning God created the")
    assert not any(re.search(r"\d+:\d+", d.text) for d in kjv)  # verse markers stripped
    for d in plays:
        assert not re.search(r"[*_#\\]", d.text), d.name  # Markdown gone
    hamlet = next(d for d in plays if d.name == "shakespeare/hamlet").text
    assert "HAMLET:\nTo be, or not to be" in hamlet


def test_strip_markdown() -> None:
    md = "# Play\n\n## ACT I\n\n_Enter ADAM_\n\n**ADAM**  \nSir,\\--no \\[Aside]  \n\n\n\n*Exit.*\n"
    assert strip_markdown(md) == "Play\n\nACT I\n\nEnter ADAM\n\nADAM:\nSir,--no [Aside]\n\nExit."


def test_split_holds_out_whole_documents_of_each_source(split) -> None:
    train, val = split
    assert {d.name for d in train}.isdisjoint(d.name for d in val)
    assert len(train) + len(val) == 104
    for source in ("kjv", "shakespeare"):
        total = sum(len(d.text) for d in train + val if d.source == source)
        held = sum(len(d.text) for d in val if d.source == source)
        assert 0.03 < held / total <= 0.05, source
    assert split_documents(train + val) == (train, val)  # deterministic, order-independent
    assert split_documents(list(reversed(train + val)))[1] == list(reversed(val))


# --- tokenizers --------------------------------------------------------------------------------


def test_gpt2_tokenizer_is_exact() -> None:
    enc = gpt2_encoder()
    assert [x.tolist() for x in enc.encode_docs(["hello world"])] == [[31373, 995]]
    assert enc.eot_token == 50256 and enc.vocab_size == 50257 == TOKENIZERS["gpt2"].vocab_size
    assert enc.decode([31373, 995]) == "hello world"


def test_bpe_is_trained_on_the_training_split_only_and_deterministically(ds, split) -> None:
    train, _ = split
    saved = load_bpe(ds)
    again = train_bpe([d.text for d in train], 8192)
    assert again.tok.get_vocab() == saved.tok.get_vocab()
    assert again.tok.to_str() == saved.tok.to_str()
    assert saved.eot_token == 0 and saved.vocab_size == 8192


# --- prepared files ----------------------------------------------------------------------------


def test_meta_describes_the_files(ds: Path, td: TokenData) -> None:
    meta = read_meta(ds)
    keys = {"name", "tokenizer", "vocab_size", "tokenizer_vocab_size", "train_tokens"}
    keys |= {"val_tokens", "dtype", "sources", "train_docs", "val_docs", "eot_token"}
    keys |= {"val_unigram_entropy_nats", "created_at", "val_doc_names"}
    assert keys <= meta.keys()
    assert (meta["name"], meta["tokenizer"], meta["dtype"]) == (NAME, "bpe8k", "uint16")
    assert meta["vocab_size"] == DATASETS[NAME].vocab_size == 8192
    assert meta["train_tokens"] == len(td.train) == (ds / "train.bin").stat().st_size // 2
    assert meta["val_tokens"] == len(td.val)
    assert meta["train_tokens"] > 2_000_000 and 0.03 < meta["val_tokens"] / len(td.train) < 0.07
    assert meta["train_docs"] + meta["val_docs"] == 104
    # documents end with the end-of-text token
    assert td.train[-1] == td.val[-1] == meta["eot_token"]
    assert int((np.asarray(td.val) == meta["eot_token"]).sum()) == meta["val_docs"]
    counts = np.bincount(np.asarray(td.val), minlength=8192)
    p = counts[counts > 0] / counts.sum()
    assert meta["val_unigram_entropy_nats"] == pytest.approx(float(-(p * np.log(p)).sum()))
    assert 4.0 < meta["val_unigram_entropy_nats"] < math.log(8192)


def test_bins_decode_to_exactly_the_split_documents(ds: Path, td: TokenData, split) -> None:
    train, val = split
    enc = dataset_encoder(ds)
    assert int(np.asarray(td.train).max()) < 8192 and td.train.dtype == np.uint16
    val_text = enc.decode(np.asarray(td.val).tolist())
    assert val_text == "".join(d.text + "<|endoftext|>" for d in val)
    train_text = enc.decode(np.asarray(td.train).tolist())
    assert train_text == "".join(d.text + "<|endoftext|>" for d in train)
    for d in val:  # no held-out work's opening appears in training
        assert d.text[:300] not in train_text, d.name


def test_unigram_counts(ds: Path, td: TokenData, tmp_path: Path) -> None:
    counts = td.unigram_counts()
    assert counts.dtype == np.int64 and counts.shape == (8192,)
    assert counts.sum() == read_meta(ds)["train_tokens"]
    np.testing.assert_array_equal(counts, np.bincount(np.asarray(td.train), minlength=8192))
    # a user directory without unigram.npy gets it computed and cached
    user = _user_dataset(tmp_path, td, n_train=50_000)
    assert not (user / "unigram.npy").exists()
    lazy = TokenData(user).unigram_counts()
    assert lazy.sum() == 50_000 and (user / "unigram.npy").is_file()
    np.testing.assert_array_equal(np.load(user / "unigram.npy"), lazy)


# --- batches -----------------------------------------------------------------------------------


def test_batches_are_a_pure_function_of_seed_and_step(td: TokenData) -> None:
    x, y = td.batch(step=7, seed=1, batch_size=8, seq_len=64)
    assert x.shape == y.shape == (8, 64) and x.dtype == y.dtype == torch.int64
    x2, y2 = TokenData(td.dir).batch(step=7, seed=1, batch_size=8, seq_len=64)
    assert torch.equal(x, x2) and torch.equal(y, y2)
    assert torch.equal(x[:, 1:], y[:, :-1])  # targets are the next tokens
    assert not torch.equal(x, td.batch(step=8, seed=1, batch_size=8, seq_len=64)[0])
    assert not torch.equal(x, td.batch(step=7, seed=2, batch_size=8, seq_len=64)[0])
    offsets = np.random.default_rng([1, 7]).integers(0, len(td.train) - 64, size=8)
    for row, o in zip(x, offsets, strict=True):
        np.testing.assert_array_equal(row.numpy(), td.train[o : o + 64])


def test_ranks_partition_the_global_batch(td: TokenData) -> None:
    x, y = td.batch(step=3, seed=0, batch_size=12, seq_len=32)
    parts = [td.batch(3, 0, 12, 32, rank=r, world=4) for r in range(4)]
    assert all(p[0].shape == (3, 32) for p in parts)
    assert torch.equal(torch.cat([p[0] for p in parts]), x)
    assert torch.equal(torch.cat([p[1] for p in parts]), y)


def test_micro_batches_concatenate_to_the_rank_batch(td: TokenData) -> None:
    for rank, world in ((0, 1), (1, 2)):
        x, y = td.batch(5, 9, 16, 32, rank, world)
        micro = list(td.micro_batches(5, 9, 16, 4, 32, rank, world))
        assert len(micro) == 16 // world // 4
        assert torch.equal(torch.cat([m[0] for m in micro]), x)
        assert torch.equal(torch.cat([m[1] for m in micro]), y)


def test_eval_batches_cover_a_fixed_prefix_of_val(td: TokenData) -> None:
    batches = list(td.eval_batches(eval_tokens=1000, seq_len=64, batch_size=4))
    assert [b[0].shape[0] for b in batches] == [4, 4, 4, 3]  # 1000 // 64 = 15 windows
    x = torch.cat([b[0] for b in batches])
    y = torch.cat([b[1] for b in batches])
    np.testing.assert_array_equal(x.flatten().numpy(), td.val[: 15 * 64])
    np.testing.assert_array_equal(y.flatten().numpy(), td.val[1 : 15 * 64 + 1])
    sharded = [torch.cat([b[0] for b in td.eval_batches(1000, 64, 4, r, 2)]) for r in range(2)]
    assert sorted(map(tuple, torch.cat(sharded).tolist())) == sorted(map(tuple, x.tolist()))
    with pytest.raises(UserError, match=r"val.bin has \d+ tokens; eval_tokens 10000000"):
        list(td.eval_batches(10_000_000, 64, 4))


# --- names, paths, user datasets ---------------------------------------------------------------


def _user_dataset(root: Path, td: TokenData, n_train: int, vocab: int = 8192) -> Path:
    user = root / "mine"
    user.mkdir()
    np.asarray(td.train[:n_train]).tofile(user / "train.bin")
    np.asarray(td.val[:5000]).tofile(user / "val.bin")
    (user / "meta.json").write_text(json.dumps({"vocab_size": vocab}))
    return user


def test_user_path_is_validated(tmp_path: Path, td: TokenData) -> None:
    user = _user_dataset(tmp_path, td, n_train=10_000)
    assert resolve_dataset(str(user), tmp_path) == user
    assert dataset_vocab_size(str(user), tmp_path) == 8192
    assert ensure_prepared(str(user), tmp_path) == user
    (user / "val.bin").unlink()
    with pytest.raises(UserError, match=rf"{re.escape(str(user))} lacks val.bin.*classics-bpe8k"):
        resolve_dataset(str(user), tmp_path)
    with pytest.raises(UserError, match=r"does not exist"):
        resolve_dataset(str(tmp_path / "nope"), tmp_path)
    with pytest.raises(UserError, match=r"unknown dataset 'tinystories'; valid choices: classics"):
        resolve_dataset("tinystories", tmp_path)


def test_token_ids_beyond_the_vocabulary_are_refused(tmp_path: Path, td: TokenData) -> None:
    user = _user_dataset(tmp_path, td, n_train=10_000, vocab=100)
    with pytest.raises(UserError, match=r"train.bin: token id \d+ >= vocab_size 100"):
        TokenData(user)


def test_registered_names_resolve_without_preparing(tmp_path: Path) -> None:
    assert resolve_dataset("classics-gpt2", tmp_path) == tmp_path / "classics-gpt2"
    assert dataset_vocab_size("classics-gpt2", tmp_path) == 50304
    assert not (tmp_path / "classics-gpt2").exists()
    assert DEFAULT_DATASET in DATASETS
    for _, spec in DATASETS.items():
        assert spec.vocab_size % 64 == 0
        assert spec.vocab_size >= TOKENIZERS[spec.tokenizer].vocab_size


def test_data_root(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("HARNESS_DATA", raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # one per user, whatever the current folder
    assert data_root() == tmp_path / ".local" / "share" / "harness" / "data"
    monkeypatch.setenv("XDG_DATA_HOME", "/xdg")
    assert data_root() == Path("/xdg/harness/data")
    monkeypatch.setenv("HARNESS_DATA", "/x/y")
    assert data_root() == Path("/x/y")
    assert data_root("/z") == Path("/z")


def _prepare_in_child(name: str, root: str, force: bool) -> None:
    prepare(name, Path(root), force=force)


@pytest.mark.slow
def test_concurrent_prepare_is_safe(tmp_path: Path) -> None:
    # a small registered dataset (the Bible, GPT-2 BPE: ~1 s) built by two processes at once
    spec = DatasetSpec(
        name="kjv-gpt2", sources=("kjv",), tokenizer="gpt2", vocab_size=50304, doc="test"
    )
    with DATASETS.temporarily(spec.name, spec):
        ctx = multiprocessing.get_context("fork")  # the child sees the registered dataset
        procs = [
            ctx.Process(target=_prepare_in_child, args=(spec.name, str(tmp_path), force))
            for force in (False, True)
        ]
        for p in procs:
            p.start()
        for p in procs:
            p.join(120)
        assert [p.exitcode for p in procs] == [0, 0]
        out = prepare(spec.name, tmp_path)  # already there: returns at once
    meta = read_meta(out)
    assert meta["train_docs"] + meta["val_docs"] == 66
    assert TokenData(out).unigram_counts().sum() == meta["train_tokens"]
    leftovers = [p.name for p in tmp_path.iterdir() if p.is_dir() and p.name != spec.name]
    assert leftovers == []
