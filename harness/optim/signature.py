"""An optimizer's declaration read from its constructor: a class the harness has never seen
becomes an :class:`~harness.optim.spec.OptimizerSpec` without any table to edit.

Each keyword argument of ``cls.__init__`` (after the parameters) is, by name:

- ``lr``, ``weight_decay``: passed by the harness (``lr`` as a keyword, ``weight_decay`` in every
  parameter group, 0 on the groups the harness never decays);
- ``betas``: the run fields ``beta1`` and ``beta2``, passed as torch's pair;
- a run field an optimizer may read (``beta1``, ``beta2``, ``eps``, ``momentum``, ``nesterov``,
  ``clip_value``, ``coupled_scale_exp``): that field, with the constructor's default;
- the name of any other run field (``seed``, ``steps``, ...): an error naming both;
- anything else: the optimizer's own hyperparameter, a grid key and a typed column of that name,
  typed by its annotation (or its default's type): ``bool``, ``int``, ``float`` or ``str``.

A keyword without a default must be given in the grid. Torch-free: the class is inspected, not
instantiated.
"""

from __future__ import annotations

import inspect
import typing
from typing import Any

from harness.core.catalogue import FIELDS, PER_OPTIMIZER
from harness.core.errors import UserError
from harness.optim.spec import REQUIRED, TYPES, Hyperparameter, OptimizerSpec

PASSED_BY_HARNESS = ("lr", "weight_decay")
"""Constructor keywords the harness always fills itself."""


def is_optimizer_class(obj: object) -> bool:
    """Whether ``obj`` is a subclass of ``torch.optim.Optimizer`` (checked by its bases' names, so
    that this module need not import torch)."""
    return isinstance(obj, type) and any(
        base.__name__ == "Optimizer" and base.__module__.startswith("torch.optim")
        for base in obj.__mro__
    )


def spec_from_class(cls: type, ref: str) -> OptimizerSpec:
    """The declaration of optimizer class ``cls`` (referenced as ``ref``), from its constructor.

    Raises:
        UserError: ``cls`` is not an Optimizer subclass, takes no ``lr``, or has an argument that
            collides with a run field, takes ``*args``, or has an unsupported type.
    """
    if not is_optimizer_class(cls):
        raise UserError(f"optimizer {ref!r}: {cls!r} is not a torch.optim.Optimizer subclass")
    init = cls.__init__  # type: ignore[misc]  # the class's own constructor is what we read
    params = list(inspect.signature(init).parameters.values())[2:]  # self, params
    hints = _hints(cls)
    if "lr" not in {p.name for p in params}:
        raise UserError(f"optimizer {ref!r}: its constructor takes no 'lr' keyword")
    fields: dict[str, Any] = {}
    own: list[Hyperparameter] = []
    for p in params:
        if p.kind is p.VAR_KEYWORD:
            continue
        if p.kind in (p.VAR_POSITIONAL, p.POSITIONAL_ONLY):
            raise UserError(f"optimizer {ref!r}: argument {p.name!r} must be a keyword argument")
        default: Any = REQUIRED if p.default is p.empty else p.default
        if p.name in PASSED_BY_HARNESS:
            continue
        if p.name == "betas":
            betas = (REQUIRED, REQUIRED) if default is REQUIRED else tuple(default)
            fields |= {"beta1": betas[0], "beta2": betas[1]}
        elif p.name in PER_OPTIMIZER:
            fields[p.name] = default
        elif p.name in FIELDS:
            raise UserError(
                f"optimizer {ref!r}: constructor argument {p.name!r} collides with the run field "
                f"{p.name!r} ({FIELDS[p.name].role}); rename the argument"
            )
        else:
            own.append(Hyperparameter(name=p.name, type=_type(p, hints, ref), default=default))
    pair = any(p.name == "betas" for p in params)
    renamed: dict[str, str] = {} if pair else {n: n for n in ("beta1", "beta2") if n in fields}
    return OptimizerSpec(cls=ref, fields=fields, hyperparameters=tuple(own), renamed=renamed)


def _hints(cls: type) -> dict[str, Any]:
    init = cls.__init__  # type: ignore[misc]  # the class's own constructor is what we read
    try:
        return typing.get_type_hints(init)
    except Exception:  # unresolvable annotations: fall back to the defaults' types
        return dict(getattr(init, "__annotations__", {}))


def _type(p: inspect.Parameter, hints: dict[str, Any], ref: str) -> type:
    """A hyperparameter's type: its annotation (``float``, ``float | None``) or its default's."""
    hint = hints.get(p.name)
    if isinstance(hint, str):
        hint = TYPES.get(hint.replace(" | None", "").replace("Optional[", "").rstrip("]"))
    candidates = [a for a in typing.get_args(hint) if a is not type(None)] or [hint]
    t: Any = candidates[0] if hint is not None else None
    if t is None and p.default is not p.empty and p.default is not None:
        t = type(p.default)
    if t not in TYPES.values():
        got = "no annotation and no default" if t is None else repr(t)
        raise UserError(
            f"optimizer {ref!r}: hyperparameter {p.name!r} has {got}; annotate it as one of "
            f"{', '.join(TYPES)} (the harness stores each hyperparameter as a typed column)"
        )
    return t
