"""Analysis questions by name: one module each, one registry entry each (like figures).

A question's module defines ``answer(q, *, by, over, **options) -> Answer`` (``q`` a
:class:`~harness.analysis.questions.query.Query`; for questions reading ``target`` inputs, a
:class:`~harness.analysis.questions.target_query.TargetQuery` and no ``by``/``over`` unless
declared); its entry declares the options beyond those every command of its inputs takes
(:class:`Option`, plain data), from which ``harness analyze <name>`` is built
(``harness/cli/analyze.py``). Every ``harness analyze`` command is an entry here. Adding a question
is its module and one :class:`Question` below; the CLI does not change.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harness.analysis.stats.defaults import (
    ALPHA,
    ALTERNATIVES,
    CONFIDENCE,
    CORRECTION_NAMES,
    DEFAULT_SPENDING,
    N_BOOT,
    POWER,
    POWER_TESTS,
    SPENDING_NAMES,
    TAU_MAX,
    TEST_NAMES,
    TUNED_MODES,
)
from harness.core.errors import UserError
from harness.core.registry import Registry, load_object

if TYPE_CHECKING:  # pandas is imported when a question is answered, not for --help
    from harness.analysis.questions.answer import Answer

#: The kinds of :attr:`Option.kind`.
OPTION_KINDS = ("text", "float", "int", "selector", "choice", "columns", "flag")

#: What a question reads (:attr:`Question.inputs`): ``tuned``: GRID and the options every tuned
#: command takes (``--metric``, ``--goal``, ``--select-by``, ``--by``, ``--over``, ...), given to
#: ``answer`` as a ``Query``, ``by`` and ``over``; ``target``: GRID, ``--target``/``--curve`` and
#: the row options, given as a ``TargetQuery``.
INPUTS = ("tuned", "target")


@dataclass(frozen=True, slots=True)
class Option:
    """One option of a question's command."""

    flag: str
    """``--axis``."""
    help: str
    """One line."""
    kind: str = "text"
    """One of :data:`OPTION_KINDS`: ``selector`` is ``K=V[,K=V]``, parsed to a Selector;
    ``columns`` is comma separated, parsed to a list of columns."""
    default: object = None
    """Default value (None: required when ``required``, else absent)."""
    required: bool = False
    """Whether the option must be given."""
    choices: tuple[str, ...] = ()
    """The valid values of a ``choice``."""
    dest: str = ""
    """The keyword of ``answer`` when it is not the flag without dashes, ``-`` as ``_``
    (``--tuned`` -> ``tuned_mode``)."""
    hidden: bool = False
    """Accepted (scripts pass it) but unused by this question: not in the help and not passed
    to ``answer``."""

    def __post_init__(self) -> None:
        if self.kind not in OPTION_KINDS:
            raise ValueError(f"Option {self.flag}: kind {self.kind!r}; valid: {OPTION_KINDS}")

    @property
    def keyword(self) -> str:
        """The keyword argument of ``answer``."""
        return self.dest or self.flag.lstrip("-").replace("-", "_")


@dataclass(frozen=True, slots=True)
class Question:
    """A kind of ``harness analyze`` question."""

    name: str
    """Command name (and module name under ``harness.analysis.questions`` unless ``module``)."""
    summary: str
    """The command's help (first line: what it answers)."""
    example: str
    """One example command line."""
    options: tuple[Option, ...] = ()
    """Options beyond the common ones, in help order."""
    module: str = ""
    """The module defining ``answer`` (empty: ``harness.analysis.questions.<name>``, ``-`` as
    ``_``)."""
    inputs: str = "tuned"
    """One of :data:`INPUTS`: the common options and the query ``answer`` gets."""

    def __post_init__(self) -> None:
        if self.inputs not in INPUTS:
            raise ValueError(f"Question {self.name}: inputs {self.inputs!r}; valid: {INPUTS}")

    def keywords(self, given: Mapping[str, Any]) -> dict[str, Any]:
        """The keywords of ``answer`` from the options ``given`` by keyword (the CLI's parsed
        values, or a library call's): defaults filled in, ``K=V`` and column strings parsed,
        hidden options dropped.

        Raises:
            UserError: an option this question does not take, or a required one missing.
        """
        from harness.analysis.rows.selectors import as_selector, parse_columns

        known = {o.keyword: o for o in self.options}
        if unknown := sorted(set(given) - set(known)):
            raise UserError(
                f"analyze {self.name}: unknown option(s) {', '.join(unknown)}; valid: "
                f"{', '.join(k for k, o in known.items() if not o.hidden) or 'none'}"
            )
        out: dict[str, Any] = {}
        for key, opt in known.items():
            value = given.get(key, opt.default)
            if opt.hidden:
                continue
            if opt.required and value is None:
                raise UserError(f"analyze {self.name}: {opt.flag} is required")
            if opt.kind == "selector" and value is not None:
                value = as_selector(value, opt.flag)
            elif opt.kind == "columns" and isinstance(value, str):
                value = parse_columns(value)
            out[key] = value
        return out

    def answerer(self) -> Callable[..., Answer]:
        """The module's ``answer`` function (imports it)."""
        module = self.module or f"harness.analysis.questions.{self.name.replace('-', '_')}"
        answer: Callable[..., Answer] = load_object(f"{module}:answer")
        return answer


def _arm(flag: str, example: str) -> Option:
    """A required selector of an arm's rows."""
    return Option(flag, f"Rows of this arm, e.g. {example}.", "selector", None, True)


_ALPHA = Option("--alpha", "Significance level.", "float", ALPHA)
_CONFIDENCE = Option("--confidence", "Two-sided level of intervals.", "float", CONFIDENCE)
_CORRECTION = Option(
    "--correction",
    "Multiple-comparison correction over the cells (and arms) of the table.",
    "choice",
    "holm",
    choices=CORRECTION_NAMES,
)
_POOLED = Option(
    "--pooled-variance",
    "Pool each arm's seed variance over the cells (df = sum of n - 1): narrower intervals, "
    "valid only if the seed noise is the same in every cell.",
    "flag",
    False,
)
_FAMILY = Option(
    "--family",
    "Correct over every claim recorded in this family (a study's claims from several "
    "commands; kept under the results root), not over this table alone.",
)
_TUNED = (
    Option(
        "--tuned",
        "Each arm's value: its best grid point, or its fitted optimum of --fit-axis "
        "(see analyze optimum).",
        "choice",
        "grid",
        choices=TUNED_MODES,
        dest="tuned_mode",
    ),
    Option("--fit-axis", "The axis --tuned fit fits.", "text", "lr"),
)


def _boot(*, hidden: bool = False) -> tuple[Option, ...]:
    """--n-boot and --seed (``hidden``: accepted, the intervals being closed form)."""
    return (
        Option("--n-boot", "Bootstrap resamples (p_boot).", "int", N_BOOT, hidden=hidden),
        Option("--seed", "Bootstrap random seed.", "int", 0, hidden=hidden),
    )


#: ``--crossing``: how a curve's crossing of a target is read
#: (:data:`harness.analysis.stats.reaching.CROSSINGS`).
CROSSING = Option(
    "--crossing",
    "first: the first logged point at or below the target (AlgoPerf's scorer); interpolated: "
    "linear between the logged points around it.",
    "choice",
    "interpolated",
    choices=("first", "interpolated"),
)
#: What a to-target question measures (:data:`harness.analysis.stats.reaching.MEASURES`).
TARGET_MEASURES = ("tokens", "steps", "time")


BY = Option("--by", "Cell columns, comma separated, e.g. batch_size,model.", "columns", "")
"""``--by COLUMNS`` (a common option of ``tuned`` questions)."""
OVER = Option(
    "--over",
    "Tuned columns, comma separated (default: the hyperparameters that vary).",
    "columns",
    "",
)
"""``--over COLUMNS`` (a common option of ``tuned`` questions)."""


QUESTIONS: Registry[Question] = Registry(
    "analysis question",
    {
        q.name: q
        for q in (
            Question(
                "best",
                "Each cell's best configuration: mean, std, n and 2-sigma over seeds; edges "
                "flagged.",
                "harness analyze best grids/adam_betas.yaml --over lr --by beta1,beta2",
                (_POOLED,),
            ),
            Question(
                "gap",
                "Each other arm's closure of the baseline-reference gap, in percent, with "
                "Fieller's interval, and Welch tests against the baseline and the reference "
                "(Holm-corrected).",
                "harness analyze gap grids/optimizer_gap.yaml --baseline label=SGD "
                "--reference label=Adam",
                (
                    _arm("--baseline", "optimizer=sgd"),
                    _arm("--reference", "optimizer=adamw"),
                    _CONFIDENCE,
                    _ALPHA,
                    _CORRECTION,
                    _POOLED,
                    _FAMILY,
                    *_TUNED,
                    *_boot(hidden=True),
                ),
            ),
            Question(
                "crossover",
                "The x at which b starts to beat a (interpolated in log2 x), with a "
                "t-inversion interval.",
                "harness analyze crossover grids/batch_size_gap.yaml --x batch_size "
                "--a optimizer=sgd --b optimizer=adamw",
                (
                    Option("--x", "Column along which b may start to beat a.", required=True),
                    _arm("--a", "optimizer=sgd"),
                    _arm("--b", "optimizer=adamw"),
                    _CONFIDENCE,
                    *_TUNED,
                    *_boot(),
                ),
            ),
            Question(
                "compare",
                "Is b better than a in each cell? Means, stds, n, difference, p-value, "
                "significance.",
                "harness analyze compare grids/coupled_adam.yaml --a optimizer=adamw "
                "--b optimizer=coupled_adam --by model,tokens --test paper --metric val_loss",
                (
                    _arm("--a", "optimizer=adamw"),
                    _arm("--b", "optimizer=coupled_adam"),
                    Option(
                        "--test",
                        "auto: paired by seed where both arms ran the same seeds, else welch "
                        "(the bench's verdict); paper: App. F of the Coupled Adam paper; the "
                        "others via scipy.stats.",
                        "choice",
                        "auto",
                        choices=TEST_NAMES,
                    ),
                    Option(
                        "--alternative",
                        "H1 about b vs a; auto: b better (less for a lower-is-better metric).",
                        "choice",
                        "auto",
                        choices=("auto", *ALTERNATIVES),
                    ),
                    _ALPHA,
                    _CORRECTION,
                    _POOLED,
                    _FAMILY,
                    Option(
                        "--stages",
                        "Read as harness bench does with sequential confirmation seeds: "
                        "cumulative seeds per arm, e.g. 3,5,8 (each cell's seeds in ascending "
                        "order; two-sided, Holm over the cells and stages).",
                    ),
                    Option(
                        "--spending",
                        "With --stages: each stage's share of alpha (the protocol's "
                        "verdict: spending).",
                        "choice",
                        DEFAULT_SPENDING,
                        choices=SPENDING_NAMES,
                    ),
                    *_TUNED,
                ),
            ),
            Question(
                "speedup",
                "Budget ratio b needs to match a's final value (fit L(D) = E + A D^-alpha to b); "
                "with --target, the ratio of the steps (tokens, time) a needs to reach the "
                "target over those b needs, read from the curves, with a bootstrap interval "
                "over seeds that keeps runs never reaching it (and --threshold: the speed-run's "
                "rule, (target - mean) * sqrt(n) >= threshold at a common step).",
                "harness analyze speedup grids/coupled_adam.yaml --a optimizer=adamw "
                "--b optimizer=coupled_adam --by model",
                (
                    _arm("--a", "optimizer=signum"),
                    _arm("--b", "optimizer=adamw"),
                    Option("--x", "The budget column.", "text", "tokens"),
                    _CONFIDENCE,
                    Option("--target", "Curve value to reach: read the curves.", "float"),
                    Option("--curve", "The curve column of --target (train_loss, val_loss)."),
                    Option(
                        "--measure",
                        "With --target: steps-, tokens- or time-to-target.",
                        "choice",
                        "steps",
                        choices=TARGET_MEASURES,
                    ),
                    CROSSING,
                    Option(
                        "--threshold",
                        "With --target: each arm's mean over seeds at its latest common step "
                        "passes when (target - mean) * sqrt(n) >= this (speed-run: 0.004).",
                        "float",
                    ),
                    *_boot(),
                ),
            ),
            Question(
                "targets",
                "Each run's steps-, tokens- and time-to-target, read from its curve; runs that "
                "never reach the target are censored (inf), not dropped; runs already there at "
                "their first point are flagged left_censored, runs that stopped early stopped.",
                "harness analyze targets grids/optimizer_gap.yaml --target 4.5",
                (CROSSING,),
                inputs="target",
            ),
            Question(
                "profiles",
                "AlgoPerf-style performance profiles: per arm, its time to target and ratio to "
                "the best arm per cell, rho(tau) = the fraction of cells where its "
                "tokens-to-target is within a factor tau of the best arm's, and the area score. "
                "Each arm's run length (steps, tokens) is its own, not a cell.",
                "harness analyze profiles grids/batch_size_gap.yaml --target 5.0 --by batch_size",
                (
                    Option(
                        "--by",
                        "Cell columns, comma separated (default: what varies).",
                        "columns",
                        "",
                    ),
                    OVER,
                    Option(
                        "--measure",
                        "tokens-, steps- or (wall-clock) time-to-target.",
                        "choice",
                        "tokens",
                        choices=TARGET_MEASURES,
                    ),
                    Option(
                        "--tau-max",
                        "Largest ratio to the best arm the score integrates over.",
                        "float",
                        TAU_MAX,
                    ),
                    CROSSING,
                ),
                inputs="target",
            ),
            Question(
                "power",
                "Seeds needed to detect a difference between b and a, and the smallest "
                "difference the present seeds detect (noncentral t, measured seed variance).",
                "harness analyze power grids/coupled_adam.yaml --a optimizer=adamw "
                "--b optimizer=coupled_adam --metric val_loss --by model",
                (
                    _arm("--a", "optimizer=adamw"),
                    _arm("--b", "optimizer=signum"),
                    Option(
                        "--test",
                        "The t test planned.",
                        "choice",
                        "welch",
                        choices=POWER_TESTS,
                    ),
                    Option(
                        "--alternative",
                        "H1 about b vs a; auto: b better.",
                        "choice",
                        "auto",
                        choices=("auto", *ALTERNATIVES),
                    ),
                    _ALPHA,
                    Option("--power", "Wanted probability of detecting it.", "float", POWER),
                    Option(
                        "--difference",
                        "The difference |b - a| to detect (default: the observed one).",
                        "float",
                    ),
                ),
            ),
            Question(
                "optimum",
                "The fitted optimum of a tuned axis (quadratic in log axis around the best "
                "points) and the metric there, with intervals over seeds; optima outside the "
                "searched range flagged.",
                "harness analyze optimum grids/optimizer_gap.yaml --axis lr --by batch_size",
                (
                    Option("--axis", "The tuned axis to fit (values > 0).", "text", "lr"),
                    _CONFIDENCE,
                ),
            ),
            Question(
                "critical-batch",
                "Steps (and tokens) to a target loss at each batch size per optimizer, and the "
                "critical batch size: S(B) = a + b/B fitted over every batch size, 20 % more "
                "steps than linear scaling from a reference batch (Zhang et al. 2024), with its "
                "interval and checks (fit_check, steps_check).",
                "harness analyze critical-batch grids/batch_size_gap.yaml --target 5.5",
                (
                    Option("--x", "The batch-size column.", "text", "batch_size"),
                    Option(
                        "--target",
                        "Training loss to reach (default: the highest every tuned run reaches).",
                        "float",
                    ),
                    Option(
                        "--reference-batch",
                        "Batch size linear scaling is measured from (0: the fit's small-batch "
                        "limit, which no grid choice moves; Zhang et al. use 256).",
                        "float",
                        0.0,
                    ),
                    _CONFIDENCE,
                ),
            ),
        )
    },
)
"""Every ``harness analyze`` question, by name."""
