"""The optimizer registry: name -> :class:`~harness.optim.spec.OptimizerSpec`.

Built-in optimizers are in :mod:`harness.optim.builtin`; :func:`register` adds one explicitly.
Importing this module registers nothing as a side effect.
"""

from __future__ import annotations

from harness.core.registry import Registry
from harness.optim.builtin import BUILTIN
from harness.optim.spec import OptimizerSpec


def _checked(specs: dict[str, OptimizerSpec]) -> dict[str, OptimizerSpec]:
    for name, spec in specs.items():
        spec.check(name)
    return specs


OPTIMIZERS: Registry[OptimizerSpec] = Registry("optimizer", _checked(BUILTIN))
"""Every optimizer a grid may name."""


def register(name: str, spec: OptimizerSpec) -> None:
    """Add an optimizer under ``name``.

    Raises:
        ValueError: ``name`` is taken, or the spec is inconsistent (see ``OptimizerSpec.check``).
    """
    spec.check(name)
    OPTIMIZERS.register(name, spec)


def get_spec(name: str) -> OptimizerSpec:
    """The spec of optimizer ``name``; an unknown name is a UserError listing the known ones."""
    return OPTIMIZERS[name]
