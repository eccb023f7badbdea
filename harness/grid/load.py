"""Loading a grid: its YAML file read, expanded (:mod:`harness.grid.grammar`) and resolved
(:mod:`harness.grid.resolve`) into complete run configs.

Grid loading is a pure translator: it reads no launcher profile, no figure registry and no
dataset; the caller hands in what it must know (the vocabulary of each dataset) and checks the
rest (launcher and figure names) itself.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from harness.core import paths
from harness.core.catalogue import FIELD_NAMES, FIELDS, GRID_KEYS, PER_OPTIMIZER, RESERVED, flat
from harness.core.config import RunConfig
from harness.core.errors import UserError
from harness.core.targets import Target, parse_target
from harness.grid import followup, grammar
from harness.grid.branches import check_mode
from harness.grid.followup import ExtendSpec
from harness.grid.grammar import Point
from harness.grid.plans import Plan, PlanCache, names_outside_code
from harness.grid.plans import key as plan_key
from harness.grid.resolve import SCHEDULE_KEYS, Resolver, VocabSize, optimizer_specs
from harness.metrics.catalogue import METRICS
from harness.optim.builtin import BUILTIN as OPTIMIZER_BUILTINS
from harness.optim.hooks import unwired
from harness.optim.registry import canonical_name
from harness.optim.schedule import SCHEDULE_FIELDS
from harness.optim.spec import NAMESPACE, OptimizerSpec
from harness.workloads.registry import BUILTIN as WORKLOAD_BUILTINS
from harness.workloads.registry import canonical_name as canonical_workload
from harness.workloads.registry import get_workload


@dataclass(frozen=True, kw_only=True, slots=True)
class Grid:
    """An expanded grid."""

    name: str
    """The grid's name; results go under ``results/<name>/``."""
    path: Path
    """The YAML file it came from."""
    scale: str
    """``full`` or ``local`` (``local:`` overrides applied)."""
    scale_name: str | None = None
    """How output names the scale when the runs' ``scale`` would mislead (``harness bench
    --scale local`` submits its grid as written, ``full``: ``local scale``); None: ``<scale>
    scale``."""
    launcher: str | None
    """The launcher profile the grid names (None: the caller decides); not checked here."""
    runs: tuple[RunConfig, ...]
    """The complete run configs, in expansion order."""
    figures: tuple[str, ...]
    """Figures declared for the grid (empty: defaults from its axes); not checked here."""
    axes: tuple[str, ...]
    """Run fields that vary across runs."""
    notes: tuple[str, ...] = ()
    """What the dry run should tell (constructor arguments left at their defaults)."""
    confirm_seeds: tuple[int, ...] = ()
    """Seeds on which ``submit --confirm`` trains each cell's selected configuration."""
    extend: ExtendSpec | None = None
    """What ``submit --extend`` may add (the ``extend:`` section; None: defaults)."""
    points: tuple[Point, ...] = ()
    """The points the grid's own runs resolved from, in the order of ``runs``."""
    resolver: Resolver | None = dataclasses.field(default=None, compare=False)
    """Resolves a point as this grid does (``harness.grid.vary.vary``)."""
    target: Target | None = None
    """The loss the grid's runs are timed to (``target:``, ``local: target:``); None: none."""
    branch: str | None = None
    """``branch:`` (``auto`` or ``off``, :mod:`harness.grid.branches`); None: the launcher
    profile's, else ``auto``."""


MAX_YAML_VALUES = 100_000
"""Most values a grid file may hold once its aliases (``*name``) are expanded: a real grid has
a few hundred; an alias bomb (aliases of aliases) has billions in a few lines."""


def read_yaml(path: Path) -> dict[str, Any]:
    """Load a YAML mapping; a missing file, a syntax error or an alias bomb (more than
    :data:`MAX_YAML_VALUES` values once expanded) is a one-line UserError."""
    if not path.is_file():
        raise UserError(f"{path}: no such grid file")
    try:
        doc = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = f" (line {mark.line + 1})" if mark else ""
        raise UserError(f"{path}: invalid YAML{line}: {getattr(e, 'problem', e)}") from None
    except RecursionError:
        raise UserError(f"{path}: invalid YAML: nested too deeply") from None
    if _expanded_size(doc, {}) > MAX_YAML_VALUES:
        raise UserError(
            f"{path}: more than {MAX_YAML_VALUES:,} values once its YAML aliases (*name) are "
            "expanded; write the values out, or use fewer aliases"
        )
    if not isinstance(doc, dict):
        raise UserError(f"{path}: expected a mapping with keys {', '.join(grammar.TOP_KEYS)}")
    return doc


def _expanded_size(value: Any, seen: dict[int, int]) -> int:
    """Values in ``value`` counting each alias as a copy (``seen``: sizes by object id, so an
    alias bomb is measured without being expanded; a cycle counts once)."""
    if not isinstance(value, (list, dict)):
        return 1
    if id(value) in seen:
        return seen[id(value)]
    seen[id(value)] = 1  # a cycle back here counts one
    parts = [*value.keys(), *value.values()] if isinstance(value, dict) else value
    size = 1 + sum(_expanded_size(v, seen) for v in parts)
    seen[id(value)] = size
    return size


def grid_name(arg: str) -> str:
    """The grid name of ``arg``: a grid YAML path (its ``name:``) or already a name.

    Raises:
        UserError: the name is not a valid grid name (:data:`harness.core.paths.GRID_NAME`).
    """
    p = Path(arg)
    if p.suffix in (".yaml", ".yml") or p.is_file():
        return _name(read_yaml(p), p)
    return paths.check_grid_name(arg, "GRID")


def _name(doc: dict[str, Any], path: Path) -> str:
    return paths.check_grid_name(doc.get("name"), f"{path}: name")


def load_grid(
    path: str | Path, *, vocab: VocabSize, local: bool = False, cache: PlanCache | None = None
) -> Grid:
    """Read, validate and expand a grid file into complete run configs.

    Args:
        path: the grid YAML.
        vocab: the vocabulary size of a dataset (name or directory), for ``vocab_size``.
        local: apply the file's ``local:`` overrides (laptop scale).
        cache: where the resolved runs of this grid file are kept (:mod:`harness.grid.plans`):
            read when the file, the scale and the code are the same, else resolved and kept.

    Raises:
        UserError: anything wrong with the file, naming the file, the key and the valid choices.
    """
    path = Path(path)
    return expand_grid(read_yaml(path), path, vocab=vocab, local=local, cache=cache)


def expand_grid(
    doc: dict[str, Any],
    path: Path,
    *,
    vocab: VocabSize,
    local: bool = False,
    cache: PlanCache | None = None,
) -> Grid:
    """Validate and expand a grid document (the mapping a grid file holds) as :func:`load_grid`
    does the file ``path`` with that content: ``path`` names it in messages, and its folder is
    where relative references (``./my_opt.py:MyOpt``) are found. A program that builds a grid
    (``harness bench``) hands it over in memory so; nothing is read or written (``cache``:
    as :func:`load_grid`'s, keyed by the bytes of ``path``: only for a document read from it).

    Raises:
        UserError: anything wrong with the document, as :func:`load_grid`.
    """
    file = str(path)
    grammar.check_keys(doc, grammar.TOP_KEYS, file, "top level")
    check_derived_axes(doc, path)
    name = _name(doc, path)
    sections = grammar.sections(doc, file, local)
    for where, value in (("extend", doc.get("extend")), ("local.extend", _local_extend(doc))):
        if value is not None:
            grammar.check_keys(value, followup.EXTEND_KEYS, file, where)
    named = grammar.values_of("optimizer", sections)
    named |= grammar.values_of("embedding_optimizer", sections)
    problems: list[str] = []
    specs = optimizer_specs(sorted(named), path.parent, problems)
    unloaded = {n for n in named if _canonical(n, path.parent) not in specs}
    imports = len(problems)  # an optimizer that cannot be loaded: the rest is still checked
    own = {h.name for spec in specs.values() for h in spec.hyperparameters}
    own |= workload_keys(grammar.values_of("workload", sections), path.parent, problems)
    theirs = {k for k, _, arm in _set_keys(sections) if arm in unloaded} - GRID_KEYS - own
    _check_names(specs, problems)
    _check_keys(sections, specs, GRID_KEYS | own | theirs, problems)
    _check_read(sections, specs, problems)
    _check_arms(sections, specs, path.parent, problems)
    if len(problems) > imports:
        _raise(file, problems)
    _check_schedule_read(sections, file)
    points = grammar.expand(sections, GRID_KEYS | own | theirs, file)
    points = [
        p
        for p in points
        if not {p.values.get("optimizer"), p.values.get("embedding_optimizer")} & unloaded
    ]
    scale = "local" if local else "full"
    asked: dict[str, int] = {}
    resolver = Resolver(name, scale, _asking(vocab, asked), file, path.parent)
    key = None if cache is None or problems else _plan_key(doc, path, local, specs, sections)
    plan = None if key is None or cache is None else cache.get(name, key)
    if plan is not None and len(plan.runs) == len(points) and _same_vocab(plan.vocab, vocab):
        runs, axes = plan.runs, plan.axes
    else:
        runs = _resolve_all(resolver, points, file, problems)
        _check_duplicates(runs, points, path)
        axes = _varying(runs)
        if key is not None and cache is not None:
            cache.put(name, key, Plan(runs, axes, dict(asked)))
    return Grid(
        name=name,
        path=path,
        scale=scale,
        launcher=_optional_name(doc, "launcher", path),
        runs=runs,
        figures=_figures(doc, path),
        axes=axes,
        notes=_notes(specs),
        confirm_seeds=followup.confirm_seeds(
            sections["seeds"], grammar.seed_list(sections["seeds"], file), file
        ),
        extend=followup.parse_extend(sections["extend"], file, own),
        points=tuple(points),
        resolver=resolver,
        target=grid_target(sections, file),
        branch=None if doc.get("branch") is None else check_mode(doc["branch"], f"{file}: branch"),
    )


def _plan_key(
    doc: dict[str, Any],
    path: Path,
    local: bool,
    specs: dict[str, OptimizerSpec],
    sections: dict[str, Any],
) -> bytes | None:
    """The key of the grid's plan in the cache; None for a grid whose runs may depend on code
    outside ``harness`` (a reference, an optimizer or workload an installed package registers),
    which is never cached."""
    workloads = grammar.values_of("workload", sections)
    if not (
        names_outside_code(doc)
        and all(name in OPTIMIZER_BUILTINS for name in specs)
        and all(str(name) in WORKLOAD_BUILTINS for name in workloads)
    ):
        return None
    return plan_key(path.read_bytes(), path, local)


def _asking(vocab: VocabSize, asked: dict[str, int]) -> VocabSize:
    """``vocab``, noting each answer in ``asked``."""

    def ask(dataset: str) -> int:
        asked[dataset] = size = vocab(dataset)
        return size

    return ask


def _same_vocab(kept: dict[str, int], vocab: VocabSize) -> bool:
    """Whether every dataset a kept plan asked about has the vocabulary it had (a dataset that
    cannot be read now: no; resolving again says why)."""
    try:
        return all(vocab(dataset) == size for dataset, size in kept.items())
    except UserError:
        return False


def _notes(specs: dict[str, OptimizerSpec]) -> tuple[str, ...]:
    """What the dry run says of the grid's optimizers: arguments left at their defaults, and
    known hooks their declarations do not wire (:mod:`harness.optim.hooks`)."""
    notes = [
        f"optimizer {spec.name}: argument {arg!r} ({why}) is left at its default; "
        "no grid can set it"
        for spec in specs.values()
        for arg, why in spec.left_at_default.items()
    ]
    notes += [
        f"optimizer {spec.name}: argument {arg!r} ({why}) is not passed unless the grid sets it, "
        "so the constructor's own default applies"
        for spec in specs.values()
        for arg, why in spec.kept_defaults.items()
    ]
    return tuple(notes + [line for spec in specs.values() for line in unwired(spec)])


def _canonical(name: str, base: Path) -> str | None:
    """How runs record optimizer ``name`` (None: a reference that cannot be made canonical)."""
    try:
        return canonical_name(name, base)
    except UserError:
        return None


def workload_keys(names: Collection[str], base: Path, problems: list[str]) -> set[str]:
    """The parameters (grid keys) of the workloads a grid names; each one that cannot be used
    (an unknown name, listing the valid ones; a class a grid cannot construct) adds its problem
    to ``problems``."""
    keys: set[str] = set()
    for name in sorted(names):
        try:
            keys |= set(get_workload(canonical_workload(name, base)).names)
        except UserError as e:
            problems.append(str(e))
    return keys


def _local_extend(doc: dict[str, Any]) -> Any:
    """The ``local:`` section's ``extend:`` (None when there is none)."""
    loc = doc.get("local")
    return loc.get("extend") if isinstance(loc, dict) else None


def grid_target(sections: dict[str, Any], file: str) -> Target | None:
    """The ``target:`` of a grid's sections (:func:`harness.grid.grammar.sections`)."""
    spec = sections.get("target")
    return None if spec is None else parse_target(spec, f"{file}: target")


def declared_target(path: Path, local: bool) -> Target | None:
    """The target a grid YAML declares (its ``local:`` one with ``local``), without expanding
    its runs."""
    doc = read_yaml(path)
    return grid_target(grammar.sections(doc, str(path), local), str(path))


def check_derived_axes(doc: dict[str, Any], path: Path) -> None:
    """``derived_axes:`` maps axis names to the quantity their values were built from.

    Raises:
        UserError: it is not a mapping of names to names.
    """
    got = doc.get("derived_axes")
    if got is not None and not (
        isinstance(got, dict)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in got.items())
    ):
        raise UserError(
            f"{path}: derived_axes: expected a mapping axis: quantity, e.g. lr: batch_size"
        )


def _resolve_all(
    resolver: Resolver, points: Sequence[Point], file: str, earlier: Sequence[str] = ()
) -> tuple[RunConfig, ...]:
    """Each point's run. Points that differ only in their seed are resolved once and the seed
    set on a copy (a grid of 10 seeds resolves a tenth of its points), unless one of their
    values is a string that may read the seed (an expression naming it).

    Raises:
        GridRefused: every distinct problem of every point, after the ``earlier`` ones (the
            optimizers that could not be loaded), at once, with the runs that did resolve.
    """
    done: dict[str, RunConfig | None] = {}
    out = []
    problems: list[str] = list(earlier)
    for p in points:
        rest = {k: v for k, v in p.values.items() if k != "seed"}
        key = repr(sorted(rest.items(), key=lambda kv: kv[0]))
        if any(isinstance(v, str) and "seed" in v for v in rest.values()) or key not in done:
            try:
                run = resolver.resolve(p.values, p.describe())
            except UserError as e:
                problems.append(str(e).removeprefix(f"{file}: "))
                run = None
            done.setdefault(key, run)
        else:
            first = done[key]
            if first is None:
                continue
            execution = dataclasses.replace(first.execution, seed=p.values["seed"])
            run = dataclasses.replace(first, execution=execution)
        if run is not None:
            out.append(run)
    _raise(file, problems, tuple(out))
    return tuple(out)


MAX_PROBLEMS = 20
"""Most problems one refusal lists (the rest are counted)."""


class GridRefused(UserError):
    """A grid's refusal: every problem found (imports, keys, types), and the runs that resolved
    despite them, so that a caller can add what its own checks of those runs find (the
    preflight) to the one refusal (:meth:`adding`)."""

    def __init__(self, file: str, problems: Sequence[str], runs: tuple[RunConfig, ...]) -> None:
        self.file, self.problems, self.runs = file, tuple(problems), runs
        if len(problems) == 1:
            super().__init__(f"{file}: {problems[0]}")
            return
        shown = [f"  - {p}" for p in problems[:MAX_PROBLEMS]]
        if len(problems) > MAX_PROBLEMS:
            shown.append(f"  ... and {len(problems) - MAX_PROBLEMS} more")
        super().__init__(f"{file}: {len(problems)} problems:\n" + "\n".join(shown))

    def adding(self, more: Sequence[str]) -> GridRefused:
        """The same refusal with ``more`` problems (of the runs that resolved)."""
        return GridRefused(self.file, [*self.problems, *more], ())


def _raise(file: str, problems: list[str], runs: tuple[RunConfig, ...] = ()) -> None:
    """One UserError listing every problem (one line when there is one)."""
    if problems:
        raise GridRefused(file, _merge_runs(problems), runs)


def _check_names(specs: dict[str, OptimizerSpec], problems: list[str]) -> None:
    """An optimizer's own hyperparameter may not share its column name with a metric."""
    for name, spec in specs.items():
        for h in spec.hyperparameters:
            if h.name in RESERVED or h.name in METRICS:
                kind = "metric" if h.name in METRICS else "result column"
                problems.append(
                    f"optimizer {name!r}: hyperparameter {h.name!r} collides with the "
                    f"{kind} {h.name!r}; rename the constructor argument"
                )


def _blocks(node: Any, arm: str | None = None) -> Iterator[tuple[str, Any, str | None]]:
    """Every (key, value, arm) a grid block sets, through its zips and conditional axes;
    ``arm``: the optimizer whose conditional block holds the key (None: not under one)."""
    if not isinstance(node, dict):
        return
    for key, value in node.items():
        if key == "zip":
            for group in value if isinstance(value, list) else [value]:
                yield from _blocks(group, arm)
            continue
        yield key, value, arm
        if isinstance(value, dict):
            for choice, sub in value.items():
                yield from _blocks(sub, str(choice) if key == "optimizer" else arm)


def _set_keys(sections: dict[str, Any]) -> Iterator[tuple[str, Any, str | None]]:
    yield from _blocks(sections["base"])
    yield from _blocks(sections["grid"])
    yield from _blocks({"zip": sections["zip"]} if sections["zip"] is not None else {})


def _check_keys(
    sections: dict[str, Any],
    specs: dict[str, OptimizerSpec],
    keys: Collection[str],
    problems: list[str],
) -> None:
    """Every key the grid sets is a run field or a hyperparameter of one of its optimizers; a
    constructor argument no grid can set, and a collision, say why."""
    left = {a: (s.name, why) for s in specs.values() for a, why in s.left_at_default.items()}
    spaced = {k: v for s in specs.values() for v, k in s.renamed.items() if v.startswith(NAMESPACE)}
    for key in dict.fromkeys(k for k, _, _ in _set_keys(sections) if k not in keys):
        if key in left:
            name, why = left[key]
            problems.append(
                f"{key!r}: optimizer {name}'s argument {key!r} is {why}; no grid can set it "
                "(it stays at its default)"
            )
        elif key in spaced:
            problems.append(
                f"{key!r}: the optimizer's argument {key!r} is named like a result column; set "
                f"it as {spaced[key]!r}"
            )
        else:
            problems.append(f"unknown key {key!r}; valid keys: {', '.join(sorted(keys))}")


def _check_read(
    sections: dict[str, Any], specs: dict[str, OptimizerSpec], problems: list[str]
) -> None:
    """A per-optimizer field set in the grid must be read by one of the grid's optimizers (else
    it would silently do nothing: ``gamma`` for an optimizer that takes none)."""
    read = {k for spec in specs.values() for k in spec.defaults()}
    for key in PER_OPTIMIZER:
        if grammar.values_of(key, sections) and key not in read:
            names = ", ".join(sorted(specs)) or "none"
            problems.append(f"{key!r} is set, but none of the grid's optimizers ({names}) takes it")


def _check_arms(
    sections: dict[str, Any], specs: dict[str, OptimizerSpec], base: Path, problems: list[str]
) -> None:
    """A per-optimizer value given under an optimizer's own arm (``optimizer: {adamw: {alpha:
    [5.0]}}``) must be one that optimizer (or an embedding optimizer of the grid) takes."""
    optional = set(PER_OPTIMIZER) | {h.name for s in specs.values() for h in s.hyperparameters}
    embedding = grammar.values_of("embedding_optimizer", sections)
    readers = [specs.get(canonical_name(e, base)) for e in embedding]
    extra = {k for spec in readers if spec is not None for k in spec.defaults()}
    for key, _, arm in _set_keys(sections):
        spec = None if arm is None else specs.get(canonical_name(arm, base))
        if spec is None or key not in optional:
            continue  # not under an arm, or an optimizer already reported
        if key not in spec.defaults() and key not in extra:
            problems.append(f"{key!r} is set under the arm {arm!r}, which does not take it")


def _check_schedule_read(sections: dict[str, Any], file: str) -> None:
    """A schedule's own field set in the grid must be read by one of the grid's schedules."""
    named = grammar.values_of("schedule", sections) or {str(FIELDS["schedule"].default)}
    read = {k for name in named for k in SCHEDULE_FIELDS.get(name, {})}
    for key in sorted(SCHEDULE_KEYS - read):
        if grammar.values_of(key, sections):
            readers = ", ".join(s for s, f in SCHEDULE_FIELDS.items() if key in f)
            raise UserError(
                f"{file}: {key!r} is set, but none of the grid's schedules "
                f"({', '.join(sorted(named))}) reads it; it applies to schedule {readers}"
            )


def _check_duplicates(runs: Sequence[RunConfig], points: Sequence[Point], path: Path) -> None:
    seen: dict[str, int] = {}
    for i, run in enumerate(runs):
        j = seen.setdefault(run.run_id, i)
        if j != i:
            a, b = points[j].values, points[i].values
            diff = {k: (a.get(k), b.get(k)) for k in a.keys() | b.keys() if a.get(k) != b.get(k)}
            raise UserError(
                f"{path}: duplicate runs after expansion: points differing only in {diff} resolve "
                "to the same config (a value that does not apply, e.g. momentum for adamw?)"
            )


def _optional_name(doc: dict[str, Any], key: str, path: Path) -> str | None:
    value = doc.get(key)
    if value is not None and not isinstance(value, str):
        raise UserError(f"{path}: {key}: expected a name, got {value!r}")
    return value


def _figures(doc: dict[str, Any], path: Path) -> tuple[str, ...]:
    figs = doc.get("figures") or []
    if not isinstance(figs, list) or not all(isinstance(f, str) for f in figs):
        raise UserError(f"{path}: figures: expected a list of figure names")
    return tuple(figs)


def _varying(runs: Sequence[RunConfig]) -> tuple[str, ...]:
    """The run fields (and own hyperparameters) that take more than one value across runs."""
    table = [flat(run) for run in runs]
    names = dict.fromkeys(k for row in table for k in row)
    order = [*FIELD_NAMES, *sorted(set(names) - set(FIELD_NAMES))]
    return tuple(n for n in order if len({row.get(n) for row in table}) > 1)


def _merge_runs(problems: list[str]) -> list[str]:
    """Distinct problems, in order; a cause shared by several runs (``run lr=0.1, seed=0: cannot
    read meta.json``, one dataset for all of them) once, with the number of runs it stops."""
    runs: dict[str, int] = {}
    for p in problems:
        cause = p.partition(": ")[2] if p.startswith("run ") else p
        runs[cause] = runs.get(cause, 0) + 1
    out: dict[str, None] = {}
    for p in problems:
        cause = p.partition(": ")[2] if p.startswith("run ") else p
        n = runs[cause]
        out[p if n == 1 or not p.startswith("run ") else f"{cause} ({n} runs)"] = None
    return list(out)
