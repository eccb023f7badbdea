"""GRID arguments: a grid YAML path or the name of a grid in the results."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from harness.core import paths
from harness.core.errors import UserError


def resolve_grid(arg: str) -> str:
    """The grid name of ``arg`` (the ``name:`` of a YAML file, else ``arg`` itself, checked as
    :func:`harness.grid.load.grid_name` checks it). A name does not import the grid loader (its
    resolvers and registries: about 0.1 s of CPU that a question about results never uses)."""
    p = Path(arg)
    if p.suffix in (".yaml", ".yml") or p.is_file():  # a grid file, as grid_name tells one
        from harness.grid.load import grid_name

        return grid_name(arg)
    return paths.check_grid_name(arg, "GRID")


def declared_figures(arg: str) -> list[str] | None:
    """The ``figures:`` list of a grid YAML; None when ``arg`` is a name or declares none.

    Raises:
        UserError: the file's ``figures`` is not a list of names.
    """
    p = Path(arg)
    if not (p.suffix in (".yaml", ".yml") and p.is_file()):
        return None
    import yaml  # only for a grid file

    doc = yaml.safe_load(p.read_text()) or {}
    figs = doc.get("figures") if isinstance(doc, dict) else None
    if figs is None or figs == []:
        return None
    if not isinstance(figs, list) or not all(isinstance(f, str) for f in figs):
        raise UserError(f"{p}: figures: expected a list of figure names")
    return list(figs)


def declared_derived_axes(args: str | Sequence[str] | None) -> dict[str, str]:
    """The ``derived_axes:`` of the grid YAMLs among ``args`` (axis -> the quantity its values
    were derived from); names and files without one give nothing.

    Raises:
        UserError: a file's ``derived_axes`` is not a mapping of names to names.
    """
    out: dict[str, str] = {}
    for arg in [args] if isinstance(args, str) else list(args or []):
        p = Path(arg)
        if not (p.suffix in (".yaml", ".yml") and p.is_file()):
            continue
        import yaml  # a grid file's: names (the usual GRID) need neither

        from harness.grid.load import check_derived_axes

        doc = yaml.safe_load(p.read_text()) or {}
        if isinstance(doc, dict):
            check_derived_axes(doc, p)
            out.update(doc.get("derived_axes") or {})
    return out
