"""Validation loss by token-frequency bucket: where in the vocabulary an optimizer loses.

The talk's hypothesis for the Adam-SGD gap is heavy-tailed class imbalance (Kunstner et al.,
"Heavy-Tailed Class Imbalance and Why Adam Outperforms Gradient Descent on Language Models"):
SGD makes slow progress on rare tokens. Following Kunstner et al., token types are sorted by
their count in the *training* split and cut into ``FREQUENCY_BUCKETS`` groups that each hold an
equal share of the training tokens: bucket 1 is the few most frequent types that make up the
first quarter of the training text, bucket 4 the long tail (thousands of rare types, and every
type never seen in training). The buckets depend on the dataset only, so they are the same for
every run on it. ``val_loss_qk`` is the mean validation loss over the validation positions whose
*target* token falls in bucket k (NULL when none does).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from harness.metrics.catalogue import FREQUENCY_BUCKETS

BUCKET_METRICS = tuple(f"val_loss_q{k + 1}" for k in range(FREQUENCY_BUCKETS))
"""Keys of :func:`bucket_losses` (declared in :mod:`harness.metrics.catalogue`)."""


def frequency_buckets(counts: np.ndarray, n: int = FREQUENCY_BUCKETS) -> np.ndarray:
    """The bucket (0 = most frequent .. n - 1 = rarest) of every token id.

    Types are sorted by training count, most frequent first (ties by id); a type's bucket is
    ``floor(n * share)``, where ``share`` is the fraction of training tokens held by the types
    before it, so bucket k starts where the cumulative share passes k / n. Types never seen in
    training (count 0) come last: bucket n - 1.

    Args:
        counts: ``(V,)`` training count of each token id.
        n: number of buckets.

    Returns:
        ``(V,)`` int64 bucket of each token id.
    """
    counts = np.asarray(counts, dtype=np.int64)
    total = int(counts.sum())
    order = np.argsort(-counts, kind="stable")  # (V,) ids, most frequent first
    before = np.concatenate([[0], np.cumsum(counts[order])[:-1]])  # tokens of the types before
    share = before / total if total > 0 else np.zeros(len(counts))
    buckets = np.empty(len(counts), dtype=np.int64)
    buckets[order] = np.minimum((share * n).astype(np.int64), n - 1)
    return buckets


class BucketLosses:
    """Accumulates per-token losses by the bucket of their target token."""

    def __init__(self, buckets: np.ndarray, device: torch.device) -> None:
        self.buckets = torch.as_tensor(buckets, device=device)  # (V,)
        self.sums = torch.zeros(FREQUENCY_BUCKETS, dtype=torch.float64, device=device)
        self.counts = torch.zeros(FREQUENCY_BUCKETS, dtype=torch.float64, device=device)

    def add(self, losses: Tensor, targets: Tensor) -> None:
        """Add per-token ``losses`` (any shape) whose target ids are ``targets`` (same shape)."""
        b = self.buckets[targets.reshape(-1)]  # (N,)
        n = len(self.sums)
        self.sums += torch.bincount(b, weights=losses.reshape(-1).double(), minlength=n)
        self.counts += torch.bincount(b, minlength=n).double()

    def result(self) -> dict[str, float | None]:
        """``{val_loss_q1: mean loss of bucket 1, ...}``; None for a bucket with no targets."""
        sums, counts = self.sums.tolist(), self.counts.tolist()
        return {
            name: (s / c if c > 0 else None)
            for name, s, c in zip(BUCKET_METRICS, sums, counts, strict=True)
        }
