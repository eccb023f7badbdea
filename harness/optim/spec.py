"""How an optimizer is declared: which run fields it reads, its own hyperparameters, and the
parameter-group options it needs. Torch-free: resolving a grid needs no torch; the optimizer's
class is imported the first time a run builds it (:meth:`OptimizerSpec.load`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.core.catalogue import FIELDS, PER_OPTIMIZER, RESERVED
from harness.core.config import RunConfig
from harness.core.errors import UserError
from harness.core.fields import Scale
from harness.core.registry import load_class, load_object

REQUIRED = object()
"""Marker: the field has no default and must be given in the grid."""

TYPES: dict[str, type] = {"bool": bool, "int": int, "float": float, "str": str}
"""The types a hyperparameter may have (each becomes a typed column)."""

ANY = object
"""The type of a hyperparameter whose constructor says nothing of its type (no annotation, a
None default): any scalar, stored as the grid gives it (a number or a string)."""

NAMESPACE = "opt_"
"""Prefix of the grid key and column of a constructor argument whose own name is taken by a run
field the optimizer does not read, or by a result column (``warmup_steps`` of a schedule-free
optimizer is ``opt_warmup_steps``); it is passed to the constructor under its own name."""

GROUPS = ("embedding", "head", "matrix", "vector")
"""The parameter groups the harness routes (``harness.optim.routing``): the input embedding (and
the head when tied), an untied output head, every other >= 2-D weight, and the rest (norm gains,
biases, learned positions)."""


DECAYED: dict[str, frozenset[str]] = {
    "matrices": frozenset({"matrix"}),
    "all_weights": frozenset({"embedding", "head", "matrix", "position"}),
    "no_embedding": frozenset({"head", "matrix", "position"}),
}
"""``decay_params`` convention -> the kinds of parameter it decays (``position``: learned
absolute positions; norm gains and biases are never decayed). ``all_weights`` is plainLM's
(``models/construct.py``: every parameter whose name holds neither ``bias`` nor ``norm``);
``no_embedding`` is nanoGPT's as the Coupled Adam paper's code runs it (``configure_optimizers``:
every >= 2-D tensor but ``wte``, the token embedding, which the tied head shares)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Hyperparameter:
    """An optimizer's own hyperparameter: one it declares beyond the run fields (``gamma`` of a
    new optimizer). It is a grid key and a column of its name, passed to the constructor under
    that name."""

    name: str
    """Grid key, column name and constructor keyword."""
    type: type
    """``bool``, ``int``, ``float``, ``str`` or :data:`ANY`."""
    default: Any = REQUIRED
    """Value when a grid sets none (None: absent), or ``REQUIRED``."""
    choices: tuple[Any, ...] | None = None
    """The values it may take (a ``Literal[...]`` annotation); None: any of its type."""
    nullable: bool = False
    """A grid may set it to null (its annotation allows None), whatever its default."""
    omit_unset: bool = False
    """Unset (None), it is not passed, so the constructor's own default applies: a default no
    grid value can write (a sentinel object, heavyball's ``use_default``)."""
    reference: bool = False
    """Its value names a class or a function (``torch.optim:AdamW``, ``path/to/file.py:f``),
    imported when the optimizer is built and passed as the object (SAM's ``base_optimizer``)."""
    unit: str = ""
    """Unit of the value."""
    scale: Scale = Scale.LINEAR
    """How its values are spaced when swept."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Hooks:
    """What an optimizer needs from the loop beyond ``step()`` that its constructor cannot say,
    declared (:func:`harness.optim.hooks.declare`), never guessed; the loop and the preflight
    act on it (:mod:`harness.optim.hooks`)."""

    named_parameters: bool = False
    """The constructor takes ``(name, parameter)`` pairs, not parameter groups (Adam-mini): the
    parameters of the groups it takes are passed with their names, with the run's
    ``weight_decay`` as a keyword; its own grouping and decay rules apply. Set by itself for a
    constructor whose parameters argument is named ``named_parameters``."""
    create_graph: bool = False
    """The backward pass keeps its graph (``loss.backward(create_graph=True)``): the optimizer
    takes Hessian-vector products of the gradients (AdaHessian, SophiaH)."""
    every: Mapping[str, int] = field(default_factory=dict)
    """Method name -> period, in optimizer steps: the loop calls ``optimizer.<method>()`` after
    every so many steps (after ``step()``, with that step's gradients still in place), as
    Sophia's ``update_hessian`` wants."""


@dataclass(frozen=True, kw_only=True, slots=True)
class OptimizerSpec:
    """How a run's fields become an optimizer's constructor arguments."""

    cls: str
    """Where the ``torch.optim.Optimizer`` subclass lives, ``module:Class``; it is constructed
    as ``cls(groups, lr=..., **kwargs)``."""
    fields: Mapping[str, Any] = field(default_factory=dict)
    """Run fields it reads (of ``PER_OPTIMIZER``) -> default, or ``REQUIRED``; the run fields it
    does not list are None for its runs."""
    hyperparameters: tuple[Hyperparameter, ...] = ()
    """Its own hyperparameters (beyond the run fields)."""
    renamed: Mapping[str, str] = field(default_factory=dict)
    """Run field or own hyperparameter -> the constructor keyword it is passed as, where they
    differ (Signum takes ``beta1`` as ``beta``; a namespaced ``opt_warmup_steps`` is passed as
    ``warmup_steps``). Unless renamed or ``packed``, ``beta1`` and ``beta2`` travel as torch's
    ``betas`` pair and every other field and hyperparameter under its own name."""
    packed: Mapping[str, tuple[str, ...]] | None = None
    """Constructor keyword taking a tuple -> the grid keys of its elements, in order
    (``{"betas": ("beta1", "beta2", "beta3")}``); None: ``beta1`` and ``beta2`` travel as
    ``betas`` unless renamed (a declaration written by hand)."""
    left_at_default: Mapping[str, str] = field(default_factory=dict)
    """Constructor argument -> why a grid cannot set it (a list, a tensor, an object): it is
    never passed, so the constructor's default applies; the dry run says so."""
    kept_defaults: Mapping[str, str] = field(default_factory=dict)
    """Constructor argument -> its default, which is not a value of its type (a sentinel
    object): a grid may set it; unset, it is not passed (:attr:`Hyperparameter.omit_unset`), and
    the dry run says so."""
    group_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Routed group name (``embedding``, ``head``, ``matrix``, ``vector``) -> extra param-group
    keys this optimizer needs, e.g. ``{"embedding": {"coupled": True}}`` for Coupled Adam."""
    takes: tuple[str, ...] | None = None
    """The routed groups this optimizer updates (None: all); the other groups are updated by
    AdamW with the run's ``lr`` and the harness's Adam defaults (an optimizer defined for
    matrices only, as Muon is)."""
    hooks: Hooks = Hooks()
    """What it needs from the loop beyond ``step()``."""
    detected: tuple[str, ...] = ()
    """The known hooks its class shows signs of needing (:data:`harness.optim.hooks.KNOWN`):
    the dry run names each one its ``hooks`` do not wire."""

    @property
    def name(self) -> str:
        """The class name (for messages)."""
        return self.cls.rpartition(":")[2]

    def check(self, name: str) -> None:
        """Raise ValueError when the declaration is inconsistent (unknown run fields, a
        hyperparameter named like a run field, an unsupported type)."""
        own = {h.name for h in self.hyperparameters}
        unknown = (set(self.fields) | set(self.renamed) - own) - set(PER_OPTIMIZER)
        if unknown:
            raise ValueError(
                f"optimizer {name!r} reads unknown run fields {sorted(unknown)}; run fields an "
                f"optimizer may read: {', '.join(PER_OPTIMIZER)}"
            )
        bad_every = {k: v for k, v in self.hooks.every.items() if type(v) is not int or v < 1}
        if bad_every:
            raise ValueError(
                f"optimizer {name!r}: every={bad_every}: each period is a whole number of "
                "steps >= 1"
            )
        bad = set(self.takes or ()) - set(GROUPS)
        if bad:
            raise ValueError(
                f"optimizer {name!r}: takes unknown groups {sorted(bad)}; "
                f"groups: {', '.join(GROUPS)}"
            )
        for h in self.hyperparameters:
            if h.name in FIELDS or h.name in RESERVED or h.name in self.left_at_default:
                raise ValueError(
                    f"optimizer {name!r}: hyperparameter {h.name!r} collides with the column "
                    f"{h.name!r}; name it {NAMESPACE}{h.name} and pass it as {h.name} "
                    f"(renamed={{{NAMESPACE + h.name!r}: {h.name!r}}}), as the harness does for a "
                    "constructor's argument"
                )
            if h.type not in (*TYPES.values(), ANY):
                raise ValueError(
                    f"optimizer {name!r}: hyperparameter {h.name!r} has type {h.type!r}; "
                    f"valid: {', '.join(TYPES)}"
                )

    def defaults(self) -> dict[str, Any]:
        """Every grid key it reads (run fields and own hyperparameters) -> default/REQUIRED."""
        return {**self.fields, **{h.name: h.default for h in self.hyperparameters}}

    def load(self) -> type:
        """The ``torch.optim.Optimizer`` subclass (imports its module; that it subclasses
        ``Optimizer`` is checked where torch is, by :func:`harness.optim.build.build_optimizer`).

        Raises:
            UserError: ``cls`` cannot be imported or is not a class.
        """
        return load_class(self.cls, object)

    def kwargs(self, run: RunConfig, *, fill_defaults: bool = False) -> dict[str, Any]:
        """Constructor kwargs (beyond ``lr`` and ``weight_decay``) from a resolved run.

        The elements of a ``packed`` keyword travel as one tuple (``betas``; none when all of
        them are None: the constructor's default); every other field and hyperparameter keeps
        its name (or its ``renamed`` one). A reference is passed as the object it names. With
        ``fill_defaults`` a value the run leaves None takes this spec's default: used for the
        embedding-group optimizer of ``embedding_optimizer``.
        """
        own = run.optim.hyperparameters.as_dict()
        v = {n: self._value(getattr(run.optim, n), n, fill_defaults) for n in self.fields}
        for h in self.hyperparameters:  # a grid may have namespaced it (named like a metric)
            value = self._value(own.get(h.name, own.get(NAMESPACE + h.name)), h.name, fill_defaults)
            if (h.reference and value == h.default) or (h.omit_unset and value is None):
                continue  # the constructor's own default object
            v[h.name] = load_object(value) if h.reference and value is not None else value
        out: dict[str, Any] = {}
        for keyword, keys in self._packed().items():
            values = tuple(v.pop(k) for k in keys)
            if any(x is None for x in values) and any(x is not None for x in values):
                raise UserError(
                    f"optimizer {self.name}: {keyword} needs all of {', '.join(keys)} or none"
                )
            if values[0] is not None:
                out[keyword] = values
        out.update((self.renamed.get(name, name), value) for name, value in v.items())
        return out

    def _packed(self) -> Mapping[str, tuple[str, ...]]:
        if self.packed is not None:
            return self.packed
        pair = {"beta1", "beta2"} <= self.fields.keys() and not {"beta1", "beta2"} & set(
            self.renamed
        )
        return {"betas": ("beta1", "beta2")} if pair else {}

    def _value(self, value: Any, name: str, fill_defaults: bool) -> Any:
        if value is None and fill_defaults:
            value = self.defaults()[name]
            if value is REQUIRED:
                raise UserError(
                    f"optimizer {self.name} needs {name!r}, which the run leaves unset; "
                    f"set {name} in the grid"
                )
        return value
