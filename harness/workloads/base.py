"""What a workload is: a model (its parameters at initialisation), a batch per step that is a
pure function of (seed, step), the training loss, and an evaluation returning named metrics.

The training loop trains a :class:`Trained`: a workload bound to one run and one process. The
GPT on tokens (:class:`harness.workloads.gpt.GPT`) is the default one (a run whose ``workload``
is None) and is a :class:`Trained` itself, since it needs what a toy does not (micro-batches, DDP
ranks, autocast, tracked metrics, FLOPs). Any other workload is a class whose constructor's
scalar arguments are its parameters (grid keys and typed columns,
:mod:`harness.workloads.registry`), and which satisfies :class:`Workload`. Its model's
parameters are routed like any model's (:func:`harness.optim.routing.split_parameters`: >= 2-D
weights are ``matrix``, the rest ``vector``); it has no embedding, so optimizers defined on one
refuse it (:func:`harness.workloads.compat.problems`); :class:`harness.workloads.bound.Bound`
makes it a :class:`Trained`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

Module = Any
"""A ``torch.nn.Module`` (named, not imported: naming a workload imports no torch)."""
Tensor = Any
"""A ``torch.Tensor``."""
Device = Any
"""A ``torch.device``."""
Optimizer = Any
"""A ``torch.optim.Optimizer`` (schedule-free ones are evaluated in eval mode:
:func:`harness.optim.modes.evaluating`)."""


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


@dataclass(frozen=True, slots=True)
class FinalEvaluation:
    """What a :class:`Trained` measures at the end of a run."""

    val_loss: float | None
    """The held-out loss; a non-finite (or None) one makes the run ``diverged``."""
    metrics: dict[str, float | None]
    """The row's metrics (catalogue names), whatever the run's status."""
    tracked: dict[str, float | None]
    """The tracked metrics (``track:``) of the curve's last point."""


class Trained(Protocol):
    """A workload as :mod:`harness.train.loop` trains it, bound to one run and one process.

    Per optimizer step the loop sets the lr, takes :meth:`micro_batches`, accumulates the
    gradient of :meth:`loss` over them (each divided by their number; DDP synchronises on the
    last), clips and steps. ``model`` is what :meth:`build` returned; ``forward`` is how the loop
    calls it (wrapped in DDP and/or compiled, or the model itself).
    """

    @property
    def device(self) -> Device:
        """Where the model, the losses and the loop's accumulators live."""
        ...

    def build(self) -> Module:
        """The model at initialisation, on :attr:`device` (the loop seeded every RNG with the
        run's seed just before)."""
        ...

    def reference_loss(self, model: Module) -> float:
        """The loss scale of divergence checks (``diverge_factor`` times it), at the initial
        parameters ``model``."""
        ...

    def micro_batches(self, step: int) -> list[Any]:
        """This process's micro-batches of step ``step``: a pure function of (seed, step), so a
        resumed run sees the same batches (no sampler state to checkpoint)."""
        ...

    def loss(self, forward: Module, micro: Any) -> Tensor:
        """The mean training loss of one micro-batch (a scalar with a gradient)."""
        ...

    def evaluate(
        self, model: Module, forward: Module, optimizer: Optimizer
    ) -> tuple[float, dict[str, float | None]]:
        """At an evaluation point: the held-out loss and the run's tracked metrics."""
        ...

    def final(
        self, model: Module, forward: Module, optimizer: Optimizer, keep: Callable[[], None]
    ) -> FinalEvaluation:
        """At the end of a run: its evaluation; calls ``keep`` (which writes the final weights
        where the run asks for them) at the evaluated point when the held-out loss is finite,
        if the workload's weights are worth keeping."""
        ...

    def flops_per_token(self) -> float | None:
        """Training FLOPs per token of one forward and backward pass (None: not counted; no
        ``mfu`` or ``train_flops``)."""
        ...
