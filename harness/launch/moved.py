"""Results written before a run recorded its grid's folder: map their ids to today's.

Such a result (harness up to commit f51ed4a) hashed an optimizer or model named by file by its
absolute path, so its run_id names the folder the project was in then. The manifest holds its
config; the folder its grid was in is recovered from today's grid, assuming the project moved as
a whole: the file's path then and now share a tail (``proj/opts/my_opt.py``), and the grid's
folder sits where it sits now relative to that tail. A config that, with that folder, hashes to
one of today's runs is that run.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Mapping
from pathlib import PurePath

from harness.core.config import RunConfig
from harness.core.fields import hashed_values
from harness.core.registry import is_file_reference


def _files(run: RunConfig) -> set[PurePath]:
    """The files ``run`` names (absolute paths)."""
    values = hashed_values(run).values()
    return {PurePath(v.rpartition(":")[0]) for v in values if is_file_reference(v)}


def _old_folder(then: PurePath, now: PurePath, grid_dir: str) -> str:
    """The grid's folder when the file at ``now`` (today's grid in ``grid_dir``) was at
    ``then``."""
    tail = 0
    for a, b in zip(reversed(then.parts), reversed(now.parts), strict=False):
        if a != b:
            break
        tail += 1
    old_root = then.parts[: len(then.parts) - tail]
    new_root = now.parts[: len(now.parts) - tail]
    return os.path.normpath(PurePath(*old_root, os.path.relpath(grid_dir, PurePath(*new_root))))


def moved_ids(planned: Mapping[str, RunConfig], today: Iterable[RunConfig]) -> dict[str, str]:
    """Old run_id -> today's, for the manifest's configs ``planned`` (by the id they were
    written under) that name files by absolute path without their grid's folder and are, with
    that folder recovered, runs of ``today``."""
    runs = list(today)
    ids = {r.run_id for r in runs}
    now = {(f, r.grid_dir) for r in runs if r.grid_dir is not None for f in _files(r)}
    out = {}
    for old, run in planned.items():
        if old in ids or run.grid_dir is not None:
            continue
        folders = {
            _old_folder(then, f, d) for then in _files(run) for f, d in now if f.name == then.name
        }
        for folder in sorted(folders):
            new = dataclasses.replace(run, grid_dir=folder).run_id
            if new in ids:
                out[old] = new
                break
    return out
