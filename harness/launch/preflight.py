"""The preflight: before a run is queued, each distinct optimizer configuration of a grid is built
on its run's model, on the CPU, and takes one step on a tiny batch, so that a constructor or a
step that fails (a tuple cut short, a wrong type) is one line at submit time, not a failed run
per configuration after each run's start-up.

A configuration is what the optimizer's construction depends on: the optimizer(s), every
optimizer field but the schedule (``lr`` and the schedule fields do not change what is built),
its own hyperparameters, and the model. The model is the run's real one, every layer, when it
has at most ``REAL_MODEL_BUDGET`` parameters (counted without building it,
:func:`harness.model.architecture.param_count`: the 124m and 160m presets are real); a larger
preset is built with one block (every matrix keeps its real shape; a 760M model with an optimizer's
state would not fit a login node's memory), and the preflight's line says so. A user's model
(``my_model.py:build``) is built as its builder makes it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any

from harness.core.catalogue import PER_OPTIMIZER
from harness.core.config import Architecture, RunConfig
from harness.core.errors import UserError
from harness.core.registry import is_reference
from harness.model.architecture import param_count
from harness.workloads.compat import problem
from harness.workloads.registry import get_workload

REAL_MODEL_BUDGET = 400_000_000
"""Most parameters of a model the preflight builds whole; a larger preset gets one block."""

SCHEDULE_FIELDS = ("lr", "lr_min", "schedule", "warmup_steps", "grad_clip")
"""Optimizer fields that do not change what is constructed."""


def _configuration(run: RunConfig) -> tuple[Any, ...]:
    optim = {f.name: getattr(run.optim, f.name) for f in dataclasses.fields(run.optim)}
    built = tuple((k, v) for k, v in optim.items() if k not in SCHEDULE_FIELDS)
    return (built, run.arch, run.data.seq_len)


def describe(run: RunConfig) -> str:
    """``arm adamw: beta1=0.9, beta2=0.95`` (the values the optimizer reads)."""
    optim = run.optim
    values = {k: getattr(optim, k) for k in PER_OPTIMIZER if getattr(optim, k) is not None}
    values |= optim.hyperparameters.as_dict()
    arm = run.label or optim.optimizer
    if optim.embedding_optimizer:
        arm += f" (embedding: {optim.embedding_optimizer})"
    return f"arm {arm}: " + (", ".join(f"{k}={v}" for k, v in values.items()) or "defaults")


def _model_to_build(run: RunConfig) -> tuple[Architecture, str | None]:
    """The architecture the preflight builds for ``run``, and why it is not the real one (None
    when it is)."""
    arch = run.arch
    if (
        arch.workload is not None
        or is_reference(arch.model)
        or arch.n_layer is None
        or arch.n_layer <= 1
    ):
        return arch, None
    n = param_count(arch, run.data.seq_len)
    if n <= REAL_MODEL_BUDGET:
        return arch, None
    why = f"{arch.model}: {n / 1e6:.0f}M params > {REAL_MODEL_BUDGET / 1e6:.0f}M"
    return dataclasses.replace(arch, n_layer=1), why


def _workload_step(run: RunConfig) -> tuple[Any, Callable[[], Any], Any]:
    """A workload run's model, the closure computing its first batch's loss and gradients, and
    its optimizer (:mod:`harness.workloads`).

    Raises:
        UserError: the run's optimizer cannot train the workload's model
            (:func:`harness.workloads.compat.problem`).
    """
    from harness.optim.build import build_optimizer
    from harness.optim.modes import to_train_mode
    from harness.optim.routing import split_parameters

    workload = get_workload(str(run.arch.workload)).build(run.optim.hyperparameters.as_dict())
    model = workload.model(run.execution.seed)
    why = problem(run, [g for g, ps in split_parameters(model).items() if ps])
    if why is not None:
        raise UserError(why)
    opt = build_optimizer(model, run)
    to_train_mode(opt)
    batch = workload.batch(run.execution.seed, 0, run.data.batch_size)

    def loss_of() -> Any:
        opt.zero_grad(set_to_none=True)
        loss = workload.loss(model, batch)
        loss.backward()
        return loss.detach()

    return model, loss_of, opt


def preflight(runs: Iterable[RunConfig], where: str) -> str:
    """Build and step each distinct optimizer configuration of ``runs`` once.

    Returns:
        What was checked, in a line (``2 optimizer configuration(s) built and stepped on the
        CPU on the runs' models``, naming any model built with one block).

    Raises:
        UserError: every configuration that failed, one line each (arm, configuration,
            exception).
    """
    import torch
    import torch.nn.functional as F

    from harness.model.build import build_model
    from harness.optim.build import build_optimizer
    from harness.optim.modes import needs_closure, to_train_mode

    configurations: dict[tuple[Any, ...], RunConfig] = {}
    for run in runs:
        configurations.setdefault(_configuration(run), run)
    problems = []
    gen = torch.Generator().manual_seed(0)
    models: dict[tuple[Any, int], torch.nn.Module] = {}
    reduced = set()
    for run in configurations.values():
        arch, why = _model_to_build(run)
        if why is not None:
            reduced.add(why)
        try:
            if run.arch.workload is not None:
                model, loss_of, opt = _workload_step(run)
            else:
                key = (arch, run.data.seq_len)
                if key not in models:  # one model per architecture; its weights do not matter
                    models[key] = build_model(arch, run.data.seq_len)
                model = models[key]
                model.zero_grad(set_to_none=True)
                opt = build_optimizer(model, run)
                to_train_mode(opt)
                x = torch.randint(0, arch.vocab_size, (1, min(8, run.data.seq_len)), generator=gen)

                def loss_of(
                    model: torch.nn.Module = model,
                    x: torch.Tensor = x,
                    opt: torch.optim.Optimizer = opt,
                ) -> torch.Tensor:  # the loss and gradients of the tiny batch (also the closure)
                    opt.zero_grad(set_to_none=True)
                    logits = model(x).float()
                    loss = F.cross_entropy(logits.view(-1, logits.size(-1)), x.view(-1))
                    loss.backward()  # type: ignore[no-untyped-call]
                    return loss.detach()

            loss_of()
            if needs_closure(opt):
                opt.step(loss_of)
            else:
                opt.step()
        except UserError as e:  # an optimizer that refuses the run's workload
            problems.append(f"{describe(run)}: {e}")
        except Exception as e:  # the user's optimizer failed: say which configuration
            problems.append(f"{describe(run)}: {type(e).__name__}: {e}".replace("\n", " "))
    if problems:
        head = f"{where}: preflight (one step of each optimizer configuration on the CPU) failed"
        raise UserError(head + ":\n" + "\n".join(f"  - {p}" for p in problems))
    models_said = "real models"
    if reduced:
        models_said += f" (one block of {'; '.join(sorted(reduced))})"
    return (
        f"{len(configurations)} optimizer configuration(s) built and stepped on the CPU "
        f"on the runs' {models_said}"
    )
