"""Options shared by several commands."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from harness.core import paths

if TYPE_CHECKING:
    from harness.analysis.select import Selector


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
    """``--data DIR`` (default: $HARNESS_DATA, then ./data)."""
    return click.option(
        "--data",
        "data",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help="Where datasets are prepared (default: $HARNESS_DATA, then ./data).",
    )(f)


def resolve_results(value: Path | None) -> Path:
    """The results root for a ``--results`` value."""
    return paths.results_root(value)


def parse_arm(ctx: click.Context, param: click.Parameter, value: str | None) -> Selector | None:
    """Click callback of an arm flag (``--baseline optimizer=sgd``): its selector, or None
    (imports the analysis layer only then: ``submit`` and ``status`` never do)."""
    from harness.analysis.select import parse_selector

    return None if value is None else parse_selector(value, f"--{param.name}")
