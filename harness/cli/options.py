"""Options shared by several commands."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from harness.core import paths
from harness.core.config import SCALES
from harness.core.targets import DEFAULT_TARGET_COLUMN, TARGET_COLUMNS

if TYPE_CHECKING:
    from harness.analysis.rows.selectors import Selector


Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]
"""What a shared option is: a decorator of a command function."""


def _folder_option(flag: str, help: str) -> Decorator:
    """``flag DIR``: a folder (the parameter named after the flag; None when not given)."""
    return click.option(
        flag, type=click.Path(file_okay=False, path_type=Path), default=None, help=help
    )


results_option: Decorator = _folder_option(
    "--results", "Results root (default: $HARNESS_RESULTS, then ./results)."
)
"""``--results DIR`` (default: $HARNESS_RESULTS, then ./results)."""

data_option: Decorator = _folder_option(
    "--data",
    "Where datasets are prepared (default: $HARNESS_DATA, then "
    "$XDG_DATA_HOME/harness/data, i.e. ~/.local/share/harness/data).",
)
"""``--data DIR`` (default: $HARNESS_DATA, then the user's data home)."""


def resolve_results(value: Path | None) -> Path:
    """The results root for a ``--results`` value."""
    return paths.results_root(value)


def choice_option(
    flag: str, choices: Iterable[str], default: str, help: str, name: str | None = None
) -> Decorator:
    """``flag CHOICE``: one of ``choices``, ``default`` when not given (shown in the help);
    the parameter ``name`` (None: named after the flag)."""
    return click.option(
        flag,
        *([name] if name else []),
        type=click.Choice(list(choices)),
        default=default,
        show_default=True,
        help=help,
    )


def format_option(choices: Iterable[str], help: str, default: str = "table") -> Decorator:
    """``--format`` (the parameter ``fmt``): how the command prints, one of ``choices``."""
    return choice_option("--format", choices, default, help, name="fmt")


def exit_on_faults(faults: int, grid: str) -> None:
    """Exit with status 1, saying where to look, when ``faults`` runs of ``grid`` failed or
    were lost (``submit``, ``bench``); return otherwise."""
    if faults:
        click.echo(
            f"exit 1: {faults} runs failed or were lost; see 'harness status {grid}' and each "
            "run's log",
            err=True,
        )
        sys.exit(1)


def launcher_option(default: str | None = None, help: str | None = None) -> Decorator:
    """``--launcher NAME``: a launcher profile (``launchers/NAME.yaml``)."""
    return click.option(
        "--launcher",
        default=default,
        show_default=default is not None,
        help=help or "Launcher profile name (launchers/NAME.yaml).",
    )


def wait_option(help: str) -> Decorator:
    """``--wait/--no-wait`` (None when not given: the backend decides)."""
    return click.option("--wait/--no-wait", default=None, help=help)


def figure_option(names: Iterable[str]) -> Decorator:
    """``--figure NAME`` (repeatable; the parameter ``names``): only these of ``names``."""
    return click.option(
        "--figure",
        "names",
        multiple=True,
        type=click.Choice(list(names)),
        help="Draw only this figure (repeatable; default: the grid's figures).",
    )


where_option: Decorator = click.option(
    "--where", default=None, help='SQL predicate over runs\' columns, e.g. "lr < 0.01".'
)
"""``--where SQL``."""

scale_option: Decorator = click.option(
    "--scale",
    type=click.Choice(SCALES),
    default=None,
    help="full or local runs (default: the only scale present).",
)
"""``--scale full|local``."""


def _parse_pool(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[str, ...]:
    from harness.analysis.rows.selectors import parse_columns

    return tuple(parse_columns(value))


def pool_option(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--pool AXES``: conditions pooled instead of being cells (``analyze``, ``figures``,
    ``report``; :mod:`harness.analysis.rows.conditions`)."""
    from harness.analysis.rows.conditions import POOL_FLAG, POOL_HELP

    return click.option(
        POOL_FLAG, "pool", default=None, callback=_parse_pool, metavar="COLUMNS", help=POOL_HELP
    )(f)


def rows_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--where``, ``--scale``, ``--pool`` and ``--results``: which rows a command that reads
    results takes (``api.Selecting``'s ``where``, ``scale``, ``results``, and ``pool``; the
    metric's options are :func:`metric_options`)."""
    for option in (results_option, pool_option, scale_option, where_option):
        f = option(f)
    return f


def target_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--target VALUE`` and ``--curve COLUMN`` (the loss runs are timed to)."""
    f = click.option(
        "--curve",
        type=click.Choice(TARGET_COLUMNS),
        default=None,
        help=f"Curve column of --target (default: {DEFAULT_TARGET_COLUMN}).",
    )(f)
    return click.option(
        "--target",
        type=float,
        default=None,
        help="Loss runs are timed to (default: the target: the grid YAMLs declare).",
    )(f)


def parse_arm(ctx: click.Context, param: click.Parameter, value: str | None) -> Selector | None:
    """Click callback of an arm flag (``--baseline optimizer=sgd``): its selector, or None
    (imports the analysis layer only then: ``submit`` and ``status`` never do)."""
    from harness.analysis.rows.selectors import parse_selector

    return None if value is None else parse_selector(value, f"--{param.name}")


def metric_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--metric``, ``--goal`` and ``--select-by``: what
    :func:`~harness.analysis.rows.metric_choice.choose_metric` resolves, once per command."""
    from harness.analysis.rows.direction import DEFAULT_METRIC, GOAL_HELP, GOALS

    f = click.option(
        "--select-by",
        default=None,
        help="Metric whose mean over seeds picks each cell's configuration; --metric is reported "
        "there (default: the grid's loss: val_loss, or val_ppl when that is the metric).",
    )(f)
    f = click.option(
        "--goal", type=click.Choice(GOALS), default="auto", show_default=True, help=GOAL_HELP
    )(f)
    return click.option(
        "--metric",
        default=DEFAULT_METRIC,
        show_default=True,
        help="Column analysed (the default becomes val_loss on a grid whose runs have no "
        "val_ppl: a workload other than the GPT).",
    )(f)


def arm_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--baseline K=V`` and ``--reference K=V``: the arms of the gap (table and figures)."""
    f = click.option(
        "--reference",
        default=None,
        callback=parse_arm,
        metavar="K=V[,K=V]",
        help="The reference arm's rows: 100 % of the gap closure (default: optimizer=adamw, "
        "else adam).",
    )(f)
    return click.option(
        "--baseline",
        default=None,
        callback=parse_arm,
        metavar="K=V[,K=V]",
        help="The baseline arm's rows: 0 % of the gap closure (default: optimizer=sgd).",
    )(f)
