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
from collections.abc import Callable, Iterable
from typing import Any

from harness.core.catalogue import FIELDS, PER_OPTIMIZER, from_flat
from harness.core.config import RunConfig
from harness.core.errors import UserError
from harness.grid import expr
from harness.model.architecture import preset_fields
from harness.optim.registry import get_spec
from harness.optim.schedule import SCHEDULES
from harness.optim.spec import REQUIRED, OptimizerSpec

VocabSize = Callable[[str], int]
"""Dataset name or directory -> the vocabulary size of its model."""

REQUIRED_KEYS = frozenset(
    f.name for f in FIELDS.values() if f.default is dataclasses.MISSING and f.settable
)
"""Fields every run needs a value for (given, or derived by resolution)."""

#: Derived fields: name -> (inputs, function of those inputs).
DERIVED: dict[str, tuple[tuple[str, ...], Callable[..., Any]]] = {
    "steps": (("tokens", "batch_size", "seq_len"), lambda t, b, s: int(t) // (int(b) * int(s))),
    "tokens": (("steps", "batch_size", "seq_len"), lambda n, b, s: int(n) * int(b) * int(s)),
    "micro_batch_size": (("batch_size",), lambda b: b),
}


@dataclasses.dataclass(frozen=True, slots=True)
class _Type:
    """What a key's values must be: the type, and whether None is allowed."""

    type: type
    optional: bool


_FIELD_TYPES = {name: _Type(f.type, f.optional) for name, f in FIELDS.items()}


def hyperparameter_keys(optimizers: Iterable[str], where: str) -> set[str]:
    """The own hyperparameters the named optimizers declare (grid keys beyond the run fields).

    Raises:
        UserError: an unknown optimizer name (naming ``where`` and the known ones).
    """
    keys: set[str] = set()
    for name in optimizers:
        try:
            spec = get_spec(name)
        except UserError as e:
            raise UserError(f"{where}: {e}") from None
        keys.update(h.name for h in spec.hyperparameters)
    return keys


class Resolver:
    """Resolves grid points of one grid; caches dataset look-ups across points."""

    def __init__(self, grid: str, scale: str, vocab: VocabSize, where: str) -> None:
        self.grid, self.scale, self.where = grid, scale, where
        self._vocab_of = vocab
        self._vocab: dict[str, int] = {}

    def resolve(self, point: dict[str, Any], at: str) -> RunConfig:
        """A complete RunConfig for ``point``; ``at`` names the point in error messages."""
        d = dict(point)
        try:
            self._fill_model(d)
            self._fill_dataset(d)
            types = _FIELD_TYPES | self._fill_optimizer(d)
            for k, f in FIELDS.items():
                if k not in d and f.settable and f.default is not dataclasses.MISSING:
                    d[k] = f.default
            _derive_and_evaluate(d, types)
            missing = sorted(REQUIRED_KEYS - d.keys())
            if missing:
                raise UserError(f"no value for {', '.join(map(repr, missing))}")
            values = {k: _coerce(k, v, types[k]) for k, v in d.items()}
            SCHEDULES[values["schedule"]]  # an unknown schedule lists the known ones
            return from_flat({"grid": self.grid, "scale": self.scale, **values})
        except UserError as e:
            raise UserError(f"{self.where}: {at}: {e}") from None

    def _fill_model(self, d: dict[str, Any]) -> None:
        if "model" not in d:
            raise UserError("no 'model' given; set it in base (e.g. model: tiny)")
        for k, v in preset_fields(str(d["model"])).items():
            d.setdefault(k, v)

    def _fill_dataset(self, d: dict[str, Any]) -> None:
        name = str(d.setdefault("dataset", FIELDS["dataset"].default))
        if "vocab_size" not in d:
            if name not in self._vocab:
                self._vocab[name] = self._vocab_of(name)
            d["vocab_size"] = self._vocab[name]

    def _fill_optimizer(self, d: dict[str, Any]) -> dict[str, _Type]:
        """Resolve what the run's optimizers read (the main one's, then the embedding
        optimizer's): the grid's value, else the optimizer's default. Run fields and own
        hyperparameters neither reads are None, so runs that differ only in them are one run.

        Returns:
            The types of the own hyperparameters the run's optimizers read.
        """
        if "optimizer" not in d:
            raise UserError("no 'optimizer' given")
        names = [str(d["optimizer"])]
        if d.get("embedding_optimizer") is not None:
            names.append(str(d["embedding_optimizer"]))
        specs = {name: get_spec(name) for name in names}
        own = {h.name: h for spec in specs.values() for h in spec.hyperparameters}
        for key in [k for k in d if k not in FIELDS and k not in own]:
            del d[key]  # another optimizer's hyperparameter (the grid names several)
        for key in [*PER_OPTIMIZER, *own]:
            readers = [name for name, spec in specs.items() if key in spec.defaults()]
            if not readers:
                d[key] = None
            elif key not in d:
                d[key] = _default(specs[readers[0]], readers[0], key)
        return {k: _Type(h.type, h.default is None) for k, h in own.items()}


def _default(spec: OptimizerSpec, name: str, key: str) -> Any:
    value = spec.defaults()[key]
    if value is REQUIRED:
        raise UserError(f"optimizer {name!r} needs {key!r}")
    return value


def _numeric(t: _Type) -> bool:
    return t.type in (int, float)


def _number(v: str) -> float | None:
    try:
        return float(v)
    except ValueError:
        return None


def _is_plain_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _derive_and_evaluate(d: dict[str, Any], types: dict[str, _Type]) -> None:
    """Fill derived fields and evaluate expressions until nothing changes."""
    if "steps" in d and "tokens" in d:
        raise UserError("give either 'tokens' or 'steps', not both (the other is derived)")
    numeric = {k for k, t in types.items() if _numeric(t)}
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
        raise UserError(f"{k}: expression {v!r} refers to {missing} which never resolve")
    for k in ("tokens", "seq_len", "batch_size"):
        if k not in d:
            raise UserError(f"no {k!r} given")


def _coerce(k: str, v: Any, want: _Type) -> Any:
    """Check ``v`` against ``k``'s type; numeric strings (YAML's ``3.2e9``) are numbers."""
    if v is None:
        if want.optional:
            return None
        raise UserError(f"{k}: null is not allowed (expected {want.type.__name__})")
    t = want.type
    if t is bool:
        if isinstance(v, bool):
            return v
    elif t is str:
        if isinstance(v, str):
            return v
    elif isinstance(v, str) and _number(v) is not None:
        return _coerce(k, _number(v), want)
    elif t is float and _is_plain_number(v):
        return float(v)
    elif t is int and _is_plain_number(v) and float(v).is_integer():
        return int(v)
    raise UserError(f"{k}: expected {t.__name__}, got {type(v).__name__} {v!r}")
