"""Registry of optimizers and the run fields each one reads.

Torch-free: resolving a grid (which fields an optimizer reads, their defaults) needs no torch;
an optimizer's class is imported the first time a run builds it (``OptimizerSpec.load``).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harness.errors import UserError, unknown_choice

if TYPE_CHECKING:
    import torch

REQUIRED = object()
"""Marker: the field has no default and must be given in the grid."""

#: Run fields passed to the constructor under their own name (torch's names where torch has one).
_SAME_NAME = ("eps", "momentum", "nesterov", "clip_value", "coupled_scale_exp")


@dataclass(frozen=True, kw_only=True, slots=True)
class OptimizerSpec:
    """How a run's fields become an optimizer's constructor arguments."""

    cls: str
    """Where the ``torch.optim.Optimizer`` subclass lives, ``module:Class``; it is constructed
    as ``cls(groups, lr=..., **kwargs)``."""
    fields: dict[str, Any] = field(default_factory=dict)
    """RunConfig optimizer field -> default (or ``REQUIRED``); fields not listed are set to None."""
    group_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Routed group name (``embedding``, ``head``, ``matrix``, ``vector``) -> extra param-group
    keys this optimizer needs, e.g. ``{"embedding": {"coupled": True}}`` for Coupled Adam."""

    def load(self) -> type[torch.optim.Optimizer]:
        """The optimizer class (imports its module)."""
        module, _, name = self.cls.partition(":")
        return getattr(importlib.import_module(module), name)

    def kwargs(self, run: Any, *, fill_defaults: bool = False) -> dict[str, Any]:
        """Constructor kwargs (beyond ``lr`` and ``weight_decay``) from a resolved run.

        ``beta1`` and ``beta2`` become torch's ``betas`` pair; ``beta1`` alone becomes ``beta``
        (Signum), ``beta2`` alone stays ``beta2`` (RMSprop). With ``fill_defaults`` a field the run
        leaves None takes this spec's default: used for the embedding-group optimizer of
        ``embedding_optimizer``, whose fields the run does not resolve.
        """
        v = {name: self._value(run, name, fill_defaults) for name in self.fields}
        out: dict[str, Any] = {}
        if "beta1" in v and "beta2" in v:
            out["betas"] = (v["beta1"], v["beta2"])
        elif "beta1" in v:
            out["beta"] = v["beta1"]
        elif "beta2" in v:
            out["beta2"] = v["beta2"]
        out.update({name: v[name] for name in _SAME_NAME if name in v})
        return out

    def _value(self, run: Any, name: str, fill_defaults: bool) -> Any:
        value = getattr(run, name)
        if value is None and fill_defaults:
            value = self.fields[name]
            if value is REQUIRED:
                raise UserError(
                    f"optimizer {self.cls.partition(':')[2]} needs {name!r}, which the run leaves "
                    "unset; "
                    f"set {name} in the grid"
                )
        return value


#: The fields of RunConfig that belong to optimizers (resolved or nulled per optimizer).
OPTIMIZER_FIELDS = (
    "beta1",
    "beta2",
    "eps",
    "momentum",
    "nesterov",
    "clip_value",
    "coupled_scale_exp",
)

SPECS: dict[str, OptimizerSpec] = {}
"""Registered optimizers: name -> spec (``harness.optim.OPTIMIZERS`` maps names to classes)."""


def register(name: str, spec: OptimizerSpec) -> None:
    """Add an optimizer to the registry under ``name``."""
    if name in SPECS:
        raise ValueError(f"optimizer {name!r} registered twice")
    unknown = set(spec.fields) - set(OPTIMIZER_FIELDS)
    if unknown:
        raise ValueError(f"optimizer {name!r} reads unknown run fields {sorted(unknown)}")
    SPECS[name] = spec


def get_spec(name: str) -> OptimizerSpec:
    """The spec of a registered optimizer; an unknown name lists the known ones."""
    try:
        return SPECS[name]
    except KeyError:
        raise unknown_choice("optimizer", name, SPECS) from None


def _register_builtin() -> None:
    from harness.optim import registry  # noqa: F401  (registers on import)


_register_builtin()
