"""Metrics through training: what a run's ``track:`` names, measured at each evaluation point.

The training loop calls :meth:`Tracker.buckets` before an intermediate evaluation (the
per-token losses of that evaluation fill it) and :meth:`Tracker.measure` after it; the values go
into that curve point, as columns of their metric names. At the end of the run the last point
takes the end-of-run values (:meth:`Tracker.final`). Every value is computed by the same function
as the end-of-run metric (:func:`harness.metrics.embedding.embedding_metrics`,
:class:`harness.metrics.frequency.BucketLosses`), so a tracked value at a point is the end-of-run
metric of the weights at that point. A run that tracks nothing pays nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from harness.core.errors import UserError
from harness.data.batches import TokenData
from harness.metrics.catalogue import TRACK_GROUPS, TRACKABLE
from harness.metrics.embedding import embedding_metrics
from harness.metrics.frequency import BucketLosses, frequency_buckets

_HEAD = "head_"


class Tracker:
    """What one run tracks, with what measuring it needs (computed once)."""

    def __init__(self, names: tuple[str, ...], data: TokenData, device: torch.device) -> None:
        """``names``: the run's ``execution.tracked`` (catalogue names)."""
        if unknown := sorted(set(names) - set(TRACKABLE)):
            raise UserError(f"track: unknown metric(s) {unknown}; valid: {', '.join(TRACKABLE)}")
        self.names = names
        self._embedding = [n for n in names if n in TRACK_GROUPS["embedding"]]
        self._head = [n.removeprefix(_HEAD) for n in names if n in TRACK_GROUPS["head"]]
        self._bucketed = [n for n in names if n in TRACK_GROUPS["buckets"]]
        self._device = device
        self._counts = data.unigram_counts() if self._embedding or self._head else None
        self._map = frequency_buckets(data.unigram_counts()) if self._bucketed else None

    def buckets(self) -> BucketLosses | None:
        """A fresh accumulator for an evaluation's per-token losses; None when no bucket loss
        is tracked."""
        return None if self._map is None else BucketLosses(self._map, self._device)

    def measure(self, model: Any, buckets: BucketLosses | None) -> dict[str, float | None]:
        """The tracked metrics of ``model`` (the unwrapped GPT, ``.embedding``, ``.head``) now,
        and of the evaluation that filled ``buckets``."""
        out: dict[str, float | None] = {}
        counts = self._counts
        if self._embedding:
            assert counts is not None
            out |= embedding_metrics(model.embedding.weight.detach(), counts, self._embedding)
        if self._head:
            assert counts is not None
            head = model.head
            values = (
                embedding_metrics(head.weight.detach(), counts, self._head)
                if head is not None
                else dict.fromkeys(self._head)  # tied: the head is the embedding
            )
            out |= {_HEAD + k: v for k, v in values.items()}
        if buckets is not None:
            result = buckets.result()
            out |= {k: result[k] for k in self._bucketed}
        return {n: out[n] for n in self.names}

    def final(self, metrics: Mapping[str, float | None]) -> dict[str, float | None]:
        """The tracked metrics among a finished run's end-of-run ``metrics``."""
        return {n: metrics.get(n) for n in self.names}
