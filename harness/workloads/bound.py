"""What a run trains, bound to its process: :func:`bind` gives the loop a
:class:`harness.workloads.base.Trained`, the GPT (:data:`harness.workloads.registry.DEFAULT`)
when the run names no workload, else its :class:`harness.workloads.base.Workload` wrapped in
:class:`Bound`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from harness.core.config import RunConfig
from harness.core.errors import UserError
from harness.core.registry import load_object
from harness.optim.modes import evaluating
from harness.optim.routing import split_parameters
from harness.workloads.base import FinalEvaluation, Trained, Workload
from harness.workloads.compat import problem
from harness.workloads.registry import DEFAULT, get_workload


def bind(
    run: RunConfig,
    data_root: Path,
    device: torch.device,
    autocast: Callable[[], contextlib.AbstractContextManager[None]],
    rank: int,
    world: int,
) -> Trained:
    """The workload ``run`` trains, in process ``rank`` of ``world`` on ``device``.

    Raises:
        UserError: a workload other than the GPT in more than one process.
    """
    if run.arch.workload is None:
        gpt: Trained = load_object(DEFAULT)(run, data_root, device, autocast, rank, world)
        return gpt
    if world > 1:
        raise UserError(f"workload {run.arch.workload!r} runs in one process")
    spec = get_workload(str(run.arch.workload))
    return Bound(spec.build(run.optim.hyperparameters.as_dict()), run)


class Bound:
    """A :class:`Workload` as the loop trains it: on the CPU, one micro-batch per step (its
    ``batch``), its model neither wrapped nor compiled, evaluated by its ``evaluate``; an
    optimizer that cannot train its model is refused when it is built."""

    def __init__(self, workload: Workload, run: RunConfig) -> None:
        self.workload, self.run = workload, run
        self._model: Any = None

    @property
    def device(self) -> torch.device:
        return torch.device("cpu")

    def build(self) -> Any:
        run = self.run
        model = self._model = self.workload.model(run.execution.seed)
        present = [g for g, ps in split_parameters(model).items() if ps]
        why = problem(run, present)
        if why is not None:
            raise UserError(why)
        return model

    def reference_loss(self, model: Any) -> float:
        return self.workload.reference_loss(model)

    def micro_batches(self, step: int) -> list[Any]:
        return [self.workload.batch(self.run.execution.seed, step, self.run.data.batch_size)]

    def loss(self, forward: Any, micro: Any) -> Any:
        return self.workload.loss(self._model, micro)  # the model itself, never wrapped

    def evaluate(
        self, model: Any, forward: Any, optimizer: Any
    ) -> tuple[float, dict[str, float | None]]:
        metrics = self._measure(model, optimizer)
        return metrics["val_loss"], self._tracked(metrics)

    def final(
        self, model: Any, forward: Any, optimizer: Any, keep: Callable[[], None]
    ) -> FinalEvaluation:
        """Nothing kept: a toy's weights are not evaluated downstream."""
        metrics: dict[str, float | None] = dict(self._measure(model, optimizer))
        return FinalEvaluation(metrics["val_loss"], metrics, self._tracked(metrics))

    def flops_per_token(self) -> float | None:
        return None

    def _measure(self, model: Any, optimizer: Any) -> dict[str, float]:
        with evaluating(optimizer):  # schedule-free: at the evaluated point
            return self.workload.evaluate(model)

    def _tracked(self, metrics: dict[str, Any]) -> dict[str, float | None]:
        return {n: metrics.get(n) for n in self.run.execution.tracked}
