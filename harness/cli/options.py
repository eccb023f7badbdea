"""Options shared by several commands."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from harness.core import paths
from harness.core.config import SCALES
from harness.core.targets import DEFAULT_TARGET_COLUMN, TARGET_COLUMNS

if TYPE_CHECKING:
    from harness.analysis.rows.selectors import Selector


def results_option(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--results DIR`` (default: $HARNESS_RESULTS, then ./results)."""
    return click.option(
        "--results",
        "results",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help="Results root (default: $HARNESS_RESULTS, then ./results).",
    )(f)


def data_option(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--data DIR`` (default: $HARNESS_DATA, then the user's data home)."""
    return click.option(
        "--data",
        "data",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help="Where datasets are prepared (default: $HARNESS_DATA, then "
        "$XDG_DATA_HOME/harness/data, i.e. ~/.local/share/harness/data).",
    )(f)


def resolve_results(value: Path | None) -> Path:
    """The results root for a ``--results`` value."""
    return paths.results_root(value)


Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]

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
