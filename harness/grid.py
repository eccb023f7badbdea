"""The grid YAML grammar, expanded up front into a manifest of complete run configs.

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
    seeds: [0, 1, 2]               # or an int n: seeds 0..n-1
    local:                         # overrides applied by --local (laptop scale)
      base: {model: tiny, tokens: 300000}
      grid: {lr: [1e-3]}           # replaces those axes
      seeds: [0]
    figures: [beta_heatmap]        # figures `harness figures` draws

Axes override base values; two axes setting the same key in one point is an error. A block
(``grid``, a sub-grid) may itself hold a ``zip`` key. Every error names the file and the key path.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from harness.config import RunConfig, field_names
from harness.errors import UserError
from harness.resolve import USER_KEYS, Resolver

#: Top-level keys of a grid file.
TOP_KEYS = ("name", "description", "launcher", "base", "grid", "zip", "seeds", "local", "figures")
#: Keys of the ``local:`` section.
LOCAL_KEYS = ("base", "grid", "zip", "seeds")


@dataclass(frozen=True, kw_only=True, slots=True)
class Grid:
    """An expanded grid."""

    name: str
    """The grid's name; results go under ``results/<name>/``."""
    path: Path
    """The YAML file it came from."""
    scale: str
    """``full`` or ``local`` (``local:`` overrides applied)."""
    launcher: str | None
    """The launcher profile the grid names (None: the caller decides)."""
    runs: tuple[RunConfig, ...]
    """The complete run configs, in expansion order."""
    figures: tuple[str, ...]
    """Figures declared for the grid (empty: defaults from its axes)."""
    axes: tuple[str, ...]
    """Keys that vary across runs."""


def read_yaml(path: Path) -> dict[str, Any]:
    """Load a YAML mapping; a missing file or a syntax error is a one-line UserError."""
    if not path.is_file():
        raise UserError(f"{path}: no such grid file")
    try:
        doc = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = f" (line {mark.line + 1})" if mark else ""
        raise UserError(f"{path}: invalid YAML{line}: {getattr(e, 'problem', e)}") from None
    if not isinstance(doc, dict):
        raise UserError(f"{path}: expected a mapping with keys {', '.join(TOP_KEYS)}")
    return doc


def grid_name(arg: str) -> str:
    """The grid name of ``arg``: a grid YAML path (its ``name:``) or already a name."""
    p = Path(arg)
    if p.suffix in (".yaml", ".yml") or p.is_file():
        doc = read_yaml(p)
        name = doc.get("name")
        if not isinstance(name, str) or not name:
            raise UserError(f"{p}: 'name' must be a non-empty string")
        return name
    return arg


def load_grid(path: str | Path, *, local: bool = False, data_root: Path | None = None) -> Grid:
    """Read, validate and expand a grid file into complete run configs.

    Args:
        path: the grid YAML.
        local: apply the file's ``local:`` overrides (laptop scale).
        data_root: where registered datasets live (for vocabulary look-ups of user paths).

    Raises:
        UserError: anything wrong with the file, naming the file, the key and the valid choices.
    """
    from harness.data import data_root as default_data_root

    path = Path(path)
    doc = read_yaml(path)
    _check_keys(doc, TOP_KEYS, str(path), "top level")
    name = doc.get("name")
    if not isinstance(name, str) or not name or "/" in name:
        raise UserError(f"{path}: 'name' must be a non-empty string without '/'")
    sections = _sections(doc, path, local)
    points = _expand(sections, str(path))
    resolver = Resolver(
        name, "local" if local else "full", data_root or default_data_root(), str(path)
    )
    runs = tuple(resolver.resolve(p, _describe(p)) for p in points)
    _check_duplicates(runs, points, path)
    return Grid(
        name=name,
        path=path,
        scale="local" if local else "full",
        launcher=_launcher(doc, path),
        runs=runs,
        figures=_figures(doc, path),
        axes=_varying(runs),
    )


def _check_keys(d: Any, valid: tuple[str, ...] | frozenset[str], file: str, where: str) -> None:
    if not isinstance(d, dict):
        raise UserError(f"{file}: {where}: expected a mapping, got {type(d).__name__}")
    for k in d:
        if k not in valid:
            raise UserError(
                f"{file}: {where}: unknown key {k!r}; valid keys: {', '.join(sorted(valid))}"
            )


def _sections(doc: dict[str, Any], path: Path, local: bool) -> dict[str, Any]:
    """base, grid, zip and seeds, with the local overrides applied when asked."""
    base = dict(doc.get("base") or {})
    grid = dict(doc.get("grid") or {})
    out = {"base": base, "grid": grid, "zip": doc.get("zip"), "seeds": doc.get("seeds", [0])}
    if local:
        loc = doc.get("local")
        if loc is None:
            raise UserError(f"{path}: --local given but the grid has no 'local:' section")
        _check_keys(loc, LOCAL_KEYS, str(path), "local")
        base.update(loc.get("base") or {})
        grid.update(loc.get("grid") or {})
        for k in ("zip", "seeds"):
            if k in loc:
                out[k] = loc[k]
    _check_keys(base, USER_KEYS, str(path), "base")
    return out


def _expand(sections: dict[str, Any], file: str) -> list[dict[str, Any]]:
    """All grid points: base overridden by each combination of axes, times the seeds."""
    block = dict(sections["grid"])
    if sections["zip"] is not None:
        if "zip" in block:
            raise UserError(f"{file}: 'zip' given both at top level and inside grid")
        block["zip"] = sections["zip"]
    combos = _expand_block(block, file, "grid")
    seeds = _seeds(sections["seeds"], file)
    if "seed" in sections["base"] or any("seed" in c for c in combos):
        raise UserError(f"{file}: set seeds with the top-level 'seeds' key, not 'seed'")
    base = sections["base"]
    return [{**base, **c, "seed": s} for c in combos for s in seeds]


def _expand_block(block: Any, file: str, where: str) -> list[dict[str, Any]]:
    _check_keys(block, USER_KEYS | {"zip"}, file, where)
    combos: list[dict[str, Any]] = [{}]
    for key, spec in block.items():
        at = f"{where}.{key}"
        values = _expand_zip(spec, file, at) if key == "zip" else _expand_axis(key, spec, file, at)
        combos = [_merge(c, v, file, at) for c in combos for v in values]
    return combos


def _expand_axis(key: str, spec: Any, file: str, where: str) -> list[dict[str, Any]]:
    if isinstance(spec, list):
        if not spec:
            raise UserError(f"{file}: {where}: empty axis; give at least one value")
        for v in spec:
            if isinstance(v, dict | list):
                raise UserError(f"{file}: {where}: values must be scalars, got {v!r}")
        return [{key: v} for v in spec]
    if isinstance(spec, dict):
        if not spec:
            raise UserError(f"{file}: {where}: empty axis; give at least one value")
        out = []
        for value, sub in spec.items():
            for combo in _expand_block(sub or {}, file, f"{where}.{value}"):
                out.append(_merge({key: value}, combo, file, f"{where}.{value}"))
        return out
    return [{key: spec}]


def _expand_zip(spec: Any, file: str, where: str) -> list[dict[str, Any]]:
    groups = spec if isinstance(spec, list) else [spec]
    combos: list[dict[str, Any]] = [{}]
    for i, group in enumerate(groups):
        at = f"{where}[{i}]" if isinstance(spec, list) else where
        _check_keys(group, USER_KEYS, file, at)
        lengths = {k: len(v) if isinstance(v, list) else -1 for k, v in group.items()}
        if not group or any(n <= 0 for n in lengths.values()) or len(set(lengths.values())) != 1:
            raise UserError(
                f"{file}: {at}: zip needs non-empty lists of equal length, got lengths {lengths}"
            )
        rows = [dict(zip(group, vals, strict=True)) for vals in zip(*group.values(), strict=True)]
        combos = [_merge(c, r, file, at) for c in combos for r in rows]
    return combos


def _merge(a: dict[str, Any], b: dict[str, Any], file: str, where: str) -> dict[str, Any]:
    clash = a.keys() & b.keys()
    if clash:
        raise UserError(f"{file}: {where}: key(s) {sorted(clash)} set by two axes")
    return {**a, **b}


def _seeds(spec: Any, file: str) -> list[int]:
    if isinstance(spec, int) and not isinstance(spec, bool) and spec > 0:
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


def _describe(point: dict[str, Any]) -> str:
    keys = ("optimizer", "lr", "beta1", "beta2", "batch_size", "seed")
    return "run " + ", ".join(f"{k}={point[k]}" for k in keys if k in point)


def _check_duplicates(
    runs: tuple[RunConfig, ...], points: list[dict[str, Any]], path: Path
) -> None:
    seen: dict[str, int] = {}
    for i, run in enumerate(runs):
        j = seen.setdefault(run.run_id, i)
        if j != i:
            a, b = points[j], points[i]
            diff = {k: (a.get(k), b.get(k)) for k in a.keys() | b.keys() if a.get(k) != b.get(k)}
            raise UserError(
                f"{path}: duplicate runs after expansion: points differing only in {diff} resolve "
                "to the same config (a value that does not apply, e.g. momentum for adamw?)"
            )


def _launcher(doc: dict[str, Any], path: Path) -> str | None:
    name = doc.get("launcher")
    if name is None:
        return None
    from harness.launch.profile import profile_names

    if name not in profile_names():
        from harness.errors import unknown_choice

        raise unknown_choice("launcher", name, profile_names(), where=f"{path}: launcher")
    return str(name)


def _figures(doc: dict[str, Any], path: Path) -> tuple[str, ...]:
    figs = doc.get("figures") or []
    if not isinstance(figs, list) or not all(isinstance(f, str) for f in figs):
        raise UserError(f"{path}: figures: expected a list of figure names")
    if figs:
        try:
            from analysis.figures import FIGURES
        except ImportError:  # analysis layer not installed: nothing to validate against
            return tuple(figs)
        for f in figs:
            if f not in FIGURES:
                from harness.errors import unknown_choice

                raise unknown_choice("figure", f, FIGURES, where=f"{path}: figures")
    return tuple(figs)


def _varying(runs: tuple[RunConfig, ...]) -> tuple[str, ...]:
    if not runs:
        return ()
    names = field_names()
    values_of = operator.attrgetter(*names)  # run -> tuple of its field values (C speed)
    columns = zip(*map(values_of, runs), strict=True)  # one tuple per field, across runs
    return tuple(n for n, col in zip(names, columns, strict=True) if len(set(col)) > 1)
