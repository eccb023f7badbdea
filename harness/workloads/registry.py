"""Which workload a run names: a built-in name (:data:`BUILTIN`), or a reference to a class the
harness has never seen (``my_package.my_module:MyWorkload``, ``path/to/file.py:MyWorkload``).

A workload is declared by its constructor, as an optimizer is
(:func:`harness.optim.signature.scalar_parameters`): each scalar argument is a grid key and a
typed column of its name, its default the default. Importing this module imports no torch; a
built-in's constructor is read from its source (:mod:`harness.optim.static`), a referenced
class is imported when a grid names it.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.core.errors import UserError
from harness.core.registry import Registry, canonical_reference, is_reference, load_object
from harness.metrics.catalogue import METRICS
from harness.optim import static
from harness.optim.signature import scalar_parameters
from harness.optim.spec import Hyperparameter
from harness.workloads.base import WORKLOAD_METHODS

BUILTIN: dict[str, str] = {
    "quadratic": "harness.workloads.quadratic:Quadratic",
    "imbalance": "harness.workloads.imbalance:Imbalance",
}
"""Built-in workload name -> its class (``module:Class``)."""

DEFAULT = "harness.workloads.gpt:GPT"
"""What a run whose ``workload`` is None (every shipped grid's) trains: the GPT on tokens. Not a
name a grid writes: it is the absence of one, so rows and run_ids stay as they were."""

WORKLOADS: Registry[str] = Registry("workload", BUILTIN)
"""Every workload a grid may name by name."""


@dataclass(frozen=True, slots=True)
class WorkloadSpec:
    """A workload's class and the parameters its constructor declares."""

    cls: str
    """Where the class lives, ``module:Class`` (or ``/abs/file.py:Class``)."""
    parameters: tuple[Hyperparameter, ...]
    """Its own parameters: grid keys and typed columns."""

    @property
    def names(self) -> tuple[str, ...]:
        """The grid keys (and columns) of its parameters."""
        return tuple(p.name for p in self.parameters)

    def defaults(self) -> dict[str, Any]:
        """Parameter -> default (or ``REQUIRED``)."""
        return {p.name: p.default for p in self.parameters}

    def build(self, values: Mapping[str, Any]) -> Any:
        """The workload object, constructed with its parameters from ``values`` (a run's own
        parameters; an absent one takes the constructor's default)."""
        kwargs = {n: values[n] for n in self.names if values.get(n) is not None}
        workload = load_object(self.cls)(**kwargs)
        missing = [m for m in WORKLOAD_METHODS if not callable(getattr(workload, m, None))]
        if missing:
            raise UserError(
                f"workload {self.cls!r} has no method {', '.join(missing)} (a workload has "
                f"{', '.join(WORKLOAD_METHODS)}: harness.workloads.base.Workload)"
            )
        return workload


def canonical_name(name: str, base: Path | None = None) -> str:
    """How runs record workload ``name``: a built-in name as it is, a reference with its file
    path made absolute (relative to ``base``, the grid file's folder)."""
    return canonical_reference(name, base) if is_reference(name) else name


def get_workload(name: str) -> WorkloadSpec:
    """The declaration of workload ``name`` (a built-in name or a canonical reference).

    Raises:
        UserError: an unknown name (listing the valid ones), a reference that cannot be loaded,
            or a constructor a grid cannot call.
    """
    return _spec(name if is_reference(name) else WORKLOADS[name])


@functools.cache
def _spec(ref: str) -> WorkloadSpec:
    init = static.constructor(ref) if ref in BUILTIN.values() else None  # without torch
    if init is None:
        cls = load_object(ref)
        if not isinstance(cls, type):
            raise UserError(f"workload {ref!r} is not a class")
        init = cls.__init__  # type: ignore[misc]  # the class's own constructor is what we read
    parameters = scalar_parameters(init, f"workload {ref!r}", taken=METRICS)
    return WorkloadSpec(cls=ref, parameters=parameters)
