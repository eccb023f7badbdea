"""Resolve one grid point (a dict of user values) into a complete :class:`RunConfig`.

Resolution fills, in order: the model preset's architecture, the dataset's vocabulary (from the
``vocab`` look-up the caller hands in), the optimizers' declared defaults (run fields and own
hyperparameters the run's optimizers do not read become None), derived values (``steps = tokens
// (batch_size * seq_len)`` or the reverse, and ``micro_batch_size = batch_size``), the fields'
declared defaults, and arithmetic expressions over other fields (``warmup_steps: "0.1 * steps"``).
Every value is then type-checked against the field (or hyperparameter) it fills, and the config's
sections check their own constraints.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from harness.core.catalogue import FIELDS, PER_OPTIMIZER, from_flat, names_with
from harness.core.config import RunConfig
from harness.core.errors import UserError
from harness.core.fields import Role
from harness.core.registry import canonical_reference, is_file_reference, is_reference
from harness.grid import expr
from harness.metrics.catalogue import METRICS, track_names
from harness.model.architecture import preset_fields
from harness.model.builder import builder_arguments
from harness.optim.registry import canonical_name, get_spec
from harness.optim.schedule import SCHEDULE_FIELDS, SCHEDULES
from harness.optim.spec import ANY, NAMESPACE, REQUIRED, OptimizerSpec
from harness.workloads.registry import WorkloadSpec, get_workload
from harness.workloads.registry import canonical_name as canonical_workload

VocabSize = Callable[[str], int]
"""Dataset name or directory -> the vocabulary size of its model."""

REQUIRED_KEYS = frozenset(
    f.name for f in FIELDS.values() if f.default is dataclasses.MISSING and f.settable
)
"""Fields every run needs a value for (given, or derived by resolution)."""

ARCHITECTURE = tuple(
    n for n in names_with(Role.ARCHITECTURE) if n not in ("model", "vocab_size", "workload")
)
"""The architecture fields a preset fills or a user's builder may take."""

#: Derived fields: name -> (inputs, function of those inputs).
DERIVED: dict[str, tuple[tuple[str, ...], Callable[..., Any]]] = {
    "steps": (("tokens", "batch_size", "seq_len"), lambda t, b, s: int(t) // (int(b) * int(s))),
    "tokens": (("steps", "batch_size", "seq_len"), lambda n, b, s: int(n) * int(b) * int(s)),
    "micro_batch_size": (("batch_size",), lambda b: b),
}


@dataclasses.dataclass(frozen=True, slots=True)
class _Type:
    """What a key's values must be: the type, whether None is allowed, and the values it may
    take (None: any of its type)."""

    type: type
    optional: bool
    choices: tuple[Any, ...] | None = None
    finite: bool = True  # False: an optimizer's own default is not finite (growth_rate=inf)


_FIELD_TYPES = {name: _Type(f.type, f.optional) for name, f in FIELDS.items()}
_DEFAULTS = {
    name: f.default
    for name, f in FIELDS.items()
    if f.settable and f.default is not dataclasses.MISSING
}


@dataclasses.dataclass(frozen=True, slots=True)
class _Optimizers:
    """What the optimizers of a point read (computed once per combination of optimizers)."""

    types: dict[str, _Type]  # run fields and own hyperparameters -> type
    defaults: dict[str, Any]  # what they read -> the first reader's default (or REQUIRED)
    readers: dict[str, str]  # what they read -> the first reader's name
    unread: tuple[str, ...]  # per-optimizer run fields and own hyperparameters nobody reads
    numeric: frozenset[str]  # the keys that may hold expressions
    references: frozenset[str]  # the keys whose values name code (``torch.optim:AdamW``)


def _finite(default: Any) -> bool:
    return not (isinstance(default, float) and not math.isfinite(default))


def _optimizers(specs: dict[str, OptimizerSpec]) -> _Optimizers:
    own = {h.name: h for spec in specs.values() for h in spec.hyperparameters}
    types = _FIELD_TYPES | {
        k: _Type(h.type, h.default is None or h.nullable, h.choices, _finite(h.default))
        for k, h in own.items()
    }
    defaults: dict[str, Any] = {}
    readers: dict[str, str] = {}
    for name, spec in specs.items():
        for key, value in spec.defaults().items():
            defaults.setdefault(key, value)
            readers.setdefault(key, name)
    unread = tuple(k for k in (*PER_OPTIMIZER, *own) if k not in defaults)
    numeric = frozenset(k for k, t in types.items() if t.type in (int, float))
    references = frozenset(k for k, h in own.items() if h.reference)
    return _Optimizers(types, defaults, readers, unread, numeric, references)


def column_spec(name: str) -> OptimizerSpec:
    """The declaration of optimizer ``name`` as a grid sees it: an own hyperparameter named like
    a metric (SAM's ``rho``) namespaced to ``opt_<name>`` (the optimizer layer, below the
    metrics, namespaces run fields and result columns itself); the optimizer reads either."""
    spec = get_spec(name)
    if not any(h.name in METRICS for h in spec.hyperparameters):
        return spec
    renamed = dict(spec.renamed)
    own = []
    for h in spec.hyperparameters:
        if h.name in METRICS:
            renamed[NAMESPACE + h.name] = spec.renamed.get(h.name, h.name)
            h = dataclasses.replace(h, name=NAMESPACE + h.name)
        own.append(h)
    return dataclasses.replace(spec, hyperparameters=tuple(own), renamed=renamed)


def optimizer_specs(
    optimizers: Iterable[str], base: Path | None, problems: list[str]
) -> dict[str, OptimizerSpec]:
    """Canonical name -> declaration of each optimizer a grid names; each one that cannot be
    used (an unknown name, a reference that cannot be loaded) adds its problem to ``problems``.
    """
    out = {}
    for name in optimizers:
        try:
            canonical = canonical_name(name, base)
            out[canonical] = column_spec(canonical)
        except UserError as e:
            problems.append(str(e))
    return out


class Resolver:
    """Resolves grid points of one grid; caches dataset look-ups across points."""

    def __init__(
        self, grid: str, scale: str, vocab: VocabSize, where: str, base: Path | None = None
    ) -> None:
        """``base``: the folder relative file references (``./my_opt.py:Opt``) start from."""
        self.grid, self.scale, self.where, self.base = grid, scale, where, base
        self._vocab_of = vocab
        self._vocab: dict[str, int] = {}
        self._optimizers: dict[tuple[str, ...], _Optimizers] = {}

    def resolve(self, point: dict[str, Any], at: str) -> RunConfig:
        """A complete RunConfig for ``point``; ``at`` names the point in error messages."""
        d = dict(point)
        try:
            workload = self._fill_workload(d)
            if workload is None:
                self._fill_model(d)
                self._fill_dataset(d)
            optimizers = self._fill_optimizer(d)
            if workload is not None:
                optimizers = self._with_workload(d, optimizers, *workload)
            for k, v in _DEFAULTS.items():
                if k not in d:
                    d[k] = v
            _fill_schedule(d)
            d["track"] = ",".join(track_names(d["track"])) or None
            _derive_and_evaluate(d, optimizers.types, optimizers.numeric)
            missing = REQUIRED_KEYS - d.keys()
            if missing:
                raise UserError(f"no value for {', '.join(map(repr, sorted(missing)))}")
            types = optimizers.types
            values = {k: _coerce(k, v, types[k]) for k, v in d.items()}
            SCHEDULES[values["schedule"]]  # an unknown schedule lists the known ones
            if any(is_file_reference(v) for v in values.values()):  # its ids: relative paths
                values["grid_dir"] = str((self.base or Path.cwd()).resolve())
            return from_flat({"grid": self.grid, "scale": self.scale, **values}, clean=False)
        except UserError as e:
            raise UserError(f"{self.where}: {at}: {e}") from None

    def _fill_workload(self, d: dict[str, Any]) -> tuple[WorkloadSpec, dict[str, Any]] | None:
        """For a run naming a workload (:mod:`harness.workloads`): its canonical name, which is
        the run's ``model`` and ``dataset`` too, no vocabulary (``vocab_size`` 1), no
        architecture fields, one example per step unless ``batch_size`` says, no ``diverge_rise``
        unless the grid sets one, and its own
        parameters, taken out of ``d`` (:meth:`_with_workload` puts them back). None for the
        GPT's runs (``d`` untouched but for a null ``workload``)."""
        if d.get("workload") is None:
            d.pop("workload", None)
            return None
        for key in ("model", "dataset", "vocab_size"):
            if key in d:
                raise UserError(f"a run naming a workload takes no {key!r} (it is the workload's)")
        d["workload"] = d["model"] = d["dataset"] = canonical_workload(
            str(d["workload"]), self.base
        )
        spec = get_workload(d["workload"])
        d["vocab_size"] = 1
        for k in ARCHITECTURE:
            d[k] = None
        d.setdefault("seq_len", 1)
        d.setdefault("batch_size", 1)
        d.setdefault("diverge_rise", None)  # in nats of a GPT's loss, not of a workload's
        own = {k: d.pop(k) for k in spec.names if k in d}
        return spec, own

    def _with_workload(
        self, d: dict[str, Any], o: _Optimizers, spec: WorkloadSpec, own: dict[str, Any]
    ) -> _Optimizers:
        """``d`` with the workload's parameters (the grid's values, else its defaults), and
        ``o`` with their types."""
        types = {p.name: _Type(p.type, p.default is None, p.choices) for p in spec.parameters}
        if clash := sorted(types.keys() & o.types.keys()):
            raise UserError(
                f"workload {d['workload']!r}: parameter(s) {', '.join(clash)} collide with the "
                "optimizer's keys"
            )
        for p in spec.parameters:
            value = own.get(p.name, p.default)
            if value is REQUIRED:
                raise UserError(f"workload {d['workload']!r} needs {p.name!r}")
            d[p.name] = value
        numeric = frozenset(k for k, t in types.items() if t.type in (int, float))
        return dataclasses.replace(o, types=o.types | types, numeric=o.numeric | numeric)

    def _fill_model(self, d: dict[str, Any]) -> None:
        """A preset's architecture, or what a user's builder takes (its defaults; the
        architecture fields it does not take are None)."""
        if "model" not in d:
            raise UserError("no 'model' given; set it in base (e.g. model: tiny)")
        if not is_reference(str(d["model"])):
            for k, v in preset_fields(str(d["model"])).items():
                d.setdefault(k, v)
            return
        d["model"] = canonical_reference(str(d["model"]), self.base)
        takes = builder_arguments(d["model"])
        for k in ARCHITECTURE:
            if k not in takes:
                d[k] = None
            elif k not in d and takes[k] is not inspect.Parameter.empty:
                d[k] = takes[k]

    def _fill_dataset(self, d: dict[str, Any]) -> None:
        name = str(d.setdefault("dataset", FIELDS["dataset"].default))
        if "vocab_size" not in d:
            if name not in self._vocab:
                self._vocab[name] = self._vocab_of(name)
            d["vocab_size"] = self._vocab[name]

    def _fill_optimizer(self, d: dict[str, Any]) -> _Optimizers:
        """Resolve what the run's optimizers read (the main one's, then the embedding
        optimizer's): the grid's value, else the optimizer's default. Run fields and own
        hyperparameters neither reads are None, so runs that differ only in them are one run.

        Returns:
            What the run's optimizers read, with the types of their own hyperparameters.
        """
        if "optimizer" not in d:
            raise UserError("no 'optimizer' given")
        d["optimizer"] = canonical_name(str(d["optimizer"]), self.base)
        names: tuple[str, ...] = (d["optimizer"],)
        if d.get("embedding_optimizer") is not None:
            d["embedding_optimizer"] = canonical_name(str(d["embedding_optimizer"]), self.base)
            names += (d["embedding_optimizer"],)
        if names not in self._optimizers:
            self._optimizers[names] = _optimizers({n: column_spec(n) for n in names})
        o = self._optimizers[names]
        for key in [k for k in d if k not in o.types]:
            del d[key]  # another optimizer's hyperparameter (the grid names several)
        for key in o.unread:
            d[key] = None
        for key in o.references & d.keys():
            if isinstance(d[key], str) and is_reference(d[key]):
                d[key] = canonical_reference(d[key], self.base)  # a file: from the grid's folder
        for key, value in o.defaults.items():
            if key not in d:
                if value is REQUIRED:
                    raise UserError(f"optimizer {o.readers[key]!r} needs {key!r}")
                d[key] = value
        return o


SCHEDULE_KEYS = frozenset(k for fields in SCHEDULE_FIELDS.values() for k in fields)
"""Run fields read only by some schedules (``wsd``'s ``decay_frac``, ``decay_shape``)."""


def _fill_schedule(d: dict[str, Any]) -> None:
    """The fields the run's schedule reads: the grid's value, else the schedule's default; the
    fields it does not read are None (a grid comparing schedules may set them in its base)."""
    reads = SCHEDULE_FIELDS.get(str(d["schedule"]), {})
    for key in SCHEDULE_KEYS:
        if key not in reads:
            d[key] = None
        elif d.get(key) is None:
            d[key] = reads[key]


def _number(v: str) -> float | None:
    try:
        return float(v)
    except ValueError:
        return None


def _is_plain_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _derive_and_evaluate(
    d: dict[str, Any], types: dict[str, _Type], numeric: frozenset[str]
) -> None:
    """Fill derived fields and evaluate expressions (in the ``numeric`` keys) until nothing
    changes."""
    if "steps" in d and "tokens" in d:
        raise UserError("give either 'tokens' or 'steps', not both (the other is derived)")
    for k, v in d.items():
        if k in numeric and isinstance(v, str) and _number(v) is not None:
            d[k] = _number(v)  # YAML 1.1 reads 3e-3 and 3.2e9 as strings
    # Only the pending expressions are revisited on each pass (grids of 10,000 points resolve
    # every point through here); env holds the plain numbers known so far.
    pending = {k: v for k, v in d.items() if k in numeric and isinstance(v, str)}
    env = {k: v for k, v in d.items() if _is_plain_number(v)}
    progress = True
    while progress:
        progress = False
        for k, v in list(pending.items()):
            if expr.names_in(v) <= env.keys():
                value = expr.evaluate(v, env)
                if isinstance(value, float) and not math.isfinite(value):
                    raise UserError(f"{k}: expression {v!r} is {value}, not a finite number")
                d[k] = env[k] = round(value) if types[k].type is int else value  # "0.1 * steps"
                del pending[k]
                progress = True
        for k, (inputs, fn) in DERIVED.items():
            if k not in d and all(i in env for i in inputs):
                d[k] = fn(*(env[i] for i in inputs))
                if _is_plain_number(d[k]):
                    env[k] = d[k]
                progress = True
    for k, v in pending.items():
        missing = sorted(expr.names_in(v) - env.keys())
        if not set(missing) & (types.keys() | DERIVED.keys()):
            raise UserError(
                f"{k}: expected {types[k].type.__name__}, got the string {v!r} (neither a number "
                "nor an expression over other fields)"
            )
        raise UserError(f"{k}: expression {v!r} refers to {missing} which never resolve")
    for k in ("tokens", "seq_len", "batch_size"):
        if k not in d:
            raise UserError(f"no {k!r} given")


def _coerce(k: str, v: Any, want: _Type) -> Any:
    """Check ``v`` against ``k``'s type; numeric strings (YAML's ``3.2e9``) are numbers; a
    float must be finite (``.nan``, ``.inf`` and expressions that overflow are refused)."""
    out = _typed(k, v, want)
    if isinstance(out, float) and not math.isfinite(out) and want.finite:
        raise UserError(f"{k}: {v!r} is not a finite number")
    return out


def _typed(k: str, v: Any, want: _Type) -> Any:
    if type(v) is want.type and want.choices is None:  # the common case, first
        return v
    if v is None:
        if want.optional:
            return None
        raise UserError(f"{k}: null is not allowed (expected {want.type.__name__})")
    if want.choices is not None:
        if v in want.choices:
            return v
        raise UserError(f"{k}: {v!r} is not one of {', '.join(map(repr, want.choices))}")
    t = want.type
    if t is ANY:
        if isinstance(v, str) and _number(v) is not None:
            return _number(v)
        if isinstance(v, bool | int | float | str):
            return v
        raise UserError(f"{k}: expected a number or a string, got {type(v).__name__} {v!r}")
    if t is bool:
        if isinstance(v, bool):
            return v
    elif t is str:
        if isinstance(v, str):
            return v
    elif isinstance(v, str) and _number(v) is not None:
        return _typed(k, _number(v), want)
    elif t is float and _is_plain_number(v):
        return float(v)
    elif t is int and _is_plain_number(v) and float(v).is_integer():
        return int(v)
    raise UserError(f"{k}: expected {t.__name__}, got {type(v).__name__} {v!r}")
