"""``harness analyze``: questions about the results of one or more grids, one command each,
built from the registry of questions (:data:`harness.analysis.questions.registry.QUESTIONS`).

Every tuned command tunes each optimizer in each cell first (best configuration by the mean over
seeds of ``--select-by``, the grid's loss by default), counts diverged runs as worst, and prints a
table of ``--metric`` (``--format table|csv|json``) with notes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click

from harness.analysis.present.table import FORMATS, render
from harness.analysis.questions import query, target_query
from harness.analysis.questions.answer import Answer
from harness.analysis.questions.registry import (
    BY,
    OVER,
    QUESTIONS,
    Option,
    Question,
)
from harness.analysis.rows.direction import DEFAULT_METRIC, GOAL_HELP, GOALS
from harness.analysis.rows.selectors import Selector, parse_columns, parse_selector
from harness.cli.options import results_option, scale_option, target_options, where_option

_FORMAT = click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="table",
    show_default=True,
    help="table for people; csv or json for programs (notes on stderr).",
)

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


def _stack(f: Callable[..., Any], opts: list[Decorator]) -> Callable[..., Any]:
    for opt in reversed(opts):
        f = opt(f)
    return f


def _tuned_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """GRID and the options every tuned command takes."""
    return _stack(f, [
        click.argument("grid", nargs=-1),
        where_option,
        click.option(
            "--metric", default=DEFAULT_METRIC, show_default=True, help="Column to analyse."
        ),
        click.option(
            "--goal", type=click.Choice(GOALS), default="auto", show_default=True, help=GOAL_HELP
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
        _option(BY),
        _option(OVER),
        results_option,
    ])  # fmt: skip


def _rows(kw: dict[str, Any]) -> dict[str, Any]:
    """GRID, ``--results``, ``--where`` and ``--scale`` (taken out of ``kw``): the rows read."""
    results = kw.pop("results")
    return {
        "grid": kw.pop("grid") or None,
        "results": str(results) if results else None,
        "where": kw.pop("where"),
        "scale": kw.pop("scale"),
    }


def _tuned_query(kw: dict[str, Any]) -> tuple[query.Query, dict[str, Any]]:
    """The Query, and ``by`` and ``over``, of a tuned command's options (taken out of ``kw``)."""
    q = query.Query(
        **_rows(kw),
        metric=kw.pop("metric"),
        goal=kw.pop("goal"),
        select_by=kw.pop("select_by"),
    )
    return q, {"by": kw.pop("by"), "over": kw.pop("over")}


def _target_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """GRID, the target and the options that select rows (no --metric: the target says)."""
    return _stack(f, [
        click.argument("grid", nargs=-1), target_options, where_option, scale_option, _FORMAT,
        results_option,
    ])  # fmt: skip


def _target_query(kw: dict[str, Any]) -> tuple[target_query.TargetQuery, dict[str, Any]]:
    """The TargetQuery of a target command's options (taken out of ``kw``)."""
    q = target_query.TargetQuery(**_rows(kw), target=kw.pop("target"), curve=kw.pop("curve"))
    return q, {}


@dataclass(frozen=True, slots=True)
class _Inputs:
    """The common options of one kind of :attr:`Question.inputs` and how they become the query
    (and keywords) ``answer`` gets."""

    options: Callable[[Callable[..., Any]], Callable[..., Any]]
    query: Callable[[dict[str, Any]], tuple[Any, dict[str, Any]]]


_INPUTS: dict[str, _Inputs] = {
    "tuned": _Inputs(_tuned_options, _tuned_query),
    "target": _Inputs(_target_options, _target_query),
}


def _print(answer: Answer, fmt: str) -> None:
    text, notes = render(answer, fmt)
    click.echo(text)
    for n in notes:
        click.echo(n, err=fmt != "table")


def _parse_selector(flag: str) -> Callable[[click.Context, click.Parameter, str], Selector]:
    def parse(ctx: click.Context, param: click.Parameter, value: str) -> Selector:
        return parse_selector(value, flag)

    return parse


def _parse_columns(ctx: click.Context, param: click.Parameter, value: str) -> list[str]:
    return parse_columns(value)


_KINDS: dict[str, dict[str, Any]] = {
    "text": {"type": str},
    "float": {"type": float},
    "int": {"type": int},
    "columns": {"type": str, "callback": _parse_columns},
}


def _option(opt: Option) -> Decorator:
    """The click option of a question's :class:`Option`."""
    if opt.kind == "selector":
        extra: dict[str, Any] = {"callback": _parse_selector(opt.flag), "metavar": "K=V[,K=V]"}
    elif opt.kind == "choice":
        extra = {"type": click.Choice(list(opt.choices))}
    else:
        extra = dict(_KINDS[opt.kind])
    return click.option(
        opt.flag,
        opt.keyword,
        default=opt.default,
        required=opt.required,
        show_default=opt.default not in (None, ""),
        hidden=opt.hidden,
        help=opt.help,
        **extra,
    )


def _command(question: Question) -> click.Command:
    inputs = _INPUTS[question.inputs]
    hidden = {o.keyword for o in question.options if o.hidden}

    def run(**kw: Any) -> None:
        fmt = kw.pop("fmt")
        q, common = inputs.query(kw)
        rest = {k: v for k, v in kw.items() if k not in hidden}
        _print(question.answerer()(q, **common, **rest), fmt)

    f = _stack(run, [inputs.options, *(_option(o) for o in question.options)])
    return click.command(question.name, help=f"{question.summary}\n\nExample: {question.example}")(
        f
    )


@click.group()
def analyze() -> None:
    """Answer questions about results: GRID... is one or more grid YAMLs or grid names (arms
    compared across grids, e.g. --a grid=sgd_embeddings), none: every grid in the results.

    Example: harness analyze best grids/adam_betas.yaml --over lr --by beta1,beta2
    """


for _, _question in QUESTIONS.items():
    analyze.add_command(_command(_question))
