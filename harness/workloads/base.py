"""What a workload is: a model (its parameters at initialisation), a batch per step that is a
pure function of (seed, step), the training loss, and an evaluation returning named metrics.

The GPT on tokens is the default workload, trained by :mod:`harness.train.loop` itself (a run
whose ``workload`` is None). Any other is a class whose constructor's scalar arguments are its
parameters (grid keys and typed columns, :mod:`harness.workloads.registry`), and which
satisfies :class:`Workload`. Its model's parameters are routed like any model's
(:func:`harness.optim.routing.split_parameters`: >= 2-D weights are ``matrix``, the rest
``vector``); it has no embedding, so optimizers defined on one refuse it
(:func:`harness.workloads.compat.problems`).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

Module = Any
"""A ``torch.nn.Module`` (named, not imported: naming a workload imports no torch)."""
Tensor = Any
"""A ``torch.Tensor``."""


@runtime_checkable
class Workload(Protocol):
    """A workload as the training loop uses it. Losses are in nats (or the objective's units);
    every name :meth:`evaluate` returns is a metric of :mod:`harness.metrics.catalogue`, and
    ``val_loss`` is one of them."""

    def model(self, seed: int) -> Module:
        """The trained parameters at initialisation (the run's seed; the torch RNG is seeded
        with it too)."""
        ...

    def batch(self, seed: int, step: int, size: int) -> Any:
        """What step ``step`` trains on (``size`` = the run's ``batch_size``): a pure function
        of its arguments, so a resumed run sees the same batches."""
        ...

    def loss(self, model: Module, batch: Any) -> Tensor:
        """The training loss on ``batch`` (a scalar; its gradient is what the optimizer sees)."""
        ...

    def evaluate(self, model: Module) -> dict[str, float]:
        """Named metrics of the current parameters, ``val_loss`` among them."""
        ...

    def reference_loss(self, model: Module) -> float:
        """The loss scale of divergence checks: a run whose training loss exceeds
        ``diverge_factor`` times this value at the initial parameters ``model`` diverges."""
        ...


WORKLOAD_METHODS: tuple[str, ...] = tuple(
    name for name, value in vars(Workload).items() if not name.startswith("_") and callable(value)
)
"""The methods of :class:`Workload` (checked when a run builds one)."""
