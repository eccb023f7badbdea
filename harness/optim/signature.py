"""An optimizer's declaration read from its constructor: a class the harness has never seen
becomes an :class:`~harness.optim.spec.OptimizerSpec` without any table to edit, and a
built-in one is declared the same way.

Each argument of ``cls.__init__`` after the parameters is, by name and signature:

- ``lr``, ``weight_decay``: passed by the harness (``lr`` as a keyword, or through ``**kwargs``
  to a constructor that takes no ``lr`` of its own; ``weight_decay`` in every parameter group, 0
  on the groups the harness never decays);
- a tuple (``betas=(0.9, 0.999, 0.9999)``, or annotated ``tuple[float, float]``): one grid key
  and column per element, passed together as the tuple. ``betas``' elements are ``beta1``,
  ``beta2``, ``beta3``...: the run fields ``beta1`` and ``beta2``, the rest the optimizer's own;
  another tuple ``name``'s are ``name1``, ``name2``...;
- a run field an optimizer may read (``eps``, ``momentum``, ``nesterov``, ``clip_value``,
  ``coupled_scale_exp``, ``weight_decay_mode``, ``beta1``, ``beta2``): that field, with the
  constructor's default;
- a scalar: the optimizer's own hyperparameter, a grid key and a typed column, typed by its
  annotation (``float``, ``float | None``, ``Literal["a", "b"]``: a ``str`` with those choices)
  or else its default's type (``bool``, ``int``, ``float``, ``str``); with no annotation and a
  None default, any scalar the grid gives;
- a class or a function (annotated ``type[...]`` or ``Callable``, or a class or function as its
  default, like SAM's ``base_optimizer``): a ``str`` key whose value is a reference
  (``torch.optim:AdamW``), imported when the optimizer is built;
- anything else with a default (a list, a tensor, an object): left at its default, never passed;
  the dry run says so, and a grid that sets it is refused;
- a scalar whose default is not a value of its annotation (heavyball's ``palm: bool =
  use_default``, an ``object()`` sentinel): a grid key of the annotation's type; unset, it is
  not passed (the constructor's sentinel applies), and the dry run says so.

An annotation that admits None (``float | None``) accepts ``null`` in a grid. A constructor whose
parameters argument is named ``named_parameters`` (Adam-mini) is given ``(name, parameter)``
pairs (:class:`~harness.optim.spec.Hooks`).

An own key whose name is a run field the optimizer does not read (``warmup_steps``, ``steps``,
``seed``) or a result column is namespaced: the grid key and column ``opt_<name>``
(:data:`~harness.optim.spec.NAMESPACE`), passed to the constructor as ``<name>``.

A keyword without a default must be given in the grid. Every problem of a class is reported at
once. Torch-free: the class is inspected, not instantiated.
"""

from __future__ import annotations

import collections.abc
import inspect
import sys
import typing
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import UnionType
from typing import Any

from harness.core.catalogue import FIELDS, PER_OPTIMIZER, RESERVED
from harness.core.errors import UserError
from harness.core.registry import USER_MODULE_PREFIX
from harness.optim.spec import ANY, NAMESPACE, REQUIRED, Hooks, Hyperparameter, OptimizerSpec

PASSED_BY_HARNESS = ("lr", "weight_decay")
"""Constructor keywords the harness always fills itself."""

_SCALARS = (bool, int, float, str)


def is_optimizer_class(obj: object) -> bool:
    """Whether ``obj`` is a subclass of ``torch.optim.Optimizer`` (checked by its bases' names, so
    that this module need not import torch)."""
    return isinstance(obj, type) and any(
        base.__name__ == "Optimizer" and base.__module__.startswith("torch.optim")
        for base in obj.__mro__
    )


def reference_of(obj: Any) -> str:
    """``module:qualname`` of a class or a function (how a grid names it); for one defined in a
    file imported by path, ``<file name>:qualname``."""
    module = sys.modules.get(obj.__module__ or "")
    file = getattr(module, "__file__", None)
    if file and (obj.__module__ or "").startswith(USER_MODULE_PREFIX):
        return f"{Path(file).name}:{obj.__qualname__}"
    return f"{obj.__module__}:{obj.__qualname__}"


@dataclass(frozen=True, slots=True)
class _Scalar:
    type: type
    choices: tuple[Any, ...] | None = None


@dataclass(frozen=True, slots=True)
class _Tuple:
    types: tuple[type, ...]


@dataclass(frozen=True, slots=True)
class _Reference:
    pass


@dataclass(frozen=True, slots=True)
class _Unrepresentable:
    why: str


_Kind = _Scalar | _Tuple | _Reference | _Unrepresentable


def spec_from_class(
    cls: type,
    ref: str,
    *,
    reads: Mapping[str, str] | None = None,
    group_options: Mapping[str, Mapping[str, Any]] | None = None,
    takes: tuple[str, ...] | None = None,
) -> OptimizerSpec:
    """The declaration of optimizer class ``cls`` (referenced as ``ref``), from its constructor;
    ``reads`` (constructor keyword -> run field), ``group_options`` and ``takes`` add what a
    signature cannot say (:class:`harness.optim.builtin.Builtin`).

    Raises:
        UserError: ``cls`` is not an Optimizer subclass, or its constructor cannot be called by
            the harness (no ``lr``, a required argument of a type no grid can give); every
            problem in one message.
    """
    if not is_optimizer_class(cls):
        raise UserError(f"optimizer {ref!r}: {cls!r} is not a torch.optim.Optimizer subclass")
    init = cls.__init__  # type: ignore[misc]  # the class's own constructor is what we read
    return spec_from_constructor(init, ref, reads=reads, group_options=group_options, takes=takes)


def spec_from_constructor(
    init: Callable[..., None],
    ref: str,
    *,
    reads: Mapping[str, str] | None = None,
    group_options: Mapping[str, Mapping[str, Any]] | None = None,
    takes: tuple[str, ...] | None = None,
) -> OptimizerSpec:
    """The declaration of the optimizer whose constructor is ``init`` (``self, params, ...``):
    :func:`spec_from_class` without the class (a built-in's constructor read from its source,
    :mod:`harness.optim.static`, so that planning imports no torch)."""
    params = list(inspect.signature(init).parameters.values())[2:]  # self, params
    hints = _hints(init)
    names = {p.name for p in params}
    problems: list[str] = []
    if "lr" not in names and not any(p.kind is p.VAR_KEYWORD for p in params):
        problems.append("its constructor takes no 'lr' keyword (nor **kwargs)")
    fields: dict[str, Any] = {}
    own: list[Hyperparameter] = []
    packed: dict[str, tuple[str, ...]] = {}
    renamed: dict[str, str] = {}
    left: dict[str, str] = {}
    kept: dict[str, str] = {}

    def key(name: str) -> str:  # the grid key of an own value: namespaced where taken
        taken = name in FIELDS or name in RESERVED or any(h.name == name for h in own)
        return NAMESPACE + name if taken else name

    for p in params:
        if p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL) or p.name in PASSED_BY_HARNESS:
            continue
        default = REQUIRED if p.default is p.empty else p.default
        if reads is not None and p.name in reads:
            fields[reads[p.name]] = default
            renamed[reads[p.name]] = p.name
            continue
        kind = _kind(hints.get(p.name), default)
        if p.kind is p.POSITIONAL_ONLY:
            kind = _Unrepresentable("a positional-only argument")
        if isinstance(kind, _Unrepresentable):
            if default is REQUIRED:
                problems.append(f"argument {p.name!r} has no default and is {kind.why}")
            else:
                left[p.name] = kind.why
        elif isinstance(kind, _Tuple):
            stem = "beta" if p.name == "betas" else p.name
            values: Any = (REQUIRED,) * len(kind.types) if default is REQUIRED else default
            values = (None,) * len(kind.types) if values is None else values
            keys = []
            for i, (t, value) in enumerate(zip(kind.types, values, strict=True), 1):
                if f"{stem}{i}" in PER_OPTIMIZER:
                    keys.append(f"{stem}{i}")
                    fields[keys[-1]] = value
                else:
                    keys.append(key(f"{stem}{i}"))
                    own.append(Hyperparameter(name=keys[-1], type=t, default=value))
            packed[p.name] = tuple(keys)
        elif p.name in PER_OPTIMIZER:
            fields[p.name] = default
        else:
            name = key(p.name)
            if name != p.name:
                renamed[name] = p.name
            if isinstance(kind, _Reference):
                value = default if default in (REQUIRED, None) else reference_of(default)
                own.append(Hyperparameter(name=name, type=str, default=value, reference=True))
            else:
                sentinel = default not in (REQUIRED, None) and not _fits(default, kind)
                if sentinel:
                    kept[p.name] = f"its default {_short(default)} is not a {kind.type.__name__}"
                own.append(
                    Hyperparameter(
                        name=name,
                        type=kind.type,
                        default=None if sentinel else default,
                        choices=kind.choices,
                        nullable=_allows_none(hints.get(p.name)),
                        omit_unset=sentinel,
                    )
                )
    if problems:
        raise UserError(_problems(f"optimizer {ref!r}", problems))
    return OptimizerSpec(
        cls=ref,
        fields=fields,
        hyperparameters=tuple(own),
        renamed=renamed,
        packed=packed,
        left_at_default=left,
        kept_defaults=kept,
        group_options=group_options or {},
        takes=takes,
        hooks=Hooks(named_parameters=_params_name(init) == "named_parameters"),
    )


def _params_name(init: Callable[..., None]) -> str | None:
    """The name of the constructor's parameters argument (after ``self``)."""
    names = list(inspect.signature(init).parameters)
    return names[1] if len(names) > 1 else None


def _fits(value: Any, kind: _Scalar) -> bool:
    """Whether a default is a value of its kind (not a sentinel object standing for one)."""
    if kind.choices is not None:
        return any(value == c and type(value) is type(c) for c in kind.choices)
    if kind.type is ANY:
        return type(value) in _SCALARS
    if kind.type is float:
        return type(value) in (int, float)
    return type(value) is kind.type


def _short(value: Any) -> str:
    text = repr(value)
    return f"<{type(value).__name__}>" if " at 0x" in text or len(text) > 40 else text


def _allows_none(hint: Any) -> bool:
    """Whether an annotation admits None (``float | None``, ``Optional[bool]``)."""
    return hint is type(None) or type(None) in typing.get_args(hint)


def _problems(what: str, problems: list[str]) -> str:
    if len(problems) == 1:
        return f"{what}: {problems[0]}"
    return f"{what}: {len(problems)} problems:\n" + "\n".join(f"  - {p}" for p in problems)


def _hints(init: Callable[..., None]) -> dict[str, Any]:
    """The constructor's annotations, evaluated (each on its own where some cannot be)."""
    try:
        return typing.get_type_hints(init)
    except Exception:
        pass
    module = sys.modules.get(getattr(init, "__module__", "") or "", None)
    scope = {**vars(typing), **vars(collections.abc), **(vars(module) if module else {})}
    out = {}
    for name, hint in getattr(init, "__annotations__", {}).items():
        if isinstance(hint, str):
            try:
                hint = eval(hint, scope)
            except Exception:
                continue
        out[name] = hint
    return out


def _kind(hint: Any, default: Any) -> _Kind:
    """What an argument is, from its annotation (when it says) or else its default."""
    if hint is None:
        return _from_default(default)
    from_hint = _from_hint(hint, default)
    if from_hint is not None:
        return from_hint
    if default is None or default is REQUIRED:
        return _Unrepresentable(f"annotated {getattr(hint, '__name__', None) or hint}")
    return _from_default(default)


def _from_default(default: Any) -> _Kind:
    if default is None:
        return _Scalar(ANY)
    if default is REQUIRED:
        return _Unrepresentable("not annotated")
    if type(default) in _SCALARS:
        return _Scalar(type(default))
    if isinstance(default, tuple) and default and all(type(v) in _SCALARS for v in default):
        return _Tuple(tuple(float if type(v) is int else type(v) for v in default))
    if inspect.isclass(default) or inspect.isfunction(default) or inspect.isbuiltin(default):
        return _Reference()
    return _Unrepresentable(f"a {type(default).__name__}")


def _from_hint(hint: Any, default: Any) -> _Kind | None:
    """The kind an annotation says; None where it says nothing usable."""
    if hint in _SCALARS:
        return _Scalar(hint)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Literal:
        types = {type(a) for a in args}
        if len(types) == 1 and types <= set(_SCALARS):
            return _Scalar(types.pop(), tuple(args))
        return None
    if origin is tuple:
        if args and Ellipsis not in args and all(a in _SCALARS for a in args):
            return _Tuple(tuple(args))
        return _from_default(default) if isinstance(default, tuple) else None
    if origin is type or origin is collections.abc.Callable or hint is collections.abc.Callable:
        return _Reference()
    if origin in (typing.Union, UnionType):  # float | None, float | Tensor, tuple | tuple
        if isinstance(default, tuple):
            return _from_default(default)
        members = [a for a in args if a is not type(None)]
        kinds = [k for a in members if (k := _from_hint(a, default)) is not None]
        fixed = [k for k in kinds if isinstance(k, _Tuple)]
        if fixed and len({len(k.types) for k in fixed}) == 1:
            return fixed[0]
        for k in kinds:
            if isinstance(k, _Scalar | _Reference):
                return k
    return None


def scalar_parameters(
    init: Callable[..., None], what: str, *, skip: int = 1, taken: Collection[str] = ()
) -> tuple[Hyperparameter, ...]:
    """The scalar arguments of ``init`` after its first ``skip`` (``self``) as own parameters:
    the grid keys and typed columns of something a grid names that is not an optimizer (a
    workload, :mod:`harness.workloads`), typed as an optimizer's own hyperparameters are (its
    annotation, else its default; ``Literal[...]``: choices). ``taken``: names it may not use
    (run fields, result columns, metrics).

    Raises:
        UserError: naming ``what``: a required argument no grid can give, an argument of a kind
            no grid can give (a tuple, a class, an object), or a taken name; every problem at once.
    """
    params = list(inspect.signature(init).parameters.values())[skip:]
    hints = _hints(init)
    problems: list[str] = []
    out: list[Hyperparameter] = []
    for p in params:
        if p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
            continue
        default = REQUIRED if p.default is p.empty else p.default
        kind = _kind(hints.get(p.name), default)
        if not isinstance(kind, _Scalar):
            why = kind.why if isinstance(kind, _Unrepresentable) else "not a scalar"
            problems.append(f"argument {p.name!r} is {why}; a grid can give scalars only")
        elif p.name in FIELDS or p.name in RESERVED or p.name in taken:
            problems.append(f"argument {p.name!r} is named like a run field or a result column")
        else:
            out.append(
                Hyperparameter(name=p.name, type=kind.type, default=default, choices=kind.choices)
            )
    if problems:
        raise UserError(_problems(what, problems))
    return tuple(out)
