"""A bench protocol: the file that says how a candidate optimizer is compared with baselines.

A protocol is a grid with more structure (``protocols/laptop.yaml`` documents every key)::

    name: bench_laptop            # the grid every candidate under this protocol is run in
    description: free text
    launcher: local               # default launcher profile (--launcher overrides it)
    base: {model: tiny, ...}      # grid base keys every run shares
    cells:                        # the comparison is made per cell: >= 2 batch sizes and
      batch_size: [8, 16]         # >= 2 token budgets (tokens) or model sizes (model)
      tokens: [8192, 16384]
    seeds: {tune: [0], confirm: [1, 2, 3]}   # >= 1 tuning seed, >= 3 confirmation seeds
    #   stages: [3, 5, 8]         # optional: seeds per arm at each stage of the sequential
    #                             # confirmation (the first = len(confirm); more seeds count on)
    budget:                       # the same for every arm
      lr_points: 4                # lrs per setting, log-spaced over the arm's lr range
      settings: 2                 # settings of the other hyperparameters per lr
      extend_rounds: 3            # rounds of edge extension (lr only)
      lr_bounds: [1.0e-6, 10.0]   # no extension crosses these
    weight_decay: 0.1             # the first setting's decay (the second's is 0)
    baselines:
      AdamW:                      # arm label
        optimizer: adamw
        search: {lr: [1.0e-4, 1.0e-2], 1-beta1: [0.02, 0.5], weight_decay: [5.0e-3, 1.0]}
    candidate: {range_factor: 10, search: {}}
    verdict: {alpha: 0.05, power: 0.8, spending: obrien-fleming}

Every problem is a :class:`~harness.core.errors.UserError` naming the file, the key and the
valid choices (the CLI prints it on one line and exits with code 2).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from harness.analysis.stats import DEFAULT_SPENDING, SPENDING, SequentialDesign, sequential_design
from harness.core.errors import UserError, unknown_choice

TOP_KEYS = (
    "name",
    "description",
    "launcher",
    "base",
    "cells",
    "seeds",
    "budget",
    "weight_decay",
    "baselines",
    "candidate",
    "verdict",
)
"""Keys of a protocol file."""
BATCH_AXIS = "batch_size"
"""The cell axis of batch sizes (sequences per step)."""
BUDGET_AXES = ("tokens", "model")
"""Cell axes of budgets: training tokens, or model presets."""
ONE_MINUS = "1-"
"""Prefix of a search key tuned as one minus its value (``1-beta1``: 1 - beta1, log-spaced)."""
REQUIRED_SEARCH = ("lr", "weight_decay")
"""Keys every baseline's search space holds."""
MIN_CONFIRM = 3
"""Fewest confirmation seeds (a verdict needs a spread on each side)."""
BUDGET_KEYS = ("lr_points", "settings", "extend_rounds", "lr_bounds")
CANDIDATE_KEYS = ("range_factor", "search", "schedules")
SCHEDULE_KEYS = ("schedule", "warmup_steps", "lr_min", "decay_frac", "decay_shape")
"""Run fields a protocol's ``candidate: schedules`` may give a candidate of its own."""
VERDICT_KEYS = ("alpha", "power", "spending")
SEED_KEYS = ("tune", "confirm", "stages")
FAMILY_KEYS = ("optimizer", "search")


@dataclass(frozen=True, slots=True)
class LogRange:
    """A positive interval searched on a log scale."""

    low: float
    """Smallest value (> 0)."""
    high: float
    """Largest value (>= low)."""

    def points(self, n: int) -> tuple[float, ...]:
        """``n`` log-spaced values from low to high inclusive (the geometric mean for n = 1)."""
        if n == 1:
            return (math.sqrt(self.low * self.high),)
        step = math.log(self.high / self.low) / (n - 1)
        return tuple(_tidy(self.low * math.exp(i * step)) for i in range(n))

    def at(self, u: float) -> float:
        """The value a fraction ``u`` in [0, 1] of the way along the log range."""
        return _tidy(self.low * (self.high / self.low) ** u)


def _tidy(x: float) -> float:
    """``x`` to 4 significant digits (values a reader can type back)."""
    return float(f"{x:.4g}")


@dataclass(frozen=True, slots=True)
class Family:
    """A baseline arm: an optimizer and its search space."""

    label: str
    """The arm's label (the grid's ``label``)."""
    optimizer: str
    """The optimizer as a grid names it (``adamw``, ``torch.optim:SGD``, ``./f.py:Opt``)."""
    search: tuple[tuple[str, LogRange], ...]
    """Search key -> log range: ``lr``, ``weight_decay``, ``1-<field>`` (tuned as 1 - value)
    or a plain hyperparameter name."""

    def range(self, key: str) -> LogRange | None:
        """The range of ``key`` (None when this family does not search it)."""
        return dict(self.search).get(key)


@dataclass(frozen=True, slots=True)
class Budget:
    """The tuning budget every arm gets in every cell (configurations and rounds)."""

    lr_points: int
    """Learning rates per setting (>= 3, so that a best inside the range is seen as such)."""
    settings: int
    """Settings of the other hyperparameters per lr: the optimizer's defaults with the
    protocol's decay, the same with decay 0, then quasi-random points of the search space."""
    extend_rounds: int
    """Rounds of ``--extend`` on the lr axis (Marin re-tunes lr at every scale)."""
    lr_bounds: LogRange
    """No extension plans an lr outside these."""

    @property
    def configs(self) -> int:
        """Configurations per arm per cell before extension."""
        return self.lr_points * self.settings


@dataclass(frozen=True, slots=True)
class CandidateRules:
    """How the candidate's search space is made."""

    range_factor: float
    """A hyperparameter no baseline searches is searched over [default / f, default * f]
    (of 1 - default for a decay rate in [0.5, 1))."""
    search: tuple[tuple[str, LogRange], ...]
    """Ranges that override the derived ones (same keys as a family's ``search``)."""
    schedules: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...] = ()
    """Optimizer -> the schedule fields it runs with instead of the base's, where its authors
    say so (schedule-free: ``{schedule: constant, warmup_steps: 0}``); stated in the verdict."""

    def schedule_of(self, optimizer: str) -> dict[str, Any]:
        """The schedule fields ``optimizer`` runs with of its own (empty: the base's)."""
        return dict(dict(self.schedules).get(optimizer, ()))


@dataclass(frozen=True, slots=True)
class VerdictRules:
    """How the verdict is read."""

    alpha: float
    """Level of the test, corrected over every cell and baseline (Holm)."""
    power: float
    """The power line reports the difference the seeds detect with this probability."""
    spending: str = DEFAULT_SPENDING
    """How alpha is spent over the stages of the sequential confirmation
    (:data:`harness.analysis.stats.SPENDING`)."""


@dataclass(frozen=True, slots=True)
class Protocol:
    """A loaded protocol file (module docstring)."""

    path: Path
    """The file it was read from."""
    name: str
    """Grid name: every candidate benched under this protocol shares its results folder."""
    description: str
    """Free text."""
    launcher: str | None
    """Default launcher profile."""
    base: Mapping[str, Any]
    """Grid base keys every run shares."""
    cells: tuple[tuple[str, tuple[Any, ...]], ...]
    """Cell axis -> values (``batch_size``, then ``tokens`` and/or ``model``)."""
    tune_seeds: tuple[int, ...]
    """Seeds configurations are selected on."""
    confirm_seeds: tuple[int, ...]
    """Seeds the selected configurations are reported on first (>= 3, none a tuning seed): the
    first stage of :attr:`stages`."""
    budget: Budget
    """The tuning budget of every arm."""
    weight_decay: float
    """The decay of the first setting of every arm."""
    baselines: tuple[Family, ...]
    """The baseline arms."""
    candidate: CandidateRules
    """How the candidate is searched."""
    verdict: VerdictRules
    """How the verdict is read."""
    stages: SequentialDesign
    """The sequential confirmation (``seeds: stages``, ``verdict: spending``): seeds per arm
    at each stage, each stage's share of alpha; one stage of :attr:`confirm_seeds` when the
    protocol declares none."""

    def seeds_at(self, stage: int) -> tuple[int, ...]:
        """The confirmation seeds of ``stage`` (cumulative): :attr:`confirm_seeds`, then seeds
        counted on from the largest of them."""
        more = self.stages.stages[stage] - len(self.confirm_seeds)
        start = max(self.confirm_seeds) + 1
        return (*self.confirm_seeds, *range(start, start + more))

    @property
    def budget_axes(self) -> tuple[str, ...]:
        """The cell axes that are budgets (tokens, model)."""
        return tuple(a for a, _ in self.cells if a in BUDGET_AXES)


def load_protocol(path: str | Path) -> Protocol:
    """Read and check a protocol file (module docstring).

    Raises:
        UserError: a missing file, invalid YAML, an unknown or missing key, a bad value.
    """
    p = Path(path)
    if not p.is_file():
        raise UserError(f"{p}: no such protocol file")
    try:
        doc = yaml.safe_load(p.read_text())
    except yaml.YAMLError as e:
        raise UserError(f"{p}: invalid YAML: {getattr(e, 'problem', e)}") from None
    f = str(p)
    _keys(doc, TOP_KEYS, f, required=("name", "base", "cells", "seeds", "budget", "baselines"))
    tune, confirm = _seeds(doc["seeds"], f)
    budget = _budget(doc["budget"], f)
    verdict = _verdict(doc.get("verdict") or {}, f)
    return Protocol(
        path=p,
        name=_text(doc["name"], f"{f}: name"),
        description=str(doc.get("description") or ""),
        launcher=None if doc.get("launcher") is None else _text(doc["launcher"], f"{f}: launcher"),
        base=_mapping(doc["base"], f"{f}: base"),
        cells=_cells(doc["cells"], f),
        tune_seeds=tune,
        confirm_seeds=confirm,
        budget=budget,
        weight_decay=_number(doc.get("weight_decay", 0.1), f"{f}: weight_decay", low=0.0),
        baselines=_baselines(doc["baselines"], f),
        candidate=_candidate(doc.get("candidate") or {}, f),
        verdict=verdict,
        stages=_stages(doc["seeds"], len(confirm), verdict.spending, f),
    )


def _keys(
    value: Any, valid: tuple[str, ...], where: str, required: tuple[str, ...] = ()
) -> dict[str, Any]:
    """``value`` as a mapping whose keys are among ``valid`` and hold ``required``."""
    m = _mapping(value, where)
    for k in m:
        if k not in valid:
            raise UserError(f"{where}: unknown key {k!r}; valid keys: {', '.join(valid)}")
    for k in required:
        if k not in m:
            raise UserError(f"{where}: missing key {k!r} (required: {', '.join(required)})")
    return m


def _mapping(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise UserError(f"{where}: expected a mapping, got {value!r}")
    return {str(k): v for k, v in value.items()}


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise UserError(f"{where}: expected a non-empty string, got {value!r}")
    return value


def _number(value: Any, where: str, *, low: float = -math.inf, above: bool = False) -> float:
    """A finite number >= low (> low when ``above``)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise UserError(f"{where}: expected a number, got {value!r}")
    if value < low or (above and value == low):
        raise UserError(f"{where}: {value!r} must be {'>' if above else '>='} {low:g}")
    return float(value)


def _integer(value: Any, where: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise UserError(f"{where}: expected an integer >= {low}, got {value!r}")
    return value


def _range(value: Any, where: str) -> LogRange:
    if not isinstance(value, list) or len(value) != 2:
        raise UserError(f"{where}: expected [low, high] (a log range), got {value!r}")
    low = _number(value[0], where, low=0.0, above=True)
    high = _number(value[1], where, low=low)
    return LogRange(low, high)


def _cells(value: Any, f: str) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    valid = (BATCH_AXIS, *BUDGET_AXES)
    m = _keys(value, valid, f"{f}: cells", required=(BATCH_AXIS,))
    if not any(a in m for a in BUDGET_AXES):
        raise UserError(f"{f}: cells: needs a budget axis, one of {', '.join(BUDGET_AXES)}")
    out = []
    for axis in valid:
        if axis not in m:
            continue
        values = m[axis]
        if not isinstance(values, list) or len(values) < 2 or len(set(map(str, values))) < 2:
            raise UserError(
                f"{f}: cells: {axis}: expected a list of >= 2 distinct values (a "
                f"verdict must hold at more than one), got {values!r}"
            )
        out.append((axis, tuple(values)))
    return tuple(out)


def _seed_list(value: Any, where: str, start: int) -> tuple[int, ...]:
    """A list of seeds, or an int n: n seeds counted on from ``start``."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return tuple(range(start, start + value))
    if isinstance(value, list) and value and all(isinstance(s, int) for s in value):
        if len(set(value)) != len(value):
            raise UserError(f"{where}: seeds repeat: {value!r}")
        return tuple(value)
    raise UserError(f"{where}: expected a count >= 1 or a list of integer seeds, got {value!r}")


def _seeds(value: Any, f: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    m = _keys(value, SEED_KEYS, f"{f}: seeds", required=("tune", "confirm"))
    tune = _seed_list(m["tune"], f"{f}: seeds: tune", 0)
    confirm = _seed_list(m["confirm"], f"{f}: seeds: confirm", max(tune) + 1)
    if len(confirm) < MIN_CONFIRM:
        raise UserError(
            f"{f}: seeds: confirm: {len(confirm)} seed(s); a verdict needs at least "
            f"{MIN_CONFIRM} confirmation seeds"
        )
    if set(tune) & set(confirm):
        raise UserError(
            f"{f}: seeds: confirm: seeds {sorted(set(tune) & set(confirm))} are "
            "tuning seeds too; a configuration is reported on seeds it was not "
            "selected on"
        )
    return tune, confirm


def _stages(value: dict[str, Any], confirm: int, spending: str, f: str) -> SequentialDesign:
    """``seeds: stages``: increasing seed counts per arm, the first the confirmation seeds'."""
    stages = value.get("stages", [confirm])
    w = f"{f}: seeds: stages"
    if (
        not isinstance(stages, list)
        or not stages
        or not all(isinstance(n, int) and not isinstance(n, bool) for n in stages)
        or stages[0] != confirm
        or any(b <= a for a, b in itertools.pairwise(stages))
    ):
        raise UserError(
            f"{w}: expected increasing seed counts per arm starting at the {confirm} "
            f"confirmation seeds (e.g. [{confirm}, {confirm + 2}, {confirm + 5}]), got {stages!r}"
        )
    return sequential_design(stages, spending)


def _budget(value: Any, f: str) -> Budget:
    w = f"{f}: budget"
    m = _keys(value, BUDGET_KEYS, w, required=("lr_points", "settings"))
    return Budget(
        lr_points=_integer(m["lr_points"], f"{w}: lr_points", 3),
        settings=_integer(m["settings"], f"{w}: settings", 1),
        extend_rounds=_integer(m.get("extend_rounds", 3), f"{w}: extend_rounds", 1),
        lr_bounds=_range(m.get("lr_bounds", [1.0e-6, 10.0]), f"{w}: lr_bounds"),
    )


def _search(value: Any, where: str) -> tuple[tuple[str, LogRange], ...]:
    m = _mapping(value, where)
    out = []
    for key, r in m.items():
        name = key.removeprefix(ONE_MINUS)
        if not name.isidentifier():
            raise UserError(
                f"{where}: {key!r} is not a hyperparameter name (write e.g. lr, "
                "weight_decay, 1-beta1, eps)"
            )
        rng = _range(r, f"{where}: {key}")
        if key.startswith(ONE_MINUS) and rng.high >= 1:
            raise UserError(f"{where}: {key}: {rng.high:g} >= 1 would make {name} <= 0")
        out.append((key, rng))
    return tuple(out)


def _baselines(value: Any, f: str) -> tuple[Family, ...]:
    m = _mapping(value, f"{f}: baselines")
    if not m:
        raise UserError(f"{f}: baselines: at least one baseline (e.g. AdamW) is needed")
    out = []
    for label, body in m.items():
        w = f"{f}: baselines: {label}"
        fam = _keys(body, FAMILY_KEYS, w, required=FAMILY_KEYS)
        search = _search(fam["search"], f"{w}: search")
        for key in REQUIRED_SEARCH:
            if key not in dict(search):
                raise UserError(
                    f"{w}: search: missing {key!r} (every arm searches "
                    f"{', '.join(REQUIRED_SEARCH)})"
                )
        out.append(Family(label, _text(fam["optimizer"], f"{w}: optimizer"), search))
    optimizers = [b.optimizer for b in out]
    if len(set(optimizers)) != len(optimizers):
        raise UserError(
            f"{f}: baselines: an optimizer appears twice ({optimizers}); each "
            "baseline is one optimizer with its own search space"
        )
    return tuple(out)


def _candidate(value: Any, f: str) -> CandidateRules:
    m = _keys(value, CANDIDATE_KEYS, f"{f}: candidate")
    factor = _number(
        m.get("range_factor", 10.0), f"{f}: candidate: range_factor", low=1.0, above=True
    )
    schedules = []
    for name, body in _mapping(m.get("schedules") or {}, f"{f}: candidate: schedules").items():
        fields = _keys(body, SCHEDULE_KEYS, f"{f}: candidate: schedules: {name}")
        schedules.append((name, tuple(sorted(fields.items()))))
    return CandidateRules(
        factor, _search(m.get("search") or {}, f"{f}: candidate: search"), tuple(schedules)
    )


def _verdict(value: Any, f: str) -> VerdictRules:
    m = _keys(value, VERDICT_KEYS, f"{f}: verdict")
    alpha = _number(m.get("alpha", 0.05), f"{f}: verdict: alpha", low=0.0, above=True)
    power = _number(m.get("power", 0.8), f"{f}: verdict: power", low=0.0, above=True)
    if alpha >= 1 or power >= 1:
        raise UserError(f"{f}: verdict: alpha and power are probabilities in (0, 1)")
    spending = m.get("spending", DEFAULT_SPENDING)
    if spending not in SPENDING:
        raise unknown_choice("spending", spending, SPENDING, where=f"{f}: verdict")
    return VerdictRules(alpha, power, spending)
