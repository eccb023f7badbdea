"""Deterministic batches of a prepared dataset directory.

Batches are a pure function of ``(seed, step)``: resuming at step k needs no data state, and the
ranks of a DDP run take disjoint slices of the same global batch.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from harness.core.errors import UserError
from harness.core.files import atomic_write
from harness.data.catalogue import DTYPE, read_meta

if TYPE_CHECKING:  # torch is imported where batches are made: planning a grid needs no torch
    import torch

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


def _windows(
    data: np.ndarray, offsets: np.ndarray, seq_len: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """x = data[o : o+T], y = data[o+1 : o+T+1] for each offset; int64 tensors (len, T)."""
    import torch

    buf = np.stack([data[o : o + seq_len + 1] for o in offsets]).astype(np.int64)  # (B, T+1)
    return torch.from_numpy(buf[:, :-1].copy()), torch.from_numpy(buf[:, 1:].copy())


def _save_quietly(path: Path, arr: np.ndarray) -> None:
    """Atomically save ``arr`` to ``path``; skip silently where the directory is not writable."""
    with contextlib.suppress(OSError):
        atomic_write(path, lambda fh: np.save(fh, arr))
