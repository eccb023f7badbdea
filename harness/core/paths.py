"""Where things live on disk. One function per location, so that no other module builds paths.

Layout under the results root (``results/`` in the working directory by default)::

    <root>/<grid>/manifest.parquet      planned runs (one row per run_id, every config column)
    <root>/<grid>/runs/<run_id>.<version>.parquet  one result row per write, never replaced
                                        (earlier versions wrote ``runs/<run_id>.parquet``)
    <root>/<grid>/curves/<run_id>.<version>.parquet its loss curve, written with that row
    <root>/<grid>/compact/              consolidated rows and curves (``harness compact``):
        runs-<gen>.parquet, curves-<gen>.parquet   one part each (zero-padded numbers)
        covered-<gen>.json                 the per-run files and parts it holds; written last
    <root>/<grid>/compile_cache/        torch.compile kernels shared by the grid's runs
    <root>/<grid>/checkpoints/<run_id>.pt resumable state of an unfinished run
    <root>/<grid>/weights/<run_id>.pt   final weights of a run whose grid keeps them (keep_weights)
    <root>/<grid>/evals/<run_id>.<task>.parquet  its downstream scores on one task (harness eval)
    <root>/<grid>/live/<run_id>.jsonl   curve points of a run being trained, one line each
    <root>/<grid>/bench/<candidate>.yaml  the grid ``harness bench`` derived for one candidate
    <root>/<grid>/submissions/          launcher records (job ids) and logs of runs:
        records/<job id>.json              one per accepted SLURM array (``harness.launch.slurm``)
        slurm/                             submitit's folder: scripts and logs of SLURM tasks
        local/                             logs of the runs the local launcher trains
    <root>/<grid>/locks/<run_id>.lock   held by the process training the run (flock)
    <root>/<grid>/locks/<run_id>.eval.lock  held by the process evaluating its weights
    <root>/<grid>/quarantine/           corrupt files moved aside (same relative paths)
    <root>/<grid>/.verified.json        the files the integrity check read in full, by stamp
    <root>/<grid>/.arrivals             one byte per result row written (when to compact)
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from pathlib import Path

from harness.core import env
from harness.core.errors import UserError

GRID_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
"""A grid name: a letter or digit, then up to 99 letters, digits, ``.``, ``_`` or ``-``. It names
a folder under the results root, so it can neither leave the root (``..``) nor act as a pattern
(``sm*``)."""


def check_grid_name(name: object, where: str) -> str:
    """``name`` if it is a valid grid name (:data:`GRID_NAME`).

    Raises:
        UserError: one line naming ``where``, the name and the rule.
    """
    if isinstance(name, str) and GRID_NAME.fullmatch(name):
        return name
    shown = repr(name) if len(repr(name)) <= 80 else repr(name)[:77] + "..."
    raise UserError(
        f"{where}: grid name {shown} is not valid: use 1 to 100 letters, digits, '.', '_' or "
        "'-', starting with a letter or digit (it names a folder under the results root)"
    )


GLOB_CHARS = frozenset("*?[]{}")
"""Characters DuckDB's file functions read as a pattern (``harness.store.db`` escapes them)."""


def duck_path(path: Path | str) -> str:
    """``path`` as DuckDB's file functions read it literally: each glob character in brackets
    (a results folder ``runs[1]`` is not a pattern matching ``runs1``).

    Raises:
        UserError: the path holds a backslash as well as a glob character (DuckDB's globbing
            splits paths at backslashes, so no escaping reads it).
    """
    text = str(path)
    if not GLOB_CHARS & set(text):
        return text
    if "\\" in text:
        chars = "".join(sorted(GLOB_CHARS))
        raise UserError(
            f"{text}: a path with both '\\' and one of {chars} "
            "cannot be read by DuckDB; rename the folder"
        )
    return "".join(f"[{c}]" if c in GLOB_CHARS else c for c in text)


def results_root(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The results root: ``explicit`` > ``$HARNESS_RESULTS`` > ``./results``.

    Raises:
        UserError: its absolute path holds a backslash as well as a glob character
            (:data:`GLOB_CHARS`): DuckDB's globbing splits paths at backslashes, so no escaping
            reads it; refused before anything is trained or written.
    """
    root = Path(explicit) if explicit else Path(env.RESULTS.get() or "results")
    full = str(root.absolute())
    if "\\" in full and GLOB_CHARS & set(full):
        raise UserError(
            f"results folder {full}: a path with both '\\' and one of "
            f"{''.join(sorted(GLOB_CHARS))} cannot be read by DuckDB; use another folder"
        )
    return root


PER_RUN_FILES = "*.parquet"
"""Glob of the per-run files in :func:`runs_dir` and :func:`curves_dir` (named by run_id and
version, :func:`run_path`; an import's file too)."""

LEGACY_VERSION = ""
"""The version of a per-run file written by an earlier harness, in place (``<run_id>.parquet``):
older than every versioned one."""


def version_name(attempt: int) -> str:
    """The per-run file version of a row of ``attempt``: the zero-padded attempt, so versions
    sort by attempt (a writer creates the file only if no file has the name,
    :mod:`harness.store.rows`)."""
    return f"{attempt:06d}"


def is_per_run_file(name: str) -> bool:
    """Whether a file name in :func:`runs_dir` or :func:`curves_dir` is a per-run file (matches
    :data:`PER_RUN_FILES`; a writer's hidden temporary file never does)."""
    return name.endswith(".parquet") and not name.startswith(".")


def per_run_name(path: Path) -> tuple[str, str]:
    """(run_id, version) of a per-run file's name (:func:`run_path`); the version of a file
    written in place by an earlier harness is :data:`LEGACY_VERSION`."""
    stem = path.name.removesuffix(".parquet")
    run_id, _, version = stem.partition(".")
    return run_id, version


def version_attempt(version: str) -> int | None:
    """The attempt a per-run file's version names; None for :data:`LEGACY_VERSION` (read the
    file's ``attempt`` column)."""
    return int(version) if version.isdigit() else None


GENERATION_KINDS = ("runs", "curves")
"""What a consolidated generation holds: result rows or loss curves."""

_GENERATION = re.compile(r"^(runs|curves)-(\d+)\.parquet$")


def grid_dir(root: Path, grid: str) -> Path:
    """Folder of one grid's results."""
    return root / grid


def bench_grid_path(root: Path, grid: str, candidate: str) -> Path:
    """The grid file ``harness bench`` derives for one candidate under a protocol whose grid is
    ``grid`` (``<root>/<grid>/bench/<candidate>.yaml``; ``candidate`` a file-name-safe slug)."""
    return grid_dir(root, grid) / "bench" / f"{candidate}.yaml"


def manifest_path(root: Path, grid: str) -> Path:
    """The grid's manifest of planned runs."""
    return grid_dir(root, grid) / "manifest.parquet"


def arrivals_path(root: Path, grid: str) -> Path:
    """The grid's count of rows written: one byte appended per row (:mod:`harness.store.auto`
    compares it with the count its newest compaction saw, rather than list ``runs/``)."""
    return grid_dir(root, grid) / ".arrivals"


def runs_dir(root: Path, grid: str) -> Path:
    """Folder of per-run result rows."""
    return grid_dir(root, grid) / "runs"


def _versioned(folder: Path, run_id: str, version: str) -> Path:
    return folder / (f"{run_id}.{version}.parquet" if version else f"{run_id}.parquet")


def run_path(root: Path, grid: str, run_id: str, version: str) -> Path:
    """One version of a run's result row (:func:`version_name`; written once, never replaced);
    :data:`LEGACY_VERSION`: the file an earlier harness wrote in place."""
    return _versioned(runs_dir(root, grid), run_id, version)


def curves_dir(root: Path, grid: str) -> Path:
    """Folder of per-run loss curves."""
    return grid_dir(root, grid) / "curves"


def curve_path(root: Path, grid: str, run_id: str, version: str) -> Path:
    """The loss curve written with the row of the same version (:func:`run_path`)."""
    return _versioned(curves_dir(root, grid), run_id, version)


def compact_dir(root: Path, grid: str) -> Path:
    """Folder of consolidated rows and curves."""
    return grid_dir(root, grid) / "compact"


def generation_glob(kind: str) -> str:
    """Glob, in :func:`compact_dir`, of the consolidated generations of ``kind``
    (:data:`GENERATION_KINDS`)."""
    return f"{kind}-*.parquet"


def generation_path(root: Path, grid: str, kind: str, generation: int) -> Path:
    """One consolidated generation of ``kind`` (zero-padded, so names sort by generation)."""
    return compact_dir(root, grid) / f"{kind}-{generation:06d}.parquet"


def generations(root: Path, grid: str, kind: str) -> list[Path]:
    """The grid's consolidated generations of ``kind``, oldest first (by name)."""
    folder = compact_dir(root, grid)
    return sorted(folder.glob(generation_glob(kind))) if folder.is_dir() else []


def covered_path(root: Path, grid: str, generation: int) -> Path:
    """The list of the per-run files (and older generations) a generation holds, written after
    the generation itself: its presence says the generation is complete
    (:mod:`harness.store.layout`)."""
    return compact_dir(root, grid) / f"covered-{generation:06d}.json"


def generation_of(path: Path) -> tuple[str, int] | None:
    """(kind, generation) of a consolidated file's name; None for any other file."""
    return generation_of_name(path.name)


def generation_of_name(name: str) -> tuple[str, int] | None:
    """:func:`generation_of` of a file name in :func:`compact_dir` (no path made: a writer
    lists the folder at every row)."""
    m = _GENERATION.match(name)
    return (m.group(1), int(m.group(2))) if m else None


def import_path(root: Path, grid: str, digest: str) -> Path:
    """The file of one import's rows (``harness import``), in :func:`runs_dir`."""
    return runs_dir(root, grid) / f"import-{digest}.parquet"


def compile_cache_dir(root: Path, grid: str) -> Path:
    """torch.compile's Inductor/Triton cache, shared by the runs of one grid."""
    return grid_dir(root, grid) / "compile_cache"


def checkpoint_path(root: Path, grid: str, run_id: str) -> Path:
    """One unfinished run's checkpoint."""
    return grid_dir(root, grid) / "checkpoints" / f"{run_id}.pt"


def weights_path(root: Path, grid: str, run_id: str) -> Path:
    """The final weights of a finished run whose grid sets ``keep_weights`` (what
    ``harness eval`` evaluates)."""
    return grid_dir(root, grid) / "weights" / f"{run_id}.pt"


def eval_lock_path(root: Path, grid: str, run_id: str) -> Path:
    """The lock the process evaluating a run's weights holds (never evaluated twice at once)."""
    return locks_dir(root, grid) / f"{run_id}.eval.lock"


def evals_dir(root: Path, grid: str) -> Path:
    """Folder of the downstream scores of a grid's runs (``harness eval``)."""
    return grid_dir(root, grid) / "evals"


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def eval_path(root: Path, grid: str, run_id: str, task: str) -> Path:
    """One run's scores on one downstream task (every metric of it). A task name holding other
    characters than letters, digits, ``.``, ``_`` and ``-`` gets them replaced and a short hash of
    the name appended, so two names never share a file."""
    safe = _UNSAFE.sub("_", task)
    if safe != task or not task:
        safe += "-" + hashlib.sha256(task.encode()).hexdigest()[:8]
    return evals_dir(root, grid) / f"{run_id}.{safe}.parquet"


def progress_path(root: Path, grid: str, run_id: str) -> Path:
    """What an unfinished run has reached (step, loss curve), rewritten at each logged point:
    a run killed where no handler runs (the kernel's OOM killer) keeps it for its row."""
    return grid_dir(root, grid) / "checkpoints" / f"{run_id}.progress.json"


def branch_point_path(root: Path, grid: str, run_id: str) -> Path:
    """A branch's first state: its parent's checkpoint at the branch's decay start
    (:mod:`harness.grid.branches`)."""
    return grid_dir(root, grid) / "checkpoints" / f"{run_id}.branch.pt"


def branch_plan_path(root: Path, grid: str) -> Path:
    """Which runs of the grid branch from which (written by ``submit``, read by the runs)."""
    return grid_dir(root, grid) / "branches.json"


def live_dir(root: Path, grid: str) -> Path:
    """Folder of the live curves of runs being trained (:mod:`harness.store.live`)."""
    return grid_dir(root, grid) / "live"


def live_path(root: Path, grid: str, run_id: str) -> Path:
    """A run's live curve: one JSON line appended per logged point while it trains; removed once
    its row is written."""
    return live_dir(root, grid) / f"{run_id}.jsonl"


def submissions_dir(root: Path, grid: str) -> Path:
    """Launcher records and logs."""
    return grid_dir(root, grid) / "submissions"


def submission_records_dir(root: Path, grid: str) -> Path:
    """Folder of a grid's SLURM submission records, one JSON file per accepted array."""
    return submissions_dir(root, grid) / "records"


def slurm_logs_dir(root: Path, grid: str) -> Path:
    """submitit's folder of a grid's SLURM tasks: their scripts, pickles and logs."""
    return submissions_dir(root, grid) / "slurm"


def local_logs_dir(root: Path, grid: str) -> Path:
    """Folder of the logs of the runs the local launcher trains."""
    return submissions_dir(root, grid) / "local"


def locks_dir(root: Path, grid: str) -> Path:
    """Folder of a grid's run and evaluation locks."""
    return grid_dir(root, grid) / "locks"


def run_lock_path(root: Path, grid: str, run_id: str) -> Path:
    """The lock the process training a run holds (a run is never trained twice at once)."""
    return locks_dir(root, grid) / run_lock_name(run_id)


def run_lock_name(run_id: str) -> str:
    """The file name of a run's lock in :func:`locks_dir` (:func:`run_lock_path`)."""
    return f"{run_id}.lock"


def lock_run_id(path: Path) -> str | None:
    """The run_id of a lock file of :func:`locks_dir` (a run's or an evaluation's); None for
    any other file."""
    if not path.name.endswith(".lock") or path.name.startswith("."):
        return None
    return path.name.split(".", 1)[0]


def local_log_path(root: Path, grid: str, run_id: str) -> Path:
    """The log of a run the local launcher trains (:func:`local_logs_dir`)."""
    return local_logs_dir(root, grid) / f"{run_id}.log"


def quarantine_dir(root: Path, grid: str) -> Path:
    """Where corrupt files of a grid are moved aside."""
    return grid_dir(root, grid) / "quarantine"


def verified_path(root: Path, grid: str) -> Path:
    """The files of a grid found whole by ``harness.store.integrity``, by stamp."""
    return grid_dir(root, grid) / ".verified.json"


def scale_name_path(root: Path, grid: str) -> Path:
    """How the program that planned a grid names its scale where the runs' ``scale`` field
    would mislead (``harness bench --scale local`` plans its grid as written, ``full``): one
    line, ``local scale``; ``harness status`` shows it beside the field."""
    return grid_dir(root, grid) / ".scale_name"


def written_path(root: Path, grid: str) -> Path:
    """The digests of the per-run files of a grid as their writers wrote them (one line per
    file appended: ``harness.store.integrity.record_written``)."""
    return grid_dir(root, grid) / ".written"


def lost_curves_path(root: Path, grid: str, name: str, n: int = 0) -> Path:
    """Where the rows of a consolidated generation (file stem ``name``) whose curves were lost
    are moved aside; ``n`` > 0 tells apart later ones of the same name."""
    suffix = f".{n}" if n else ""
    return quarantine_dir(root, grid) / "compact" / f"{name}.no-curves{suffix}.parquet"


def figures_dir(root: Path, grid: str) -> Path:
    """Generated figures."""
    return grid_dir(root, grid) / "figures"


def spill_dirs() -> list[Path]:
    """Where results the results folder refused are kept, first choice first: ``$HARNESS_SPILL``,
    the cache folder's ``spill`` (:func:`harness.core.env.cache_dir`) and
    ``<temp>/harness-spill-<uid>`` (:mod:`harness.store.spill`)."""
    spill = env.SPILL.get()
    found = [Path(spill)] if spill else []
    found.append(env.cache_dir() / "spill")
    found.append(Path(tempfile.gettempdir()) / f"harness-spill-{os.getuid()}")
    return found


def family_path(root: Path, name: str) -> Path:
    """The claims of the correction family ``name`` (``harness analyze ... --family NAME``):
    ``<root>/_families/<name>.json`` (no grid name starts with ``_``)."""
    return root / "_families" / f"{check_grid_name(name, '--family')}.json"


def grids_in(root: Path) -> list[str]:
    """Names of the grids that have a manifest or results under ``root``."""
    if not root.is_dir():
        return []
    return sorted(
        p.name
        for p in root.iterdir()
        if p.is_dir() and (manifest_path(root, p.name).exists() or runs_dir(root, p.name).is_dir())
    )
