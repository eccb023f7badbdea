"""The preflight: before a run is queued, each distinct optimizer configuration of a grid is built
on its run's model, on the CPU, and takes one step on a tiny batch, so that a constructor or a
step that fails (a tuple cut short, a wrong type) is one line at submit time, not a failed run
per configuration after each run's start-up.

The user's code runs in a child process (:mod:`harness.launch.sandbox`) with a time limit per
configuration (``HARNESS_PREFLIGHT_TIMEOUT_S``, a minute; up to ten while the child still uses CPU,
a first step that compiles: :data:`harness.launch.sandbox.BUSY_FACTOR`) and a memory limit: an exit,
a signal, a hang, a ``KeyboardInterrupt`` or ``SystemExit`` raised by the user's code, or a memory
blow-up is one line for its configuration, and Ctrl-C stops ``submit`` at once. The step is the
training loop's (closures, hooks: :mod:`harness.launch.preflight_step`), and a step that changes a
learning rate it applies (the group's ``lr`` the harness set, or a documented scheduled value:
:data:`harness.launch.preflight_step.APPLIED_LR`; an optimizer with its own warmup, Ranger21) is
refused; a running statistic (schedule-free's ``lr_max``) is not a schedule.

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
from collections.abc import Iterable
from typing import Any

from harness.core.catalogue import PER_OPTIMIZER
from harness.core.config import Architecture, RunConfig
from harness.core.errors import UserError
from harness.core.registry import is_reference
from harness.launch import preflight_cache
from harness.launch.sandbox import Limits, run_isolated
from harness.model.architecture import param_count

REAL_MODEL_BUDGET = 400_000_000
"""Most parameters of a model the preflight builds whole; a larger preset gets one block."""

CHECK = "harness.launch.preflight_step:check"
"""What the sandbox runs for each configuration."""
SCHEDULE_FIELDS = ("lr", "lr_min", "schedule", "warmup_steps", "grad_clip")
"""Optimizer fields that do not change what is constructed."""
UNSHOWN = (*SCHEDULE_FIELDS, "hyperparameters")
"""Optimizer fields a configuration's line does not add (its hyperparameters are always in it)."""


def _configuration(run: RunConfig) -> tuple[Any, ...]:
    optim = {f.name: getattr(run.optim, f.name) for f in dataclasses.fields(run.optim)}
    built = tuple((k, v) for k, v in optim.items() if k not in SCHEDULE_FIELDS)
    return (built, run.arch, run.data.seq_len)


def describe(run: RunConfig, also: Iterable[str] = ()) -> str:
    """``arm adamw: beta1=0.9, beta2=0.95`` (the values the optimizer reads, and the optimizer
    fields named in ``also``: what tells this configuration from the others)."""
    optim = run.optim
    shown = [k for k in PER_OPTIMIZER if getattr(optim, k) is not None]
    shown += [k for k in also if k not in shown and k not in optim.hyperparameters.as_dict()]
    values = {k: getattr(optim, k) for k in shown}
    values |= optim.hyperparameters.as_dict()
    arm = run.label or optim.optimizer
    if optim.embedding_optimizer:
        arm += f" (embedding: {optim.embedding_optimizer})"
    return f"arm {arm}: " + (", ".join(f"{k}={v}" for k, v in values.items()) or "defaults")


def descriptions(runs: list[RunConfig]) -> list[str]:
    """:func:`describe` of each configuration, with the optimizer fields that differ between
    the configurations of its arm (a refusal line per configuration is then its own)."""
    arms: dict[str, list[RunConfig]] = {}
    for r in runs:
        arms.setdefault(r.label or r.optim.optimizer, []).append(r)
    differing: dict[str, list[str]] = {}
    for arm, rs in arms.items():
        names = [f.name for f in dataclasses.fields(rs[0].optim) if f.name not in UNSHOWN]
        differing[arm] = [n for n in names if len({repr(getattr(r.optim, n)) for r in rs}) > 1]
    return [describe(r, differing[r.label or r.optim.optimizer]) for r in runs]


def model_to_build(run: RunConfig) -> tuple[Architecture, str | None]:
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


def preflight(runs: Iterable[RunConfig], where: str, limits: Limits | None = None) -> str:
    """Build and step each distinct optimizer configuration of ``runs`` once, in a child
    process (:mod:`harness.launch.sandbox`; ``limits``: default :meth:`Limits.from_env`).

    Returns:
        What was checked, in a line (``2 optimizer configuration(s) built and stepped on the
        CPU on the runs' models``, naming any model built with one block).

    Raises:
        UserError: every configuration that failed, one line each (:func:`problems`).
        KeyboardInterrupt: the user's Ctrl-C (the child is killed first).
    """
    each, said = outcomes(runs, where, limits)
    report(each, said, where)
    return said


HEAD = "preflight (one step of each optimizer configuration on the CPU) failed"
"""How a preflight's refusal starts."""


def problems(
    runs: Iterable[RunConfig], where: str, limits: Limits | None = None
) -> tuple[list[str], str]:
    """The preflight's problems, a line per configuration that failed (arm, configuration,
    what failed: an exception, an exit, a signal, a time limit, an optimizer scheduling its own
    learning rate), and the line saying what was checked (:func:`outcomes`).

    Raises:
        UserError: a limit set in the environment that is not a positive number.
        KeyboardInterrupt: the user's Ctrl-C (the child is killed first).
    """
    each, said = outcomes(runs, where, limits)
    return [f"{d}: {a}" for d, a in each if a], said


def outcomes(
    runs: Iterable[RunConfig], where: str, limits: Limits | None = None
) -> tuple[list[tuple[str, str | None]], str]:
    """Each distinct configuration of ``runs`` built and stepped: its line (:func:`descriptions`:
    what tells it from the others) and its problem (None when it works), and the line saying
    what was checked.

    Raises:
        UserError: a limit set in the environment that is not a positive number.
        KeyboardInterrupt: the user's Ctrl-C (the child is killed first).
    """
    configurations: dict[tuple[Any, ...], RunConfig] = {}
    for run in runs:
        configurations.setdefault(_configuration(run), run)
    chosen = list(configurations.values())
    try:
        limits = limits or Limits.from_env()
    except ValueError as e:
        raise UserError(f"{where}: preflight: {e}") from None
    keys = {
        i: preflight_cache.key(c, limits)
        for i, (c, r) in enumerate(configurations.items())
        if preflight_cache.is_own_code(r)
    }
    known = preflight_cache.passed(keys.values())
    todo = [i for i in range(len(chosen)) if keys.get(i) not in known]
    checked = run_isolated(CHECK, [chosen[i] for i in todo], limits) if todo else []
    answers: list[str | None] = [None] * len(chosen)
    for i, answer in zip(todo, checked, strict=True):
        answers[i] = answer
    preflight_cache.remember(keys[i] for i in todo if answers[i] is None and i in keys)
    reduced = {why for r in chosen if (why := model_to_build(r)[1]) is not None}
    models_said = "real models"
    if reduced:
        models_said += f" (one block of {'; '.join(sorted(reduced))})"
    said = (
        f"{len(configurations)} optimizer configuration(s) built and stepped on the CPU "
        f"on the runs' {models_said}"
    )
    if len(todo) < len(chosen):
        said += (
            f" ({len(chosen) - len(todo)} of them, the harness's own code, passed before with "
            f"this harness and torch: {preflight_cache.folder()})"
        )
    return list(zip(descriptions(chosen), answers, strict=True)), said


def report(each: list[tuple[str, str | None]], said: str, where: str) -> str:
    """What a dry run prints of :func:`outcomes`: the line saying what was checked, then each
    configuration, ``ok`` or its problem.

    Raises:
        UserError: every configuration that failed, one line each (as :func:`preflight`).
    """
    found = [f"{d}: {a}" for d, a in each if a]
    if found:
        raise UserError(f"{where}: {HEAD}:\n" + "\n".join(f"  - {p}" for p in found))
    return "\n".join([said, *(f"  ok: {d}" for d, _ in each)])
