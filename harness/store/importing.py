"""External or published results (a CSV) as rows of ``runs``.

Each CSV row is one run (or one seed of a published configuration): config columns (any
:class:`~harness.core.config.RunConfig` field) and result columns (``val_ppl``, ``val_loss``, the
metric columns, and columns declared with ``extra``). Missing config fields are NULL, ``status``
is ``completed`` unless the file says otherwise, ``source`` names where the numbers came from,
and ``val_ppl``/``val_loss`` are derived from each other when only one is given. The rows land in
one Parquet file in the grid's ``runs/`` folder, so every analysis command and figure reads them
like trained runs; re-importing the same file replaces its rows.

Curves (``--curves``, :func:`curves_tables`) come in a second CSV, one row per logged point: key
columns that name a run of the first file (e.g. ``model,batch_size``; a subset of its columns
that picks out exactly one of its rows), ``step``, and curve columns (``tokens``,
``train_loss``, ``val_loss``, ``lr``, ``elapsed_s``). Each run's points become its loss-curve
file, as a trained run's, so ``critical-batch``, ``speedup`` and the curve figures read them. A
paper's step counts to a target are a curve too: two points, above the target and at it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

from harness.core import paths
from harness.core.catalogue import FIELD_NAMES
from harness.core.config import SCALES
from harness.core.errors import UserError
from harness.core.fields import content_hash
from harness.core.provenance import IMPORTED_PROVENANCE
from harness.core.result import CURVE_COLUMNS, STATUSES, Status
from harness.metrics.catalogue import METRICS
from harness.store.import_columns import RUN_NAME, rename
from harness.store.rows import write_imported, write_imported_curves
from harness.store.schema import CURVE_SCHEMA, OUTCOME_COLUMNS, row_schema

#: Text values read as NULL.
NULLS = ("", "null", "none", "na", "nan", "n/a")
#: Columns a CSV may not set: the importer does (not the row columns a hyperparameter may not
#: be named after, :data:`harness.core.catalogue.RESERVED`).
SET_BY_IMPORTER = ("run_id", "grid", "created_at")


@dataclass(frozen=True, slots=True)
class Imported:
    """What an import wrote."""

    path: Path
    """The Parquet file holding the rows."""
    rows: int
    """Rows written."""
    columns: tuple[str, ...]
    """The CSV's columns, all recognised."""
    derived: tuple[str, ...]
    """Columns filled from others (val_ppl from val_loss, ...)."""
    curves: int = 0
    """Runs given a loss curve (``--curves``)."""


def allowed_columns(extra: Sequence[str] = ()) -> list[str]:
    """Columns a CSV may have."""
    results = [c for c in OUTCOME_COLUMNS if c != "status"]
    return [*FIELD_NAMES, "status", *results, *METRICS, *extra, *IMPORTED_PROVENANCE]


def _check_columns(cols: Sequence[str], extra: Sequence[str], file: str) -> None:
    valid = set(allowed_columns(extra)) - set(SET_BY_IMPORTER)
    for c in cols:
        if c in SET_BY_IMPORTER:
            raise UserError(f"{file}: column {c!r} is set by the importer; remove it")
        if c not in valid:
            raise UserError(
                f"{file}: unknown column {c!r}; valid: config fields, status, result and metric "
                f"columns ({', '.join(sorted(valid))}); declare new metrics with --extra {c}"
            )
    if not set(cols) & {*OUTCOME_COLUMNS, *METRICS, *extra} - {"status", "error"}:
        raise UserError(f"{file}: no result column (e.g. val_ppl, val_loss)")


def _convert(text: str, typ: pa.DataType, column: str, line: int, file: str) -> object:
    t = text.strip()
    if t.lower() in NULLS:
        return None
    try:
        if pa.types.is_integer(typ):
            if t.lstrip("+-").isdigit():
                return int(t)  # exact, however large
            v = float(t)  # "3.2e9" is a valid token count
            if not v.is_integer():
                raise ValueError
            return int(v)
        if pa.types.is_floating(typ):
            return float(t)
        if pa.types.is_boolean(typ):
            return {"true": True, "false": False, "1": True, "0": False}[t.lower()]
    except (ValueError, KeyError):
        kind = {True: "an integer"}.get(pa.types.is_integer(typ)) or str(typ)
        raise UserError(f"{file}:{line}: column {column}: expected {kind}, got {t!r}") from None
    return t


def rows_table(
    frame: pd.DataFrame,
    *,
    grid: str,
    source: str,
    scale: str = "full",
    extra: Sequence[str] = (),
    file: str = "<csv>",
) -> tuple[pa.Table, tuple[str, ...]]:
    """Result rows (Arrow, :func:`harness.store.rows.row_schema`) from a CSV read as text.

    Args:
        frame: the CSV with every value as a string (``dtype=str``, no NA conversion).
        grid: the grid the rows belong to.
        source: provenance of rows without a ``source`` value.
        scale: ``full`` or ``local`` for rows without a ``scale`` value.
        extra: further metric columns the CSV may hold.
        file: the file name for error messages.

    Returns:
        (table, names of columns derived from others).

    Raises:
        UserError: unknown columns, unconvertible values (naming file, line and column),
            unknown statuses, or two rows with the same configuration.
    """
    names = _run_names(frame, file)
    frame = frame.drop(columns=[RUN_NAME], errors="ignore")
    _check_columns(list(frame.columns), extra, file)
    schema = row_schema(extra_metrics=extra)
    rows: list[dict[str, Any]] = []
    derived: set[str] = set()
    for i, rec in enumerate(frame.to_dict(orient="records")):
        line = i + 2  # 1-based, after the header
        row: dict[str, Any] = {f.name: None for f in schema}
        for key, text in rec.items():
            c = str(key)
            row[c] = _convert(str(text), schema.field(c).type, c, line, file)
        derived |= _fill(row, grid, source, scale, line, file, names[i] if names else None)
        rows.append(row)
    _check_unique(rows, file)
    table = pa.Table.from_pylist(rows, schema=schema)
    if names:  # not stored: it names the runs of this file, for its curves
        table = table.append_column(RUN_NAME, pa.array(names, pa.string()))
    return table, tuple(sorted(derived))


def _run_names(frame: pd.DataFrame, file: str) -> list[str]:
    """The run-name column's values (:data:`~harness.store.import_columns.RUN_NAME`), each
    given once; empty without one.

    Raises:
        UserError: an empty or repeated name, naming its line.
    """
    if RUN_NAME not in frame.columns:
        return []
    seen: dict[str, int] = {}
    for i, name in enumerate(frame[RUN_NAME].astype(str).str.strip()):
        if name.lower() in NULLS:
            raise UserError(f"{file}:{i + 2}: empty run name")
        if name in seen:
            raise UserError(
                f"{file}: lines {seen[name]} and {i + 2} have the same run name {name!r}"
            )
        seen[name] = i + 2
    return [str(n).strip() for n in frame[RUN_NAME]]


def _fill(
    row: dict[str, Any],
    grid: str,
    source: str,
    scale: str,
    line: int,
    file: str,
    name: str | None = None,
) -> set[str]:
    row["grid"] = grid
    row["scale"] = row["scale"] or scale
    row["source"] = row["source"] or source
    row["status"] = row["status"] or Status.COMPLETED.value
    row["created_at"] = dt.datetime.now(dt.UTC)
    if row["status"] not in STATUSES:
        raise UserError(
            f"{file}:{line}: unknown status {row['status']!r}; valid: {', '.join(STATUSES)} "
            "(W&B states: finished, crashed, killed; a running run has no result yet)"
        )
    if row["scale"] not in SCALES:
        raise UserError(
            f"{file}:{line}: unknown scale {row['scale']!r}; valid: {', '.join(SCALES)}"
        )
    derived = set()
    if row["val_ppl"] is None and row["val_loss"] is not None:
        row["val_ppl"], derived = math.exp(row["val_loss"]), {"val_ppl"}
    elif row["val_loss"] is None and row["val_ppl"] is not None and row["val_ppl"] > 0:
        row["val_loss"], derived = math.log(row["val_ppl"]), {"val_loss"}
    row["run_id"] = _run_id(row, name)
    return derived


def _run_id(row: dict[str, Any], name: str | None = None) -> str:
    """Content hash of the row's config values and source (16 hex digits), and its run name
    when the file names runs."""
    values = {k: row[k] for k in (*FIELD_NAMES, "source") if k not in ("grid", "scale")}
    return content_hash(values if name is None else {**values, RUN_NAME: name})


def _check_unique(rows: list[dict[str, Any]], file: str) -> None:
    seen: dict[str, int] = {}
    for i, row in enumerate(rows):
        line = i + 2
        if row["run_id"] in seen:
            raise UserError(
                f"{file}: lines {seen[row['run_id']]} and {line} have the same configuration; "
                "add a column that tells them apart (e.g. seed)"
            )
        seen[row["run_id"]] = line


#: Columns of a curves CSV besides its key columns: the curve file's (``step`` required).
CURVE_FIELDS = CURVE_COLUMNS


def curves_tables(
    frame: pd.DataFrame, runs: pa.Table, *, grid: str, file: str = "<curves>"
) -> dict[str, pa.Table]:
    """Loss curves (run_id -> :data:`~harness.store.schema.CURVE_SCHEMA` table) from a curves CSV
    read as text, matched to the imported ``runs`` by its key columns (a run name, or config
    columns; ``lr`` too when the others leave runs apart only by their configured lr). Points
    are checked as a live run's: an integer step in [0, 2**63), once per run. A run without
    ``tokens`` gets step x batch_size x seq_len when it has both.

    Raises:
        UserError: no ``step`` column, no key column, a key column the runs do not have, a value
            that does not convert, a bad or repeated step, or a line whose key matches no run or
            several; each naming file and line.
    """
    cols = list(frame.columns)
    if "step" not in cols:
        raise UserError(f"{file}: no 'step' column; a curve point needs its step")
    keys = [c for c in cols if c not in CURVE_FIELDS]
    if not keys:
        raise UserError(
            f"{file}: no key column naming the run (e.g. model,batch_size,seed or a run name); "
            f"curve columns: {', '.join(CURVE_FIELDS)}"
        )
    for k in keys:
        if k not in runs.column_names or k in SET_BY_IMPORTER:
            raise UserError(
                f"{file}: column {k!r} is neither a curve column ({', '.join(CURVE_FIELDS)}) "
                "nor a column of the imported results that could name a run"
            )
    index = _run_index(runs, keys)
    if "lr" in cols and "lr" in runs.column_names and any(len(v) > 1 for v in index.values()):
        keys, index = [*keys, "lr"], _run_index(runs, [*keys, "lr"])  # the configured lr
    per_step = {
        r["run_id"]: r["batch_size"] * r["seq_len"]
        for r in runs.select(["run_id", "batch_size", "seq_len"]).to_pylist()
        if r["batch_size"] is not None and r["seq_len"] is not None
    }
    points: dict[str, dict[int, dict[str, Any]]] = {}
    lines: dict[tuple[str, int], int] = {}
    for i, rec in enumerate(frame.to_dict(orient="records")):
        line = i + 2
        key = tuple(_key(str(rec[k]), runs.schema.field(k).type, k, line, file) for k in keys)
        found = index.get(key, [])
        where = ", ".join(f"{k}={v}" for k, v in zip(keys, key, strict=True))
        if len(found) != 1:
            why = "no imported run has" if not found else f"{len(found)} imported runs have"
            raise UserError(f"{file}:{line}: {why} {where}; the key columns must name one run")
        point = {
            c: _convert(str(rec[c]), CURVE_SCHEMA.field(c).type, c, line, file)
            for c in cols
            if c in CURVE_FIELDS
        }
        step = _check_step(point["step"], str(rec["step"]), line, file)
        if (found[0], step) in lines:
            raise UserError(
                f"{file}:{line}: step {step} of the run with {where} is already on line "
                f"{lines[(found[0], step)]}; each step once per run"
            )
        lines[(found[0], step)] = line
        if point.get("tokens") is None and found[0] in per_step:
            point["tokens"] = step * per_step[found[0]]
        points.setdefault(found[0], {})[step] = point
    return {
        rid: pa.Table.from_pylist(
            [{"grid": grid, "run_id": rid, **pts[s]} for s in sorted(pts)], schema=CURVE_SCHEMA
        )
        for rid, pts in points.items()
    }


#: Steps a curve point may have: Arrow's int64, not negative (as a live run's).
MAX_STEP = 2**63 - 1


def _check_step(step: Any, text: str, line: int, file: str) -> int:
    """``step`` if it is an integer in [0, :data:`MAX_STEP`].

    Raises:
        UserError: an empty, negative or too large step, naming file and line.
    """
    if step is None:
        raise UserError(f"{file}:{line}: column step: empty; every curve point needs its step")
    if not 0 <= step <= MAX_STEP:
        raise UserError(
            f"{file}:{line}: column step: {text.strip()!r} is out of range; expected an integer "
            f"in [0, {MAX_STEP}]"
        )
    return int(step)


def _key(text: str, typ: pa.DataType, column: str, line: int, file: str) -> object:
    return text.strip() if column == RUN_NAME else _convert(text, typ, column, line, file)


def _run_index(runs: pa.Table, keys: Sequence[str]) -> dict[tuple[Any, ...], list[str]]:
    """Key values -> the run_ids of the runs with them."""
    index: dict[tuple[Any, ...], list[str]] = {}
    for row in runs.select([*keys, "run_id"]).to_pylist():
        index.setdefault(tuple(row[k] for k in keys), []).append(row["run_id"])
    return index


def _read_csv(path: Path) -> pd.DataFrame:
    """A CSV as text (no NA conversion), column names stripped; refuses a missing or empty one."""
    if not path.is_file():
        raise UserError(f"{path}: no such file")
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, skipinitialspace=True)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
        raise UserError(f"{path}: not a readable CSV ({str(e).splitlines()[0]})") from None
    if frame.empty:
        raise UserError(f"{path}: no rows")
    frame.columns = [c.strip() for c in frame.columns]
    return frame


def import_csv(
    path: str | Path,
    *,
    grid: str,
    root: Path,
    source: str | None = None,
    scale: str = "full",
    extra: Sequence[str] = (),
    curves: str | Path | None = None,
    mapping: Mapping[str, str] | None = None,
) -> Imported:
    """Import a CSV of results into ``<root>/<grid>/runs/`` (and, with ``curves``, a CSV of
    their loss curves into ``<root>/<grid>/curves/``, :func:`curves_tables`). ``mapping``:
    file column -> harness name (``--map``), applied with the W&B names
    (:mod:`harness.store.import_columns`) to both files. A re-import of the same file (by file
    name, grid, source and scale; edited or not) replaces its rows.

    Raises:
        UserError: a missing or empty file, or anything :func:`rows_table` or
            :func:`curves_tables` refuses; nothing is written then.
    """
    path = Path(path)
    paths.check_grid_name(grid, "--grid")
    frame = rename(_read_csv(path), mapping or {}, str(path))
    source = source or f"import:{path.name}"
    table, derived = rows_table(
        frame, grid=grid, source=source, scale=scale, extra=extra, file=str(path)
    )
    tables = {}
    if curves is not None:
        history = rename(_read_csv(Path(curves)), mapping or {}, str(curves))
        tables = curves_tables(history, table, grid=grid, file=str(curves))
    if RUN_NAME in table.column_names:
        table = table.drop_columns([RUN_NAME])
    digest = hashlib.sha256(f"{path.name}|{grid}|{source}|{scale}".encode()).hexdigest()
    out = write_imported(root, grid, table, digest[:12])
    write_imported_curves(root, grid, tables)
    return Imported(
        path=out,
        rows=table.num_rows,
        columns=tuple(frame.columns),
        derived=derived,
        curves=len(tables),
    )
