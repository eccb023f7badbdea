"""Resolve one grid point (a dict of user values) into a complete :class:`RunConfig`.

Resolution fills, in order: the model preset's architecture, the dataset's vocabulary, the
optimizer's documented defaults (fields an optimizer does not read become None), derived values
(``steps = tokens // (batch_size * seq_len)`` and ``micro_batch_size = batch_size``), and
arithmetic expressions over other fields (``warmup_steps: "0.1 * steps"``). Every value is then
type-checked against the RunConfig field it fills.
"""

from __future__ import annotations

import dataclasses
import operator
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness import expr
from harness.architecture import preset_fields
from harness.config import RunConfig, field_names
from harness.errors import UserError
from harness.optim.spec import OPTIMIZER_FIELDS, REQUIRED, get_spec

#: Keys a grid may set (everything but the identity fields).
USER_KEYS = frozenset(field_names()) - {"grid", "scale"}  # label included

#: Keys every run needs (no default, nothing derives them).
REQUIRED_KEYS = frozenset(
    f.name
    for f in dataclasses.fields(RunConfig)
    if f.default is dataclasses.MISSING and f.name not in ("grid", "scale")
)

#: Values used when a grid sets none; recorded in the manifest like any other value.
DEFAULTS: dict[str, Any] = {"eval_tokens": 2**16}

_HINTS = typing.get_type_hints(RunConfig)


def _base_type(name: str) -> type:
    args = [a for a in typing.get_args(_HINTS[name]) if a is not type(None)]
    return args[0] if args else _HINTS[name]


_NAMES = field_names()
_VALUES_OF = operator.attrgetter(*_NAMES)  # run -> tuple of field values (to_dict, faster)

FIELD_TYPE: dict[str, type] = {n: _base_type(n) for n in field_names()}
OPTIONAL: frozenset[str] = frozenset(
    n for n in field_names() if type(None) in typing.get_args(_HINTS[n])
)
NUMERIC = frozenset(n for n, t in FIELD_TYPE.items() if t in (int, float))

#: Derived fields: name -> (inputs, function of those inputs).
DERIVED: dict[str, tuple[tuple[str, ...], Callable[..., Any]]] = {
    "steps": (("tokens", "batch_size", "seq_len"), lambda t, b, s: int(t) // (int(b) * int(s))),
    "tokens": (("steps", "batch_size", "seq_len"), lambda n, b, s: int(n) * int(b) * int(s)),
    "micro_batch_size": (("batch_size",), lambda b: b),
}


class Resolver:
    """Resolves grid points of one grid; caches preset and dataset look-ups across points."""

    def __init__(self, grid: str, scale: str, data_root: Path, where: str) -> None:
        self.grid, self.scale, self.data_root, self.where = grid, scale, data_root, where
        self._vocab: dict[str, int] = {}

    def resolve(self, point: dict[str, Any], at: str) -> RunConfig:
        """A complete RunConfig for ``point``; ``at`` names the point in error messages."""
        d = dict(point)
        try:
            self._fill_model(d)
            self._fill_dataset(d)
            self._fill_optimizer(d)
            for k, v in DEFAULTS.items():
                d.setdefault(k, v)
            _derive_and_evaluate(d)
            missing = sorted(REQUIRED_KEYS - d.keys())
            if missing:
                raise UserError(f"no value for {', '.join(map(repr, missing))}")
            values = {k: _coerce(k, v) for k, v in d.items()}
            run = RunConfig(grid=self.grid, scale=self.scale, **values)
            _check(dict(zip(_NAMES, _VALUES_OF(run), strict=True)))
            return run
        except UserError as e:
            raise UserError(f"{self.where}: {at}: {e}") from None

    def _fill_model(self, d: dict[str, Any]) -> None:
        if "model" not in d:
            raise UserError("no 'model' given; set it in base (e.g. model: tiny)")
        for k, v in preset_fields(str(d["model"])).items():
            d.setdefault(k, v)

    def _fill_dataset(self, d: dict[str, Any]) -> None:
        from harness.data import DEFAULT_DATASET, dataset_vocab_size

        name = str(d.setdefault("dataset", DEFAULT_DATASET))
        if "vocab_size" not in d:
            if name not in self._vocab:
                self._vocab[name] = dataset_vocab_size(name, self.data_root)
            d["vocab_size"] = self._vocab[name]

    def _fill_optimizer(self, d: dict[str, Any]) -> None:
        """Resolve the optimizer fields the run's optimizers read (the main one's, then the
        embedding optimizer's): the grid's value, else the optimizer's default. Fields neither
        reads are None, so runs that differ only in an unread field are one run."""
        if "optimizer" not in d:
            raise UserError("no 'optimizer' given")
        names = [str(d["optimizer"])]
        if d.get("embedding_optimizer") is not None:
            names.append(str(d["embedding_optimizer"]))
        specs = {name: get_spec(name) for name in names}
        for f in OPTIMIZER_FIELDS:
            readers = [name for name, spec in specs.items() if f in spec.fields]
            if not readers:
                d[f] = None
            elif f not in d:
                default = specs[readers[0]].fields[f]
                if default is REQUIRED:
                    raise UserError(f"optimizer {readers[0]!r} needs {f!r}")
                d[f] = default


def _is_expression(k: str, v: Any) -> bool:
    return k in NUMERIC and isinstance(v, str) and _number(v) is None


def _number(v: str) -> float | None:
    try:
        return float(v)
    except ValueError:
        return None


def _derive_and_evaluate(d: dict[str, Any]) -> None:
    """Fill derived fields and evaluate expressions until nothing changes."""
    if "steps" in d and "tokens" in d:
        raise UserError("give either 'tokens' or 'steps', not both (the other is derived)")
    for k, v in d.items():
        if k in NUMERIC and isinstance(v, str) and _number(v) is not None:
            d[k] = _number(v)  # YAML 1.1 reads 3e-3 and 3.2e9 as strings
    # Only the pending expressions are revisited on each pass (grids of 10,000 points resolve
    # every point through here); env holds the plain numbers known so far.
    pending = {k: v for k, v in d.items() if _is_expression(k, v)}
    env = {k: v for k, v in d.items() if _is_plain_number(v)}
    progress = True
    while progress:
        progress = False
        for k, v in list(pending.items()):
            if expr.names_in(v) <= env.keys():
                value = expr.evaluate(v, env)
                d[k] = env[k] = round(value) if FIELD_TYPE[k] is int else value  # "0.1 * steps"
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


def _is_plain_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _coerce(k: str, v: Any) -> Any:
    """Check ``v`` against field ``k``'s type; numeric strings (YAML's ``3.2e9``) are numbers."""
    want = FIELD_TYPE[k]
    if v is None:
        if k in OPTIONAL:
            return None
        raise UserError(f"{k}: null is not allowed (expected {want.__name__})")
    if want is bool:
        if isinstance(v, bool):
            return v
    elif want is str:
        if isinstance(v, str):
            return v
    elif isinstance(v, str) and _number(v) is not None:
        return _coerce(k, _number(v))
    elif want is float and _is_plain_number(v):
        return float(v)
    elif want is int and _is_plain_number(v) and float(v).is_integer():
        return int(v)
    raise UserError(f"{k}: expected {want.__name__}, got {type(v).__name__} {v!r}")


_CHOICES = {
    "norm": ("rmsnorm", "layernorm"),
    "activation": ("swiglu", "gelu"),
    "positions": ("rope", "learned"),
    "precision": ("auto", "bf16", "fp32"),
    "compile": ("auto", "on", "off"),
}


def _check(v: dict[str, Any]) -> None:
    """Value constraints that the types alone do not express."""
    for k, choices in _CHOICES.items():
        if v[k] not in choices:
            raise UserError(f"{k}: {v[k]!r} is not one of {', '.join(choices)}")
    from harness.schedule import SCHEDULES

    if v["schedule"] not in SCHEDULES:
        raise UserError(f"schedule: {v['schedule']!r}; valid choices: {', '.join(SCHEDULES)}")
    for k in ("n_layer", "n_head", "d_model", "seq_len", "batch_size", "micro_batch_size"):
        if v[k] <= 0:
            raise UserError(f"{k}: must be positive, got {v[k]}")
    if v["lr"] <= 0:
        raise UserError(f"lr: must be positive, got {v['lr']}")
    if v["d_model"] % v["n_head"]:
        raise UserError(f"d_model {v['d_model']} is not divisible by n_head {v['n_head']}")
    if v["batch_size"] % v["micro_batch_size"]:
        raise UserError(
            f"batch_size {v['batch_size']} is not a multiple of micro_batch_size "
            f"{v['micro_batch_size']}"
        )
    if v["steps"] < 1:
        raise UserError(
            f"tokens {v['tokens']} is less than one batch ({v['batch_size']} x {v['seq_len']})"
        )
    if not 0 <= v["warmup_steps"] <= v["steps"]:
        raise UserError(f"warmup_steps {v['warmup_steps']} not in [0, steps={v['steps']}]")
    if v["gpus_per_run"] < 1 or v["batch_size"] % (v["micro_batch_size"] * v["gpus_per_run"]):
        raise UserError(
            f"batch_size {v['batch_size']} must be a multiple of micro_batch_size x gpus_per_run "
            f"({v['micro_batch_size']} x {v['gpus_per_run']})"
        )
