"""Result rows and loss curves on disk: one Parquet file per run, written atomically.

A row holds the run's complete config (every run field, :mod:`harness.core.catalogue`), its outcome
(:class:`~harness.core.result.RunResult`: status, counts and every catalogued metric) and
provenance (:mod:`harness.store.schema` has the columns). Writers never share a file: each run
writes its own row, so thousands of jobs can finish at once on a shared filesystem. Each write
makes a new file, named by the run and its attempt (:func:`harness.core.paths.run_path`),
through a temporary name and a hard link that fails where the name exists
(:func:`create_table`; the writer then takes the next attempt). No file is ever replaced in
place, so a reader sees every row whole, and a good row is never overwritten: a later row of
the run sits beside it, and the ``runs`` view shows the newest. :mod:`harness.store.layout`
says which files a reader reads.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from harness.core import paths
from harness.core.catalogue import OWN_HYPERPARAMETERS, WORKLOAD_PARAMETERS, flat
from harness.core.config import RunConfig
from harness.core.files import atomic_write, os_error_in, temp_name
from harness.core.provenance import ATTEMPT, ATTEMPT_ABSENT
from harness.core.result import CURVE_COLUMNS, RunResult
from harness.core.stamped import StampedCache
from harness.metrics.catalogue import METRICS
from harness.store import written
from harness.store.layout import current_generation, loose
from harness.store.schema import (
    OUTCOME_COLUMNS,
    PROVENANCE_COLUMNS,
    curve_schema,
    row_schema,
)
from harness.workloads.registry import get_workload


def make_row(run: RunConfig, result: RunResult, provenance: Mapping[str, Any]) -> dict[str, Any]:
    """The flat result row of a run (a dict keyed by column name).

    Raises:
        ValueError: the result carries a metric :mod:`harness.metrics.catalogue` does not declare.
    """
    unknown = sorted(set(result.metrics) - set(METRICS))
    if unknown:
        raise ValueError(f"undeclared metrics {unknown}: declare them in harness.metrics.catalogue")
    row: dict[str, Any] = {"run_id": run.run_id, **flat(run)}
    params = workload_parameters(run)
    own = (n for n, _ in run.optim.hyperparameters.items if n not in params)
    row[OWN_HYPERPARAMETERS] = ",".join(own) or None
    row[WORKLOAD_PARAMETERS] = ",".join(params) or None
    for k in OUTCOME_COLUMNS:
        row[k] = getattr(result, k)
    for k in METRICS:
        v = result.metrics.get(k)
        row[k] = None if v is None else float(v)
    for k in PROVENANCE_COLUMNS:
        row[k] = provenance.get(k)
    row["device"] = result.device or row["device"]  # where the run computed
    if row["created_at"] is None:
        row["created_at"] = dt.datetime.now(dt.UTC)
    return row


def workload_parameters(run: RunConfig) -> tuple[str, ...]:
    """The columns of ``run`` that are its workload's parameters (none for the GPT's runs)."""
    if run.arch.workload is None:
        return ()
    return get_workload(run.arch.workload).names


def atomic_write_table(table: pa.Table, path: Path) -> None:
    """Write ``table`` to ``path`` through a temporary file in the same folder and a rename,
    with page checksums (:mod:`harness.store.integrity` verifies them)."""
    atomic_write(path, lambda fh: pq.write_table(table, fh, write_page_checksum=True))


def write_result(
    root: Path, run: RunConfig, result: RunResult, provenance: Mapping[str, Any]
) -> Path:
    """Write a run's loss curve, then its row (the row last: its presence means 'done').

    The row's attempt is ``provenance[ATTEMPT]``, else :func:`next_attempt`.

    Returns:
        The path of the row file, ``<root>/<grid>/runs/<run_id>.<version>.parquet`` (a new
        file: none is replaced).
    """
    attempt = provenance.get(ATTEMPT)
    attempt = next_attempt(root, run.grid, run.run_id) if attempt is None else int(attempt)
    curve = curve_table(run, result.curve)
    curve_file = paths.curve_path(root, run.grid, run.run_id, _v(attempt))
    while (curve_digest := create_table(curve, curve_file)) is None:
        attempt += 1  # another writer took this attempt (a recorder racing a trainer): the next
        curve_file = paths.curve_path(root, run.grid, run.run_id, _v(attempt))
    row = make_row(run, result, {**provenance, ATTEMPT: attempt})
    table = pa.Table.from_pylist([row], schema=row_schema([run]))
    path = paths.run_path(root, run.grid, run.run_id, _v(attempt))
    row_digest = create_table(table, path)
    if row_digest is None:  # its curve was ours, so its row cannot be another's
        raise FileExistsError(errno.EEXIST, "a row of this attempt exists already", str(path))
    # the first reader compares the bytes with these, no decode
    written.record(root, run.grid, {curve_file: curve_digest, path: row_digest})
    return path


_NO_LINKS = (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS)
"""What ``link`` fails with on a file system without hard links (some FUSE and SMB mounts)."""


def _link(tmp: Path, path: Path) -> None:
    """Give ``tmp`` the name ``path`` unless a file has it (FileExistsError). Where the file
    system has no hard links, a rename after a look (two writers of one attempt at the same
    instant could then both succeed, the later one's file winning)."""
    try:
        os.link(tmp, path)
    except OSError as e:
        if e.errno not in _NO_LINKS:
            raise
        if path.exists():
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(path)) from None
        os.replace(tmp, path)


def _v(attempt: int) -> str:
    return paths.version_name(attempt)


def create_table(table: pa.Table, path: Path) -> written.FileDigest | None:
    """Write ``table`` to ``path`` only if no file has that name: through a temporary file in
    the same folder (fsynced) and a hard link, which fails where the name exists (never
    replacing a file a reader may be reading). Returns the size and SHA-256 of the bytes
    written (hashed in memory before they are written: the file is not read back), None when
    a file had the name.

    Raises:
        OSError: the write failed (with ``path`` as its file name, as
            :func:`~harness.core.files.atomic_write` reports it), or something not a file has
            the name (a folder).
    """
    tmp = temp_name(path)
    sink = pa.BufferOutputStream()  # a run's row or curve: kilobytes
    pq.write_table(table, sink, write_page_checksum=True)
    data = sink.getvalue().to_pybytes()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        _link(tmp, path)
    except FileExistsError:
        if path.is_file() and not path.is_symlink():
            return None
        raise OSError(errno.EEXIST, "not a file where a result file goes", str(path)) from None
    except Exception as exc:
        cause = os_error_in(exc)  # as atomic_write reports it: the path, and the errno's reason
        if cause is None or cause.errno is None:
            raise
        raise OSError(cause.errno, os.strerror(cause.errno), str(path)) from exc
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
    return written.digest(data)


def row_files(root: Path, grid: str, run_id: str) -> list[Path]:
    """The per-run row files of ``run_id`` (every version, oldest first); a consolidated
    generation may hold more of its rows."""
    return _versions(paths.runs_dir(root, grid), run_id)


def newest_row_file(root: Path, grid: str, run_id: str) -> Path | None:
    """The newest per-run row file of ``run_id`` (None: none; a compaction may hold its rows)."""
    files = row_files(root, grid, run_id)
    return files[-1] if files else None


def newest_curve_file(root: Path, grid: str, run_id: str) -> Path | None:
    """The newest per-run curve file of ``run_id`` (None: none)."""
    files = _versions(paths.curves_dir(root, grid), run_id)
    return files[-1] if files else None


def _versions(folder: Path, run_id: str) -> list[Path]:
    prefix = run_id + "."
    found = [p for p in loose(folder) if p.name.startswith(prefix)]
    return sorted(found, key=lambda p: paths.per_run_name(p)[1])


def write_imported(root: Path, grid: str, table: pa.Table, key: str) -> Path:
    """Write the rows of one import (``harness import``: published results, no curves) into
    ``grid``'s runs, replacing those of an earlier import with the same ``key``.

    Args:
        root: the results root.
        grid: the grid the rows belong to.
        table: the rows (:func:`~harness.store.schema.row_schema` columns).
        key: what tells imports apart (a digest of the file and its options).

    Returns:
        The file holding the rows (:func:`harness.core.paths.import_path`).
    """
    path = paths.import_path(root, grid, key)
    atomic_write_table(table, path)
    return path


def write_imported_curves(root: Path, grid: str, curves: Mapping[str, pa.Table]) -> list[Path]:
    """Write imported loss curves (``harness import --curves``), one file per run as a trained
    run's (:func:`harness.core.paths.curve_path`), replacing an earlier import's.

    Args:
        root: the results root.
        grid: the grid the runs belong to.
        curves: run_id -> its points (:data:`~harness.store.schema.CURVE_SCHEMA` columns).

    Returns:
        The files written.
    """
    out = []
    for run_id, table in curves.items():
        path = paths.curve_path(root, grid, run_id, paths.LEGACY_VERSION)  # replaced by a re-import
        atomic_write_table(table, path)
        out.append(path)
    return out


def curve_table(run: RunConfig, points: Sequence[Mapping[str, Any]]) -> pa.Table:
    """Loss-curve points as an Arrow table with ``grid`` and ``run_id`` columns, then a column
    per tracked metric (NULL at the points without an evaluation)."""
    names = (*CURVE_COLUMNS, *run.execution.tracked)
    cols: dict[str, list[Any]] = {c: [p.get(c) for p in points] for c in names}
    cols = {"grid": [run.grid] * len(points), "run_id": [run.run_id] * len(points), **cols}
    return pa.table(cols, schema=curve_schema(run))


def read_row(path: Path) -> dict[str, Any]:
    """Read one result row back as a dict."""
    row: dict[str, Any] = pq.read_table(path).to_pylist()[0]
    return row


def next_attempt(root: Path, grid: str, run_id: str) -> int:
    """The attempt number of ``run_id``'s next row: one more than :func:`row_mark`, 1 for its
    first.

    The caller holds the run's lock (the process training it), so no other row of the run is
    written meanwhile. An unreadable (corrupt) file counts as holding no row.
    """
    found = row_mark(root, grid, run_id)
    return (ATTEMPT_ABSENT if found is None else found) + 1


RowMark = int
"""The highest attempt among a run's rows (:func:`row_mark`): every new row of a run raises it,
and a compaction leaves it as it was."""


def row_mark(root: Path, grid: str, run_id: str) -> RowMark | None:
    """The highest attempt among ``run_id``'s rows (per-run files, whose names carry it, and
    consolidated ones; a row without one counts as
    :data:`~harness.core.provenance.ATTEMPT_ABSENT`); None when it has no row. A file a
    compaction removes while it is read is read again from the generation that holds it.

    What it costs does not grow with the grid: the generation's parts are looked up in their
    index (:func:`part_marks`: read once per process), and the run's own per-run files are
    found by name, never by listing ``runs/`` (:func:`_own_marks`)."""
    for _ in range(3):
        try:
            return _mark(root, grid, run_id)
        except FileNotFoundError:
            continue  # consolidated meanwhile: the generation that holds it is listed next time
    return _mark(root, grid, run_id)


def _mark(root: Path, grid: str, run_id: str) -> RowMark | None:
    marks: dict[str, RowMark] = {}
    gen = current_generation(root, grid)
    for part in gen.runs if gen is not None else ():
        found = part_marks(part).get(run_id)
        if found is not None:
            _add(marks, run_id, found)
    _own_marks(marks, root, grid, run_id, marks.get(run_id))
    return marks.get(run_id)


PARTS_CACHED = 64
"""Indexes kept (a generation has about 20 parts; each compaction makes a new one)."""

_PART_MARKS: StampedCache[dict[str, RowMark]] = StampedCache(PARTS_CACHED)
"""The index of each consolidated row file this process read (:func:`part_marks`)."""


def part_marks(path: Path) -> dict[str, RowMark]:
    """run_id -> :func:`row_mark` of the rows of one consolidated row file (a generation's
    part): read once per process and kept while the file is unchanged (a part is written once;
    the integrity check may rewrite one, which changes its stamp), so a process that writes row
    after row (a run process) looks each run up in memory. An unreadable file holds none.

    Raises:
        FileNotFoundError: the file is gone (a compaction removed it).
    """
    st = path.stat()
    stamp = (st.st_mtime_ns, st.st_size)
    cached = _PART_MARKS.get(path, stamp)
    if cached is not None:
        return cached
    marks: dict[str, RowMark] = {}
    _read_marks(marks, (path,), None)
    return _PART_MARKS.put(path, stamp, marks)


PROBE_GAP = 2
"""Attempts in a row with neither a row nor a curve file after which :func:`_own_marks` stops
looking for a run's per-run files: a writer creates an attempt's curve, then its row, and takes
the next attempt only where the curve exists, so attempts leave a gap only where a curve was
consolidated and removed meanwhile (one attempt)."""


def _own_marks(
    marks: dict[str, RowMark], root: Path, grid: str, run_id: str, above: RowMark | None
) -> None:
    """Add the attempts of ``run_id``'s per-run row files, found by name: its file as an
    earlier harness named it (its rows read), then each attempt above ``above`` (the highest
    the generation holds: a row of a higher attempt is in no generation, so it is on disk)."""
    legacy = paths.run_path(root, grid, run_id, paths.LEGACY_VERSION)
    if legacy.exists():
        _read_marks(marks, (legacy,), run_id)
    attempt = (ATTEMPT_ABSENT if above is None else above) + 1
    misses = 0
    while misses < PROBE_GAP:
        version = _v(attempt)
        if paths.run_path(root, grid, run_id, version).exists():
            marks[run_id] = max(attempt, marks.get(run_id, attempt))
            misses = 0
        elif paths.curve_path(root, grid, run_id, version).exists():
            misses = 0  # a curve whose row was never written: the next attempt may have one
        else:
            misses += 1
        attempt += 1


def row_unchanged(root: Path, grid: str, run_id: str, mark: RowMark | None) -> bool:
    """Whether ``run_id``'s rows are as ``mark`` (:func:`row_mark`) saw them: nobody wrote a
    row of the run since (the ``still_needed`` of
    :func:`~harness.launch.worker.job.run_job`)."""
    return row_mark(root, grid, run_id) == mark


def row_marks(root: Path, grid: str) -> dict[str, RowMark]:
    """run_id -> :func:`row_mark` of every run of ``grid`` with a row, in one pass: names of
    the per-run files, then the ``run_id`` and ``attempt`` columns of the generation's parts
    and of the files an earlier harness wrote."""
    for _ in range(3):
        try:
            return _marks(root, grid)
        except FileNotFoundError:
            continue  # consolidated meanwhile: the generation that holds it is listed next time
    return _marks(root, grid)


def _marks(root: Path, grid: str) -> dict[str, RowMark]:
    marks: dict[str, RowMark] = {}
    to_read = []
    for p in loose(paths.runs_dir(root, grid)):
        rid, version = paths.per_run_name(p)
        attempt = paths.version_attempt(version)
        if attempt is None:
            to_read.append(p)  # an earlier harness's file (or an import's): read its rows
        else:
            _add(marks, rid, attempt)
    gen = current_generation(root, grid)
    _read_marks(marks, [*to_read, *(gen.runs if gen is not None else ())], None)
    return marks


def _add(marks: dict[str, RowMark], run_id: str, attempt: int | None) -> None:
    a = ATTEMPT_ABSENT if attempt is None else attempt
    marks[run_id] = max(a, marks.get(run_id, a))


def _read_marks(marks: dict[str, RowMark], files: Sequence[Path], run_id: str | None) -> None:
    """Add the attempts of the rows in ``files`` (of ``run_id`` only, when given: the row groups
    whose run_id statistics may hold it). FileNotFoundError: a file vanished (compacted)."""
    for path in files:
        try:
            names = pq.read_schema(path).names
            columns = ["run_id", *([ATTEMPT] if ATTEMPT in names else [])]
            if run_id:
                where = [("run_id", "=", run_id)]
                table = pq.read_table(path, columns=columns, filters=where)
            else:  # not through pyarrow.dataset, which imports pandas (0.8 s of a re-submit)
                with pq.ParquetFile(path) as fh:
                    table = fh.read(columns=columns)
        except FileNotFoundError:
            raise
        except (OSError, pa.ArrowException):
            continue  # corrupt: moved aside by the next reader (harness.store.integrity)
        ids = table.column("run_id").to_pylist()
        attempts = table.column(ATTEMPT).to_pylist() if ATTEMPT in columns else [None] * len(ids)
        for rid, a in zip(ids, attempts, strict=True):
            _add(marks, rid, a)


def newest_rows(
    root: Path, grid: str, run_ids: Sequence[str], columns: Sequence[str]
) -> dict[str, dict[str, Any]]:
    """``columns`` of the newest row (by attempt, then time) of each of ``run_ids`` that has one,
    read from those runs' own per-run files and, filtered by run_id, the consolidated generations:
    never from other runs' files, so what a task of a few runs reads does not grow with its
    grid. A column a file lacks is None; an unreadable file counts as holding no row; a file a
    compaction removes while it is read is read again from the generation that replaced it."""
    wanted = list(dict.fromkeys([ATTEMPT, "created_at", *columns]))
    while True:
        found = _rows_of(root, grid, run_ids, wanted)
        if found is not None:
            break
    newest: dict[str, dict[str, Any]] = {}
    for row in found:
        old = newest.get(row["run_id"])
        if old is None or _order(row) >= _order(old):
            newest[row["run_id"]] = row
    return {r: {c: row.get(c) for c in columns} for r, row in newest.items()}


def _order(row: Mapping[str, Any]) -> tuple[int, float]:
    """Where a row sorts among its run's rows (:data:`~harness.store.schema.NEWEST_KEY`)."""
    attempt = row.get(ATTEMPT)
    created = row.get("created_at")
    return (
        ATTEMPT_ABSENT if attempt is None else attempt,
        created.timestamp() if created is not None else 0.0,
    )


def _rows_of(
    root: Path, grid: str, run_ids: Sequence[str], wanted: Sequence[str]
) -> list[dict[str, Any]] | None:
    """Every row of ``run_ids`` (``wanted`` columns and run_id), or None when a file vanished."""
    wanted_ids = set(run_ids)
    own = [p for p in loose(paths.runs_dir(root, grid)) if paths.per_run_name(p)[0] in wanted_ids]
    gen = current_generation(root, grid)
    out: list[dict[str, Any]] = []
    for path in [*own, *(gen.runs if gen is not None else ())]:
        try:
            names = set(pq.read_schema(path).names)
            cols = ["run_id", *(c for c in wanted if c in names and c != "run_id")]
            table = pq.read_table(path, columns=cols, filters=[("run_id", "in", list(run_ids))])
        except FileNotFoundError:
            return None
        except (OSError, pa.ArrowException):
            continue  # corrupt: moved aside by the next reader (harness.store.integrity)
        out += table.to_pylist()
    return out
