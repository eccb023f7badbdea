"""``harness analyze``: questions about the results of one or more grids, one command each,
built from the registry of questions (:data:`harness.analysis.questions.registry.QUESTIONS`).

Every tuned command tunes each optimizer in each cell first (best configuration by the mean over
seeds of ``--select-by``, the grid's loss by default), counts diverged runs as worst, and prints a
table of ``--metric`` (``--format table|csv|json``) with notes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from harness.analysis.present.table import FORMATS, render
from harness.analysis.questions.answer import Answer
from harness.analysis.questions.registry import (
    BY,
    OVER,
    QUESTIONS,
    Option,
    Question,
)
from harness.analysis.rows.selectors import Selector, parse_columns, parse_selector
from harness.cli.options import (
    Decorator,
    format_option,
    metric_options,
    rows_options,
    target_options,
)

_FORMAT = format_option(FORMATS, "table for people; csv or json for programs (notes on stderr).")


def _stack(f: Callable[..., Any], opts: list[Decorator]) -> Callable[..., Any]:
    for opt in reversed(opts):
        f = opt(f)
    return f


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
    "flag": {"is_flag": True},
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


#: The common options of each kind of :attr:`Question.inputs`, after GRID...: a tuned command's
#: rows, metric, cells and tuned columns; a target command's target and rows (no --metric: the
#: target says).
_INPUTS: dict[str, list[Decorator]] = {
    "tuned": [rows_options, metric_options, _FORMAT, _option(BY), _option(OVER)],
    "target": [target_options, rows_options, _FORMAT],
}


def _command(question: Question) -> click.Command:
    grid = click.argument("grid", nargs=-1)
    inputs: list[Decorator] = [grid, *_INPUTS[question.inputs]]

    def run(**kw: Any) -> None:
        from harness import api

        fmt = kw.pop("fmt")
        _print(api.analyze(question.name, kw.pop("grid") or None, **kw), fmt)

    f = _stack(run, [*inputs, *(_option(o) for o in question.options)])
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
