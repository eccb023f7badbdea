"""The optimizer zoo: a name registry of ``torch.optim.Optimizer`` subclasses.

Each optimizer is constructed like torch's own: ``cls(params_or_groups, lr=..., **hparams)``,
and updates with multi-tensor ``torch._foreach_*`` ops. ``SPECS`` says which
:class:`~harness.config.RunConfig` fields an optimizer reads and their defaults; grid expansion
uses it to resolve those fields and to set the others to None (NULL).

Layout: ``spec.py`` (registry), ``registry.py`` (the built-in optimizers and their defaults),
``base.py`` (shared step skeleton), ``adam.py`` (adamw, adam, rmsprop, coupled_adam), ``sgd.py``
(sgd, sgd_cclip), ``sign.py`` (signsgd, signum, lion), ``muon.py``, ``routing.py`` (param
groups), ``composite.py`` (per-group optimizer override), ``build.py`` (run -> optimizer).
"""

from __future__ import annotations

from typing import Any

from harness.optim.spec import SPECS, OptimizerSpec, get_spec

#: Imported on first access (PEP 562), so that ``harness.optim.spec`` loads without torch.
_LAZY = {
    "build_optimizer": "harness.optim.build",
    "CompositeOptimizer": "harness.optim.composite",
}


def __getattr__(name: str) -> Any:
    """``OPTIMIZERS`` (name -> optimizer class), ``build_optimizer``, ``CompositeOptimizer``."""
    import importlib

    if name == "OPTIMIZERS":
        return {n: spec.load() for n, spec in SPECS.items()}
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'harness.optim' has no attribute {name!r}")


__all__ = [
    "OPTIMIZERS",
    "SPECS",
    "CompositeOptimizer",
    "OptimizerSpec",
    "build_optimizer",
    "get_spec",
]
