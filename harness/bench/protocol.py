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

Each section is a frozen dataclass whose fields are its keys, each declared once with its type,
default, check and documentation (:func:`harness.core.sections.key`, the pattern of the run
config's fields); the valid and required keys are derived from them. Every problem is a
:class:`~harness.core.errors.UserError` naming the file, the key and the valid choices (the CLI
prints it on one line and exits with code 2). A key given as null takes its default.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harness.analysis.stats import DEFAULT_SPENDING, SPENDING, SequentialDesign, sequential_design
from harness.core.errors import UserError, unknown_choice
from harness.core.sections import integer, key, mapping, number, read, section, string, text

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
SCHEDULE_KEYS = ("schedule", "warmup_steps", "lr_min", "decay_frac", "decay_shape")
"""Run fields a protocol's ``candidate: schedules`` may give a candidate of its own."""


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


def _range(value: Any, where: str) -> LogRange:
    """``[low, high]``: a log range (0 < low <= high)."""
    if not isinstance(value, list) or len(value) != 2:
        raise UserError(f"{where}: expected [low, high] (a log range), got {value!r}")
    low = number(value[0], where, low=0.0, above=True)
    high = number(value[1], where, low=low)
    return LogRange(low, high)


def _search(value: Any, where: str) -> tuple[tuple[str, LogRange], ...]:
    """Search key -> log range (``lr``, ``weight_decay``, ``1-<field>``, a hyperparameter)."""
    out = []
    for k, r in mapping(value, where).items():
        name = k.removeprefix(ONE_MINUS)
        if not name.isidentifier():
            raise UserError(
                f"{where}: {k!r} is not a hyperparameter name (write e.g. lr, "
                "weight_decay, 1-beta1, eps)"
            )
        rng = _range(r, f"{where}: {k}")
        if k.startswith(ONE_MINUS) and rng.high >= 1:
            raise UserError(f"{where}: {k}: {rng.high:g} >= 1 would make {name} <= 0")
        out.append((k, rng))
    return tuple(out)


def _arm_search(value: Any, where: str) -> tuple[tuple[str, LogRange], ...]:
    """A baseline's search space: :func:`_search`, holding every key of
    :data:`REQUIRED_SEARCH`."""
    search = _search(value, where)
    for k in REQUIRED_SEARCH:
        if k not in dict(search):
            raise UserError(
                f"{where}: missing {k!r} (every arm searches {', '.join(REQUIRED_SEARCH)})"
            )
    return search


@dataclass(frozen=True, kw_only=True, slots=True)
class Family:
    """A baseline arm (``baselines: <label>:``): an optimizer and its search space."""

    label: str
    """The arm's label (the grid's ``label``): the key it is declared under."""
    optimizer: str = key(check=text)
    """The optimizer as a grid names it (``adamw``, ``torch.optim:SGD``, ``./f.py:Opt``)."""
    search: tuple[tuple[str, LogRange], ...] = key(check=_arm_search)
    """Search key -> log range: ``lr``, ``weight_decay``, ``1-<field>`` (tuned as 1 - value)
    or a plain hyperparameter name."""

    def range(self, key: str) -> LogRange | None:
        """The range of ``key`` (None when this family does not search it)."""
        return dict(self.search).get(key)


LR_BOUNDS = LogRange(1.0e-6, 10.0)
"""The lrs no extension crosses, where a protocol states none."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Budget:
    """``budget:``: the tuning budget every arm gets in every cell (configurations, rounds)."""

    lr_points: int = key(check=functools.partial(integer, low=3))
    """Learning rates per setting (>= 3, so that a best inside the range is seen as such)."""
    settings: int = key(check=functools.partial(integer, low=1))
    """Settings of the other hyperparameters per lr: the optimizer's defaults with the
    protocol's decay, the same with decay 0, then quasi-random points of the search space."""
    extend_rounds: int = key(3, check=functools.partial(integer, low=1))
    """Rounds of ``--extend`` on the lr axis (Marin re-tunes lr at every scale)."""
    lr_bounds: LogRange = key(LR_BOUNDS, check=_range)
    """No extension plans an lr outside these (``[low, high]``)."""

    @property
    def configs(self) -> int:
        """Configurations per arm per cell before extension."""
        return self.lr_points * self.settings


def _schedules(value: Any, where: str) -> tuple[tuple[str, tuple[tuple[str, Any], ...]], ...]:
    """Optimizer -> its own schedule fields (keys among :data:`SCHEDULE_KEYS`)."""
    out = []
    for name, body in mapping(value, where).items():
        fields = mapping(body, f"{where}: {name}")
        for k in fields:
            if k not in SCHEDULE_KEYS:
                raise UserError(
                    f"{where}: {name}: unknown key {k!r}; valid keys: {', '.join(SCHEDULE_KEYS)}"
                )
        out.append((name, tuple(sorted(fields.items()))))
    return tuple(out)


@dataclass(frozen=True, kw_only=True, slots=True)
class CandidateRules:
    """``candidate:``: how the candidate's search space is made."""

    range_factor: float = key(10.0, check=functools.partial(number, low=1.0, above=True))
    """A hyperparameter no baseline searches is searched over [default / f, default * f]
    (of 1 - default for a decay rate in [0.5, 1))."""
    search: tuple[tuple[str, LogRange], ...] = key((), check=_search)
    """Ranges that override the derived ones (same keys as a family's ``search``)."""
    schedules: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...] = key((), check=_schedules)
    """Optimizer -> the schedule fields it runs with instead of the base's, where its authors
    say so (schedule-free: ``{schedule: constant, warmup_steps: 0}``); stated in the verdict."""

    def schedule_of(self, optimizer: str) -> dict[str, Any]:
        """The schedule fields ``optimizer`` runs with of its own (empty: the base's)."""
        return dict(dict(self.schedules).get(optimizer, ()))


def _probability(value: Any, where: str) -> float:
    """A number in (0, 1)."""
    p = number(value, where, low=0.0, above=True)
    if p >= 1:
        raise UserError(f"{where}: {p:g} >= 1; alpha and power are probabilities in (0, 1)")
    return p


def _spending(value: Any, where: str) -> str:
    """One of :data:`harness.analysis.stats.SPENDING`."""
    if value not in SPENDING:
        raise unknown_choice("spending", value, SPENDING, where=where.rpartition(": ")[0])
    return str(value)


@dataclass(frozen=True, kw_only=True, slots=True)
class VerdictRules:
    """``verdict:``: how the verdict is read."""

    alpha: float = key(0.05, check=_probability)
    """Level of the test, corrected over every cell and baseline (Holm)."""
    power: float = key(0.8, check=_probability)
    """The power line reports the difference the seeds detect with this probability."""
    spending: str = key(DEFAULT_SPENDING, check=_spending)
    """How alpha is spent over the stages of the sequential confirmation
    (:data:`harness.analysis.stats.SPENDING`)."""


def _seed_list(value: Any, where: str) -> tuple[int, ...] | int:
    """A list of distinct integer seeds, or a count n >= 1 (seeds counted on: :class:`Seeds`)."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    if isinstance(value, list) and value and all(isinstance(s, int) for s in value):
        if len(set(value)) != len(value):
            raise UserError(f"{where}: seeds repeat: {value!r}")
        return tuple(value)
    raise UserError(f"{where}: expected a count >= 1 or a list of integer seeds, got {value!r}")


def _counted(seeds: tuple[int, ...] | int, start: int) -> tuple[int, ...]:
    """``seeds``, a count of them as seeds from ``start`` on."""
    return tuple(range(start, start + seeds)) if isinstance(seeds, int) else seeds


@dataclass(frozen=True, kw_only=True, slots=True)
class Seeds:
    """``seeds:``: the seeds configurations are selected on and those they are reported on."""

    tune: tuple[int, ...] = key(check=_seed_list)
    """Seeds configurations are selected on (a count n: seeds 0 to n - 1)."""
    confirm: tuple[int, ...] = key(check=_seed_list)
    """Seeds the selected configurations are reported on first (>= 3, none a tuning seed; a
    count n: n seeds after the largest tuning seed)."""
    stages: tuple[int, ...] = key(())
    """Seeds per arm at each stage of the sequential confirmation, increasing, the first the
    number of confirmation seeds (more seeds count on from the largest); empty: one stage."""

    def __post_init__(self) -> None:
        tune = _counted(self.tune, 0)
        confirm = _counted(self.confirm, max(tune) + 1)
        stages = self.stages or [len(confirm)]
        if len(confirm) < MIN_CONFIRM:
            raise ValueError(
                f"confirm: {len(confirm)} seed(s); a verdict needs at least {MIN_CONFIRM} "
                "confirmation seeds"
            )
        if set(tune) & set(confirm):
            raise ValueError(
                f"confirm: seeds {sorted(set(tune) & set(confirm))} are tuning seeds too; a "
                "configuration is reported on seeds it was not selected on"
            )
        if (
            not isinstance(stages, list | tuple)
            or not all(isinstance(n, int) and not isinstance(n, bool) for n in stages)
            or stages[0] != len(confirm)
            or any(b <= a for a, b in itertools.pairwise(stages))
        ):
            n = len(confirm)
            raise ValueError(
                f"stages: expected increasing seed counts per arm starting at the {n} "
                f"confirmation seeds (e.g. [{n}, {n + 2}, {n + 5}]), got {stages!r}"
            )
        object.__setattr__(self, "tune", tune)
        object.__setattr__(self, "confirm", confirm)
        object.__setattr__(self, "stages", tuple(stages))


def _cells(value: Any, where: str) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    """Cell axis -> >= 2 distinct values: ``batch_size``, and ``tokens`` and/or ``model``."""
    valid = (BATCH_AXIS, *BUDGET_AXES)
    found = mapping(value, where)
    for k in found:
        if k not in valid:
            raise UserError(f"{where}: unknown key {k!r}; valid keys: {', '.join(valid)}")
    if BATCH_AXIS not in found:
        raise UserError(f"{where}: missing key {BATCH_AXIS!r} (required: {BATCH_AXIS})")
    if not any(a in found for a in BUDGET_AXES):
        raise UserError(f"{where}: needs a budget axis, one of {', '.join(BUDGET_AXES)}")
    out = []
    for axis in (a for a in valid if a in found):
        values = found[axis]
        if not isinstance(values, list) or len(values) < 2 or len(set(map(str, values))) < 2:
            raise UserError(
                f"{where}: {axis}: expected a list of >= 2 distinct values (a verdict must "
                f"hold at more than one), got {values!r}"
            )
        out.append((axis, tuple(values)))
    return tuple(out)


def _baselines(value: Any, where: str) -> tuple[Family, ...]:
    """Label -> :class:`Family`: at least one, each of its own optimizer."""
    found = mapping(value, where)
    if not found:
        raise UserError(f"{where}: at least one baseline (e.g. AdamW) is needed")
    out = tuple(read(Family, body, f"{where}: {k}", label=k) for k, body in found.items())
    optimizers = [b.optimizer for b in out]
    if len(set(optimizers)) != len(optimizers):
        raise UserError(
            f"{where}: an optimizer appears twice ({optimizers}); each baseline is one "
            "optimizer with its own search space"
        )
    return out


@dataclass(frozen=True, kw_only=True, slots=True)
class Protocol:
    """A loaded protocol file (module docstring): each key a field, in the file's order."""

    path: Path
    """The file it was read from."""
    name: str = key(check=text)
    """Grid name: every candidate benched under this protocol shares its results folder."""
    description: str = key("", check=string)
    """Free text."""
    launcher: str | None = key(None, check=text)
    """Default launcher profile."""
    base: Mapping[str, Any] = key(check=mapping)
    """Grid base keys every run shares."""
    cells: tuple[tuple[str, tuple[Any, ...]], ...] = key(check=_cells)
    """Cell axis -> values (``batch_size``, then ``tokens`` and/or ``model``)."""
    seeds: Seeds = key(check=section(Seeds))
    """The tuning and confirmation seeds, and the stages of the confirmation."""
    budget: Budget = key(check=section(Budget))
    """The tuning budget of every arm."""
    weight_decay: float = key(0.1, check=functools.partial(number, low=0.0))
    """The decay of the first setting of every arm."""
    baselines: tuple[Family, ...] = key(check=_baselines)
    """The baseline arms."""
    candidate: CandidateRules = key(CandidateRules(), check=section(CandidateRules))
    """How the candidate is searched."""
    verdict: VerdictRules = key(VerdictRules(), check=section(VerdictRules))
    """How the verdict is read."""
    stages: SequentialDesign = field(init=False)
    """The sequential confirmation (``seeds: stages``, ``verdict: spending``): seeds per arm
    at each stage, each stage's share of alpha; one stage of :attr:`confirm_seeds` when the
    protocol declares none."""

    def __post_init__(self) -> None:
        design = sequential_design(self.seeds.stages, self.verdict.spending)
        object.__setattr__(self, "stages", design)

    @property
    def tune_seeds(self) -> tuple[int, ...]:
        """Seeds configurations are selected on."""
        return self.seeds.tune

    @property
    def confirm_seeds(self) -> tuple[int, ...]:
        """Seeds the selected configurations are reported on first: the first stage of
        :attr:`stages`."""
        return self.seeds.confirm

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
    return read(Protocol, doc, str(p), path=p)
