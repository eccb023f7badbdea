"""``harness analyze``: questions about the results of one or more grids, one command each.

Every command tunes each optimizer in each cell first (best configuration by the mean over seeds
of ``--select-by``, the grid's loss by default), counts diverged runs as worst, and prints a table
of ``--metric`` (``--format table|csv|json``) with notes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from harness.analysis import commands, target_commands
from harness.analysis.bootstrap import CONFIDENCE, N_BOOT
from harness.analysis.compare import ALTERNATIVES, TESTS
from harness.analysis.corrections import CORRECTIONS
from harness.analysis.goal import DEFAULT_METRIC, GOAL_HELP, GOALS
from harness.analysis.output import FORMATS, Answer, render
from harness.analysis.profiles import TAU_MAX
from harness.analysis.questions import QUESTIONS, Option, Question
from harness.analysis.select import Selector, parse_columns, parse_selector
from harness.analysis.targets import MEASURES
from harness.cli.options import (
    over_option,
    results_option,
    scale_option,
    target_options,
    where_option,
)

_FORMAT = click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="table",
    show_default=True,
    help="table for people; csv or json for programs (notes on stderr).",
)


def _common(f: Callable[..., Any]) -> Callable[..., Any]:
    """GRID and the options every analysis command takes."""
    opts: list[Callable[[Any], Any]] = [
        click.argument("grid", nargs=-1),
        where_option,
        click.option(
            "--metric", default=DEFAULT_METRIC, show_default=True, help="Column to analyse."
        ),
        click.option(
            "--goal",
            type=click.Choice(GOALS),
            default="auto",
            show_default=True,
            help=GOAL_HELP,
        ),
        click.option(
            "--select-by",
            default=None,
            help="Metric whose mean over seeds picks each cell's best configuration; the table "
            "reports --metric there (default: the grid's loss: val_loss, or val_ppl when that "
            "is the metric).",
        ),
        scale_option,
        _FORMAT,
        click.option(
            "--by", default="", help="Cell columns, comma separated, e.g. batch_size,model."
        ),
        over_option,
        results_option,
    ]
    for opt in reversed(opts):
        f = opt(f)
    return f


def _confidence(f: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--confidence", default=CONFIDENCE, show_default=True, help="Two-sided level of intervals."
    )(f)


def _boot(default: int, *, used: bool = True) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """--n-boot and --seed; ``used=False``: accepted (scripts pass them) but the command's
    intervals are closed form, so they are hidden and dropped."""

    def deco(f: Callable[..., Any]) -> Callable[..., Any]:
        f = click.option(
            "--seed", default=0, show_default=True, hidden=not used, help="Bootstrap random seed."
        )(f)
        return click.option(
            "--n-boot",
            default=default,
            show_default=True,
            hidden=not used,
            help="Bootstrap resamples (p_boot).",
        )(f)

    return deco


def _drop_boot(kw: dict[str, Any]) -> dict[str, Any]:
    kw.pop("n_boot"), kw.pop("seed")
    return kw


def _tuned(f: Callable[..., Any]) -> Callable[..., Any]:
    f = click.option(
        "--fit-axis", default="lr", show_default=True, help="The axis --tuned fit fits."
    )(f)
    return click.option(
        "--tuned",
        "tuned_mode",
        type=click.Choice(list(commands.TUNED_MODES)),
        default="grid",
        show_default=True,
        help="Each arm's value: its best grid point, or its fitted optimum of --fit-axis "
        "(see analyze optimum).",
    )(f)


def _significance(f: Callable[..., Any]) -> Callable[..., Any]:
    f = click.option(
        "--correction",
        type=click.Choice(list(CORRECTIONS)),
        default="holm",
        show_default=True,
        help="Multiple-comparison correction over the cells (and arms) of the table.",
    )(f)
    return click.option("--alpha", default=0.05, show_default=True, help="Significance level.")(f)


def _selector(flag: str, example: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def parse(ctx: click.Context, param: click.Parameter, value: str) -> Selector:
        return parse_selector(value, flag)

    name = flag.lstrip("-")
    return click.option(
        flag,
        name,
        required=True,
        callback=parse,
        metavar="K=V[,K=V]",
        help=f"Rows of this arm, e.g. {example}.",
    )


def _query(kw: dict[str, Any]) -> commands.Query:
    results = kw.pop("results")
    return commands.Query(
        grid=kw.pop("grid") or None,
        results=str(results) if results else None,
        where=kw.pop("where"),
        scale=kw.pop("scale"),
        metric=kw.pop("metric"),
        goal=kw.pop("goal"),
        select_by=kw.pop("select_by"),
    )


def _cells(kw: dict[str, Any]) -> dict[str, Any]:
    return {"by": parse_columns(kw.pop("by")), "over": parse_columns(kw.pop("over"))}


def _print(answer: Answer, fmt: str) -> None:
    text, notes = render(answer, fmt)
    click.echo(text)
    for n in notes:
        click.echo(n, err=fmt != "table")


@click.group()
def analyze() -> None:
    """Answer questions about results: GRID... is one or more grid YAMLs or grid names (arms
    compared across grids, e.g. --a grid=sgd_embeddings), none: every grid in the results.

    Example: harness analyze best grids/adam_betas.yaml --over lr --by beta1,beta2
    """


@analyze.command()
@_common
def best(**kw: Any) -> None:
    """Each cell's best configuration: mean, std, n and 2-sigma over seeds; edges flagged.

    Example: harness analyze best grids/adam_betas.yaml --over lr --by beta1,beta2
    """
    fmt = kw.pop("fmt")
    _print(commands.best(_query(kw), **_cells(kw)), fmt)


@analyze.command()
@_common
@_selector("--baseline", "optimizer=sgd")
@_selector("--reference", "optimizer=adamw")
@_confidence
@_significance
@_tuned
@_boot(N_BOOT, used=False)
def gap(**kw: Any) -> None:
    """Each other arm's closure of the baseline-reference gap, in percent, with Fieller's
    interval, and Welch tests against the baseline and the reference (Holm-corrected).

    Example: harness analyze gap grids/optimizer_gap.yaml --baseline label=SGD
    --reference label=Adam
    """
    fmt, q, cells = kw.pop("fmt"), _query(kw), _cells(kw)
    _print(commands.gap(q, **cells, **_drop_boot(kw)), fmt)


@analyze.command()
@_common
@click.option("--x", "x", required=True, help="Column along which b may start to beat a.")
@_selector("--a", "optimizer=sgd")
@_selector("--b", "optimizer=adamw")
@_confidence
@_tuned
@_boot(N_BOOT)
def crossover(**kw: Any) -> None:
    """The x at which b starts to beat a (interpolated in log2 x), with a t-inversion interval.

    Example: harness analyze crossover grids/batch_size_gap.yaml --x batch_size
    --a optimizer=sgd --b optimizer=adamw
    """
    fmt, q, cells = kw.pop("fmt"), _query(kw), _cells(kw)
    _print(commands.crossover(q, **cells, **kw), fmt)


@analyze.command()
@_common
@_selector("--a", "optimizer=adamw")
@_selector("--b", "optimizer=coupled_adam")
@click.option(
    "--test",
    type=click.Choice(list(TESTS)),
    default="welch",
    show_default=True,
    help="paper: App. F of the Coupled Adam paper; the others via scipy.stats.",
)
@click.option(
    "--alternative",
    type=click.Choice(["auto", *ALTERNATIVES]),
    default="auto",
    show_default=True,
    help="H1 about b vs a; auto: b better (less for a lower-is-better metric).",
)
@_significance
@_tuned
def compare(**kw: Any) -> None:
    """Is b better than a in each cell? Means, stds, n, difference, p-value, significance.

    Example: harness analyze compare grids/coupled_adam.yaml --a optimizer=adamw
    --b optimizer=coupled_adam --by model,tokens --test paper --metric val_loss
    """
    fmt, q, cells = kw.pop("fmt"), _query(kw), _cells(kw)
    _print(commands.compare(q, **cells, **kw), fmt)


@analyze.command()
@_common
@_selector("--a", "optimizer=signum")
@_selector("--b", "optimizer=adamw")
@click.option("--x", "x", default="tokens", show_default=True, help="The budget column.")
@_confidence
@_boot(N_BOOT, used=False)
def speedup(**kw: Any) -> None:
    """Budget ratio b needs to match a's final value (fit L(D) = E + A D^-alpha to b).

    Example: harness analyze speedup grids/coupled_adam.yaml --a optimizer=adamw
    --b optimizer=coupled_adam --by model
    """
    fmt, q, cells = kw.pop("fmt"), _query(kw), _cells(kw)
    _print(commands.speedup(q, **cells, **_drop_boot(kw)), fmt)


_KINDS: dict[str, Any] = {"text": str, "float": float, "int": int, "selector": str}


def _question_option(opt: Option) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    if opt.kind == "selector":
        return _selector(opt.flag, opt.help.rstrip(".").split("e.g. ")[-1])
    kind = click.Choice(list(opt.choices)) if opt.kind == "choice" else _KINDS[opt.kind]
    return click.option(
        opt.flag,
        opt.keyword,
        type=kind,
        default=opt.default,
        required=opt.required,
        show_default=opt.default is not None,
        help=opt.help,
    )


def _question_command(question: Question) -> click.Command:
    def run(**kw: Any) -> None:
        fmt, q, cells = kw.pop("fmt"), _query(kw), _cells(kw)
        _print(question.answerer()(q, **cells, **kw), fmt)

    f: Callable[..., Any] = run
    for opt in reversed(question.options):
        f = _question_option(opt)(f)
    f = _common(f)
    return click.command(question.name, help=f"{question.summary}\n\nExample: {question.example}")(
        f
    )


for _, _question in QUESTIONS.items():
    analyze.add_command(_question_command(_question))


def _target_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """GRID, the target and the options that select rows (no --metric: the target says)."""
    for opt in reversed(
        [click.argument("grid", nargs=-1), target_options, where_option, scale_option, _FORMAT,
         results_option]
    ):  # fmt: skip
        f = opt(f)
    return f


def _target_query(kw: dict[str, Any]) -> target_commands.TargetQuery:
    results = kw.pop("results")
    return target_commands.TargetQuery(
        grid=kw.pop("grid") or None,
        target=kw.pop("target"),
        curve=kw.pop("curve"),
        results=str(results) if results else None,
        where=kw.pop("where"),
        scale=kw.pop("scale"),
    )


@analyze.command()
@_target_options
def targets(**kw: Any) -> None:
    """Each run's tokens- and time-to-target, read from its curve; runs that never reach the
    target are censored (inf), not dropped.

    Example: harness analyze targets grids/optimizer_gap.yaml --target 4.5
    """
    fmt = kw.pop("fmt")
    _print(target_commands.targets(_target_query(kw)), fmt)


@analyze.command()
@_target_options
@click.option("--by", default="", help="Cell columns, comma separated (default: what varies).")
@over_option
@click.option(
    "--measure",
    type=click.Choice(list(MEASURES)),
    default="tokens",
    show_default=True,
    help="tokens- or (wall-clock) time-to-target.",
)
@click.option(
    "--tau-max",
    type=float,
    default=TAU_MAX,
    show_default=True,
    help="Largest ratio to the best arm the score integrates over.",
)
def profiles(**kw: Any) -> None:
    """AlgoPerf-style performance profiles: per arm, rho(tau) = the fraction of cells where
    its tokens-to-target is within a factor tau of the best arm's, and the area score.

    Example: harness analyze profiles grids/batch_size_gap.yaml --target 5.0 --by batch_size
    """
    fmt, q, cells = kw.pop("fmt"), _target_query(kw), _cells(kw)
    _print(target_commands.profiles(q, **cells, **kw), fmt)
