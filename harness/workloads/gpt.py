"""The GPT on tokens: the default workload (a run whose ``workload`` is None), a
:class:`harness.workloads.base.Trained`.

Its model is built from the run's architecture; step ``step`` trains on ``batch_size`` sequences
that are a pure function of (seed, step), split into micro-batches and across DDP ranks
(:meth:`harness.data.batches.TokenData.micro_batches`); its loss is the cross-entropy of the
logits in float32; it is evaluated on the fixed held-out windows, with the loss per
token-frequency bucket, the embedding metrics and the second-moment probe at the end
(:func:`harness.metrics.final.final_metrics`) and the tracked metrics (``track:``) at each
evaluation point (:class:`harness.workloads.tracking.Tracker`).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from harness.core.config import RunConfig
from harness.core.registry import is_reference
from harness.data.batches import TokenData
from harness.data.catalogue import resolve_dataset
from harness.metrics.final import final_metrics
from harness.metrics.frequency import BucketLosses, frequency_buckets
from harness.model.build import build_model, training_flops_per_token
from harness.model.gpt import cross_entropy
from harness.optim.modes import evaluating
from harness.workloads.base import FinalEvaluation
from harness.workloads.tracking import Tracker


class GPT:
    """The GPT on the run's tokens, bound to one process (``rank`` of ``world``)."""

    def __init__(
        self,
        run: RunConfig,
        data_root: Path,
        device: torch.device,
        autocast: Callable[[], contextlib.AbstractContextManager[None]],
        rank: int = 0,
        world: int = 1,
    ) -> None:
        """``autocast``: the forward pass's autocast context (:meth:`Placement.autocast`)."""
        self.run, self._device, self._autocast = run, device, autocast
        self.rank, self.world = rank, world
        self.data = TokenData(resolve_dataset(run.data.dataset, data_root))
        self.tracker = Tracker(run.execution.tracked, self.data, device)
        self._loss_in_model = not is_reference(run.arch.model)
        """Whether the model is the harness's GPT (:func:`harness.model.build.build_model`),
        whose ``forward(x, y)`` returns the loss; a user's model returns logits only."""

    @property
    def device(self) -> torch.device:
        return self._device

    def build(self) -> torch.nn.Module:
        model: torch.nn.Module = build_model(self.run.arch, self.run.data.seq_len)
        return model.to(self._device)

    def reference_loss(self, model: torch.nn.Module) -> float:
        """``ln(V)``, a uniform prediction's loss."""
        return math.log(self.run.arch.vocab_size)

    def micro_batches(self, step: int) -> list[Any]:
        """(inputs, targets) pairs."""
        data = self.run.data
        return list(
            self.data.micro_batches(
                step,
                self.run.execution.seed,
                data.batch_size,
                data.micro_batch_size,
                data.seq_len,
                self.rank,
                self.world,
            )
        )

    def loss(self, forward: torch.nn.Module, micro: Any) -> torch.Tensor:
        x, y = micro
        x, y = self._to_device(x), self._to_device(y)
        with self._autocast():
            if self._loss_in_model:  # the same float32 cross-entropy, inside the model as the
                # bare loop of benchmarks/throughput.py has it: compiled, part of the model's
                # graph rather than an eager pass over (B, T, V) float32 logits (RESULTS §13)
                loss: torch.Tensor = forward(x, y)
                return loss
            return cross_entropy(forward(x), y, "mean")  # logits (B, T, V), in float32

    def evaluate(
        self, model: torch.nn.Module, forward: torch.nn.Module, optimizer: torch.optim.Optimizer
    ) -> tuple[float, dict[str, float | None]]:
        buckets = self.tracker.buckets()
        val = self._held_out(model, forward, optimizer, buckets)
        return val, self.tracker.measure(model, buckets)

    def final(
        self,
        model: torch.nn.Module,
        forward: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        keep: Callable[[], None],
    ) -> FinalEvaluation:
        buckets = BucketLosses(frequency_buckets(self.data.unigram_counts()), self._device)
        val = self._held_out(model, forward, optimizer, buckets)
        with evaluating(optimizer):  # the embedding metrics of the evaluated point
            metrics = final_metrics(model, optimizer, self.data)
            if math.isfinite(val):
                keep()
        if not math.isfinite(val):
            return FinalEvaluation(val, metrics, {})
        metrics |= {"val_loss": val, "val_ppl": math.exp(val), **buckets.result()}
        return FinalEvaluation(val, metrics, self.tracker.final(metrics))

    def flops_per_token(self) -> float | None:
        return training_flops_per_token(self.run.arch, self.run.data.seq_len)

    @torch.no_grad()
    def _held_out(
        self,
        model: torch.nn.Module,
        forward: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        buckets: BucketLosses | None,
    ) -> float:
        """Mean loss over the fixed held-out tokens (the same windows for every run); with
        ``buckets``, also each token's loss added to its target's frequency bucket."""
        data = self.run.data
        model.eval()
        total = torch.zeros((), device=self._device, dtype=torch.float64)
        count = 0
        with evaluating(optimizer):  # schedule-free: at the evaluated point
            for x, y in self.data.eval_batches(
                data.eval_tokens, data.seq_len, data.micro_batch_size
            ):
                x, y = self._to_device(x), self._to_device(y)
                with self._autocast():
                    per_token = cross_entropy(forward(x), y, "none")  # (B * T,)
                if buckets is not None:
                    buckets.add(per_token, y)
                loss = per_token.mean()
                total += loss.double() * y.numel()
                count += y.numel()
        model.train()
        return (total / count).item()

    def _to_device(self, t: torch.Tensor) -> torch.Tensor:
        """Host batch -> device; on CUDA through pinned memory, so the copy is asynchronous."""
        if self._device.type != "cuda":
            return t
        return t.pin_memory().to(self._device, non_blocking=True)
