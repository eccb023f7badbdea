"""The grid YAML grammar: a grid file's sections expanded into points (dicts of user values).

A grid file::

    name: adam_betas               # results go to results/<name>/
    description: free text
    launcher: slurm-a100           # default launcher profile (launchers/<name>.yaml)
    base:                          # fixed values for every run
      model: 160m
      optimizer: adamw
      tokens: 3.2e9
      warmup_steps: "0.1 * steps"  # expressions over other fields
    grid:                          # cartesian axes, in order
      beta1: [0.9, 0.95]
      optimizer:                   # conditional axis: each value has its own sub-grid
        adamw: {lr: [1e-3, 3e-3]}
        sgd: {lr: [0.1, 0.3], momentum: [0.9]}
    zip:                           # axes that vary together (equal-length lists)
      batch_size: [64, 256]
      micro_batch_size: [64, 64]
    seeds: [0, 1, 2]               # or an int n: seeds 0..n-1; or {tune: 3, confirm: 3}
    local:                         # overrides applied by --local (laptop scale)
      base: {model: tiny, tokens: 300000}
      grid: {lr: [1e-3]}           # replaces those axes
      seeds: [0]
    figures: [beta_heatmap]        # figures `harness figures` draws
    extend: {axes: [lr], rounds: 3} # what `submit --extend` may add (harness.grid.followup)
    derived_axes: {lr: batch_size} # axes whose values were built from another (analysis notes)
    target: {val_loss: 3.9}        # loss to reach, for tokens-to-target (a number: train_loss)

Axes override base values; two axes setting the same key in one point is an error. A block
(``grid``, a sub-grid) may itself hold a ``zip`` key. Every error names the file and the key path.
The keys a block may hold are given by the caller (the run fields, and the hyperparameters the
grid's optimizers declare).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import Any

from harness.core.errors import UserError
from harness.grid.followup import SEED_KEYS, tune_part

TOP_KEYS = (
    "name",
    "description",
    "launcher",
    "base",
    "grid",
    "zip",
    "seeds",
    "local",
    "figures",
    "extend",
    "derived_axes",
    "target",
    "branch",
)
"""Top-level keys of a grid file."""
LOCAL_KEYS = ("base", "grid", "zip", "seeds", "target", "extend")
"""Keys of the ``local:`` section."""


@dataclass(frozen=True, slots=True)
class Point:
    """One grid point before resolution."""

    values: dict[str, Any]
    """Every user value of the point: base, overridden by its axes, and its seed."""
    axes: dict[str, Any]
    """The values its axes (and seed) chose: what tells it from the other points."""

    def describe(self) -> str:
        """``run optimizer=adamw, lr=0.001, seed=0`` for error messages."""
        return "run " + ", ".join(f"{k}={v}" for k, v in self.axes.items())


def check_keys(d: Any, valid: Collection[str], file: str, where: str) -> None:
    """``d`` is a mapping whose keys are all in ``valid``; else a UserError naming them."""
    if not isinstance(d, dict):
        raise UserError(f"{file}: {where}: expected a mapping, got {type(d).__name__}")
    for k in d:
        if k not in valid:
            raise UserError(
                f"{file}: {where}: unknown key {k!r}; valid keys: {', '.join(sorted(valid))}"
            )


def sections(doc: dict[str, Any], file: str, local: bool) -> dict[str, Any]:
    """base, grid, zip, seeds, target and extend of a grid file, with the local overrides
    applied when asked: ``base``, ``grid`` and ``extend`` are merged key by key (a local
    ``extend: {rounds: 1}`` keeps the top level's axes and bounds), the others replaced."""
    base = dict(doc.get("base") or {})
    grid = dict(doc.get("grid") or {})
    extend = doc.get("extend")
    out = {
        "base": base,
        "grid": grid,
        "zip": doc.get("zip"),
        "seeds": doc.get("seeds", [0]),
        "target": doc.get("target"),
        "extend": extend,
    }
    if local:
        loc = doc.get("local")
        if loc is None:
            raise UserError(f"{file}: --local given but the grid has no 'local:' section")
        check_keys(loc, LOCAL_KEYS, file, "local")
        base.update(loc.get("base") or {})
        grid.update(loc.get("grid") or {})
        for k in ("zip", "seeds", "target"):
            if k in loc:
                out[k] = loc[k]
        if loc.get("extend") is not None:
            top, mine = extend or {}, loc["extend"]
            both = isinstance(top, dict) and isinstance(mine, dict)
            out["extend"] = {**top, **mine} if both else mine
    return out


def values_of(key: str, sections: dict[str, Any]) -> set[str]:
    """Every value ``key`` takes anywhere in the sections (base, axes, conditional axes, zips):
    e.g. every optimizer a grid names, before expansion."""
    found: set[str] = set()

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                if k == key:
                    if isinstance(v, dict):
                        found.update(map(str, v))
                    elif isinstance(v, list):
                        found.update(str(x) for x in v if not isinstance(x, dict | list))
                    elif v is not None:
                        found.add(str(v))
                visit(v)
        elif isinstance(node, list):
            for v in node:
                visit(v)

    visit([sections["base"], sections["grid"], sections["zip"]])
    return found


def expand(sections: dict[str, Any], keys: Collection[str], file: str) -> list[Point]:
    """All grid points: base overridden by each combination of axes, times the seeds.

    Args:
        sections: what :func:`sections` returned.
        keys: the keys a block may set.
        file: the grid file, for messages.
    """
    check_keys(sections["base"], keys, file, "base")
    block = dict(sections["grid"])
    if sections["zip"] is not None:
        if "zip" in block:
            raise UserError(f"{file}: 'zip' given both at top level and inside grid")
        block["zip"] = sections["zip"]
    combos = list(_block(block, keys, file, "grid"))
    seeds = seed_list(sections["seeds"], file)
    _check_count(
        len(combos) * len(seeds), file, f"{len(combos):,} combinations x {len(seeds):,} seeds"
    )
    if "seed" in sections["base"] or any("seed" in c for c in combos):
        raise UserError(f"{file}: set seeds with the top-level 'seeds' key, not 'seed'")
    base = sections["base"]
    return [Point({**base, **c, "seed": s}, {**c, "seed": s}) for c in combos for s in seeds]


def _block(block: Any, keys: Collection[str], file: str, where: str) -> list[dict[str, Any]]:
    check_keys(block, {*keys, "zip"}, file, where)
    combos: list[dict[str, Any]] = [{}]
    for key, spec in block.items():
        at = f"{where}.{key}"
        if key == "zip":
            values = _zip(spec, keys, file, at)
        else:
            values = list(_axis(key, spec, keys, file, at))
        _check_count(len(combos) * len(values), file, f"at {at}")
        combos = [_merge(c, v, file, at) for c in combos for v in values]
    return combos


def _axis(
    key: str, spec: Any, keys: Collection[str], file: str, where: str
) -> Iterator[dict[str, Any]]:
    if isinstance(spec, list | dict) and not spec:
        raise UserError(f"{file}: {where}: empty axis; give at least one value")
    if isinstance(spec, list):
        for v in spec:
            if isinstance(v, dict | list):
                raise UserError(f"{file}: {where}: values must be scalars, got {v!r}")
            yield {key: v}
    elif isinstance(spec, dict):
        for value, sub in spec.items():
            for combo in _block(sub or {}, keys, file, f"{where}.{value}"):
                yield _merge({key: value}, combo, file, f"{where}.{value}")
    else:
        yield {key: spec}


def _zip(spec: Any, keys: Collection[str], file: str, where: str) -> list[dict[str, Any]]:
    groups = spec if isinstance(spec, list) else [spec]
    combos: list[dict[str, Any]] = [{}]
    for i, group in enumerate(groups):
        at = f"{where}[{i}]" if isinstance(spec, list) else where
        check_keys(group, keys, file, at)
        lengths = {k: len(v) if isinstance(v, list) else -1 for k, v in group.items()}
        if not group or any(n <= 0 for n in lengths.values()) or len(set(lengths.values())) != 1:
            raise UserError(
                f"{file}: {at}: zip needs non-empty lists of equal length, got lengths {lengths}"
            )
        rows = [dict(zip(group, vals, strict=True)) for vals in zip(*group.values(), strict=True)]
        _check_count(len(combos) * len(rows), file, f"at {at}")
        combos = [_merge(c, r, file, at) for c in combos for r in rows]
    return combos


def _merge(a: dict[str, Any], b: dict[str, Any], file: str, where: str) -> dict[str, Any]:
    clash = a.keys() & b.keys()
    if clash:
        raise UserError(f"{file}: {where}: key(s) {sorted(clash)} set by two axes")
    return {**a, **b}


MAX_RUNS = 100_000
"""Most runs one grid file may expand to (a real grid has a few thousand; a typo such as
``seeds: 100000000`` would otherwise fill the memory before anything is said)."""


def _check_count(n: int, file: str, what: str) -> None:
    if n > MAX_RUNS:
        raise UserError(
            f"{file}: expands to {n:,} runs ({what}), more than the {MAX_RUNS:,} a grid may "
            "hold; split it into several grids or use fewer values"
        )


def seed_list(spec: Any, file: str) -> list[int]:
    """The tuning seeds of a ``seeds:`` value (see :mod:`harness.grid.followup`)."""
    if isinstance(spec, dict):
        check_keys(spec, SEED_KEYS, file, "seeds")
    spec = tune_part(spec, file)
    if isinstance(spec, int) and not isinstance(spec, bool) and spec > 0:
        if spec > MAX_RUNS:
            raise UserError(
                f"{file}: seeds: {spec:,} seeds, more than the {MAX_RUNS:,} runs a grid may hold"
            )
        return list(range(spec))
    if (
        isinstance(spec, list)
        and spec
        and all(isinstance(s, int) and not isinstance(s, bool) for s in spec)
    ):
        if len(set(spec)) != len(spec):
            raise UserError(f"{file}: seeds: repeated seed in {spec}")
        return spec
    raise UserError(
        f"{file}: seeds: expected a positive int or a non-empty list of ints, got {spec!r}"
    )
