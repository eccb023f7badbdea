"""Which optimizer a run names: a registered name (built-in, ``register``-ed, or an installed
package's entry point in the group ``harness.optimizers``), or a reference to a class the
harness has never seen (``my_package.my_module:MyOptimizer``, ``path/to/my_opt.py:MyOptimizer``)
whose declaration is read from its constructor (:mod:`harness.optim.signature`).

Importing this module registers nothing and imports no torch; a referenced class is imported
when a grid names it.
"""

from __future__ import annotations

import dataclasses
import functools
from importlib import metadata
from pathlib import Path

from harness.core.registry import Registry, canonical_reference, is_reference, load_object
from harness.optim import static
from harness.optim.builtin import BUILTIN, Builtin
from harness.optim.hooks import detected
from harness.optim.signature import spec_from_class, spec_from_constructor
from harness.optim.spec import OptimizerSpec

ENTRY_POINTS = "harness.optimizers"
"""Entry-point group under which installed packages offer optimizers: each entry point is an
``OptimizerSpec`` or a ``torch.optim.Optimizer`` subclass, named as grids will name it."""


def _as_spec(obj: object, ref: str) -> OptimizerSpec:
    """A declaration from an ``OptimizerSpec`` or an optimizer class (found at ``ref``), with
    the known hooks its class shows (:func:`harness.optim.hooks.detected`)."""
    if isinstance(obj, OptimizerSpec):
        return obj
    spec = spec_from_class(obj, ref)  # type: ignore[arg-type]  # a class, else spec_from_class says
    return dataclasses.replace(spec, detected=detected(obj))  # type: ignore[arg-type]  # a class: spec_from_class checked


def _entry_points() -> dict[str, OptimizerSpec]:
    found = {}
    for ep in metadata.entry_points(group=ENTRY_POINTS):
        spec = _as_spec(load_object(ep.value), ep.value)
        spec.check(ep.name)
        found[ep.name] = spec
    return found


OPTIMIZERS: Registry[OptimizerSpec | Builtin] = Registry(
    "optimizer", BUILTIN, discover=_entry_points
)
"""Every optimizer a grid may name by name (a built-in one is declared by its constructor when
first named)."""


def register(name: str, optimizer: OptimizerSpec | type) -> None:
    """Make ``optimizer`` (a declaration, or an Optimizer subclass whose constructor declares it)
    available to grids as ``optimizer: <name>``. Call it from an importable module (an entry
    point's target, a package's ``__init__``), so that job processes see it too.

    Raises:
        ValueError: ``name`` is taken, or the declaration is inconsistent.
    """
    ref = f"{optimizer.__module__}:{optimizer.__qualname__}" if isinstance(optimizer, type) else ""
    spec = _as_spec(optimizer, ref)
    spec.check(name)
    OPTIMIZERS.register(name, spec)


def canonical_name(name: str, base: Path | None = None) -> str:
    """How runs record optimizer ``name``: a registered name as it is, a reference with its file
    path made absolute (relative to ``base``, the grid file's folder)."""
    return canonical_reference(name, base) if is_reference(name) else name


def get_spec(name: str) -> OptimizerSpec:
    """The declaration of optimizer ``name`` (a registered name or a canonical reference).

    Raises:
        UserError: an unknown name (listing the known ones), or a reference that cannot be
            loaded or is not a usable optimizer class.
    """
    if is_reference(name):
        return _referenced(name)
    entry = OPTIMIZERS[name]
    return _builtin(name) if isinstance(entry, Builtin) else entry


@functools.cache
def _builtin(name: str) -> OptimizerSpec:
    b = BUILTIN[name]
    init = static.constructor(b.cls)  # torch-free: planning a grid imports no torch
    if init is None:
        init = load_object(b.cls).__init__
    spec = spec_from_constructor(
        init, b.cls, reads=b.reads, group_options=b.group_options, takes=b.takes
    )
    spec.check(name)
    return spec


@functools.cache
def _referenced(ref: str) -> OptimizerSpec:
    spec = _as_spec(load_object(ref), ref)
    spec.check(ref)
    return spec
