"""GRID arguments: a grid YAML path or the name of a grid in the results."""

from __future__ import annotations

from pathlib import Path

import yaml

from harness.core.errors import UserError


def resolve_grid(arg: str) -> str:
    """The grid name of ``arg`` (the ``name:`` of a YAML file, else ``arg`` itself)."""
    from harness.grid.load import grid_name

    return grid_name(arg)


def declared_figures(arg: str) -> list[str] | None:
    """The ``figures:`` list of a grid YAML; None when ``arg`` is a name or declares none.

    Raises:
        UserError: the file's ``figures`` is not a list of names.
    """
    p = Path(arg)
    if not (p.suffix in (".yaml", ".yml") and p.is_file()):
        return None
    doc = yaml.safe_load(p.read_text()) or {}
    figs = doc.get("figures") if isinstance(doc, dict) else None
    if figs is None or figs == []:
        return None
    if not isinstance(figs, list) or not all(isinstance(f, str) for f in figs):
        raise UserError(f"{p}: figures: expected a list of figure names")
    return list(figs)
