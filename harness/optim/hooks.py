"""Optimizers whose contract is wider than ``step()``: what they need is declared
(:class:`~harness.optim.spec.Hooks`), and the signs of a known need are looked for, so that an
optimizer is given what it needs or the dry run says what is missing, never silently run as
another algorithm.

- **Parameter names** (Adam-mini takes ``model.named_parameters()``): handled by itself when the
  constructor's parameters argument is named ``named_parameters``.
- **Per-group options** (GaLore projects the matrices of a group that holds ``rank``,
  ``update_proj_gap``, ``scale``, ``projection_type``): ``group_options={"matrix": {...}}``,
  through the harness's routed groups.
- **A second-order backward** (AdaHessian, SophiaH take Hessian-vector products of the
  gradients): ``create_graph=True``.
- **A periodic call** (Sophia's ``update_hessian``): ``every={"update_hessian": 10}``.

A declaration is an :class:`~harness.optim.spec.OptimizerSpec` made by :func:`declare`, named by
a grid as a reference (``optimizer: ./optimizers.py:SOPHIA``) or offered as an entry point
(group ``harness.optimizers``). Torch-free.

Example:
    >>> # optimizers.py, beside the grid
    >>> # SOPHIA = declare("sophia_opt:SophiaG", every={"update_hessian": 10})
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from harness.core.registry import load_object
from harness.optim.signature import spec_from_class
from harness.optim.spec import Hooks, OptimizerSpec


@dataclass(frozen=True, slots=True)
class Known:
    """A need the harness recognises in an optimizer class."""

    shows: Callable[[type], bool]
    """Whether the class shows the need (its methods, its source)."""
    wired: Callable[[OptimizerSpec], bool]
    """Whether a declaration meets it."""
    fix: str
    """What to declare (for the dry run's note)."""


def _source(cls: type) -> str:
    try:
        return inspect.getsource(cls)
    except (OSError, TypeError):
        return ""


KNOWN: dict[str, Known] = {
    "update_hessian": Known(
        shows=lambda cls: callable(getattr(cls, "update_hessian", None)),
        wired=lambda spec: "update_hessian" in spec.hooks.every,
        fix="has an update_hessian() method that nothing calls (its Hessian estimate is never "
        "updated); declare every={'update_hessian': k}",
    ),
    "create_graph": Known(
        shows=lambda cls: "create_graph" in _source(cls),
        wired=lambda spec: spec.hooks.create_graph,
        fix="takes Hessian-vector products of the gradients (its source names create_graph); "
        "declare create_graph=True",
    ),
    "rank": Known(
        shows=lambda cls: re.search(r"""['"]rank['"]\s+in\s+group""", _source(cls)) is not None,
        wired=lambda spec: any("rank" in o for o in spec.group_options.values()),
        fix="projects only the groups that hold 'rank' (none does: it runs as its base "
        "algorithm); declare group_options={'matrix': {'rank': ...}}",
    ),
}
"""Name -> a need the harness recognises (the dry run names each one a declaration misses)."""


def detected(cls: type) -> tuple[str, ...]:
    """The :data:`KNOWN` needs ``cls`` shows."""
    return tuple(name for name, k in KNOWN.items() if k.shows(cls))


def unwired(spec: OptimizerSpec) -> list[str]:
    """A line per known need of ``spec``'s class that its declaration does not meet."""
    return [
        f"optimizer {spec.name} {KNOWN[name].fix} (harness.optim.hooks.declare)"
        for name in spec.detected
        if name in KNOWN and not KNOWN[name].wired(spec)
    ]


def declare(
    optimizer: type | str,
    *,
    named_parameters: bool | None = None,
    create_graph: bool = False,
    every: Mapping[str, int] | None = None,
    group_options: Mapping[str, Mapping[str, Any]] | None = None,
    takes: tuple[str, ...] | None = None,
) -> OptimizerSpec:
    """The declaration of ``optimizer`` (a class, or ``module:Class``) read from its constructor
    (:mod:`harness.optim.signature`), with what the loop must do beyond ``step()``.

    Args:
        optimizer: the ``torch.optim.Optimizer`` subclass.
        named_parameters: pass ``(name, parameter)`` pairs (None: when the constructor's
            parameters argument is named ``named_parameters``).
        create_graph: backward with ``create_graph=True``.
        every: method name -> period in steps, called after ``step()``.
        group_options: routed group -> extra param-group keys (``{"matrix": {"rank": 4}}``).
        takes: the routed groups it updates (None: all; the others get AdamW).

    Raises:
        ValueError: a method of ``every`` the class does not have, or a period that is not a
            positive whole number (naming the valid ones).
    """
    cls = load_object(optimizer) if isinstance(optimizer, str) else optimizer
    ref = optimizer if isinstance(optimizer, str) else f"{cls.__module__}:{cls.__qualname__}"
    spec = spec_from_class(cls, ref, group_options=group_options, takes=takes)
    missing = [m for m in every or {} if not callable(getattr(cls, m, None))]
    if missing:
        methods = sorted(n for n in dir(cls) if not n.startswith("_") and callable(getattr(cls, n)))
        raise ValueError(
            f"optimizer {ref}: every={dict(every or {})}: no method {', '.join(missing)}; "
            f"its methods: {', '.join(methods)}"
        )
    hooks = Hooks(
        named_parameters=spec.hooks.named_parameters
        if named_parameters is None
        else named_parameters,
        create_graph=create_graph,
        every=dict(every or {}),
    )
    spec = dataclasses.replace(spec, hooks=hooks, detected=detected(cls))
    spec.check(ref)
    return spec


@runtime_checkable
class Parted(Protocol):
    """An optimizer made of parts (:class:`harness.optim.composite.CompositeOptimizer`): the
    hooks apply to its ``main`` part."""

    parts: dict[str, Any]


def call_periodic(optimizer: object, hooks: Hooks, steps_done: int) -> None:
    """Call each method of ``hooks.every`` whose period divides ``steps_done`` (the steps taken,
    this one included), on the main optimizer."""
    if not hooks.every:
        return
    main = optimizer.parts["main"] if isinstance(optimizer, Parted) else optimizer
    for method, period in hooks.every.items():
        if steps_done % period == 0:
            getattr(main, method)()
