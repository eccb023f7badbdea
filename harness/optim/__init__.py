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

from harness.optim.build import build_optimizer
from harness.optim.composite import CompositeOptimizer
from harness.optim.spec import OPTIMIZERS, SPECS, OptimizerSpec, get_spec

__all__ = [
    "OPTIMIZERS",
    "SPECS",
    "CompositeOptimizer",
    "OptimizerSpec",
    "build_optimizer",
    "get_spec",
]
