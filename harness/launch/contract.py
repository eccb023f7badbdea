"""The launcher contract: what every backend implements (:class:`Launcher`), what it is handed
(:class:`ExecutionSpec`) and what it reports.

``submit`` drives every backend the same way: ``plan`` for a dry run; then ``reconcile`` (rows for
runs whose job died without one), ``exclude_queued`` (runs already queued or training
elsewhere), ``launch`` and, unless the backend detaches and the user does not ask to wait,
``wait``. For a backend that detaches, ``submit`` also leaves out the runs being trained now
(their run lock is held, :func:`harness.store.status.training_now`); a backend that waits is
handed them and waits for their locks (:mod:`harness.launch.worker.pool`), so that a submit
that exits 0 leaves no run missing. The process that trains a run holds its lock, so that no
run is trained twice at once. Worker entry points (the code that
runs inside a job) receive the one frozen :class:`ExecutionSpec`, built once from the launcher
profile and the environment.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from harness.core import env
from harness.core.config import RunConfig
from harness.core.errors import UserError
from harness.core.registry import load_object
from harness.launch.profile import LauncherProfile, backend

CHECKPOINT_ENV = env.CHECKPOINT_EVERY_S.name
"""Environment variable overriding the profile's ``checkpoint_every_s`` for one submission."""
KEEP_ENV = env.KEEP_CHECKPOINTS.name
"""Environment variable: ``1`` (or ``true``) keeps runs' checkpoints after their rows, ``0``
removes them, whatever the profile says."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ExecutionSpec:
    """How launched runs of one grid execute, whatever the backend."""

    results_root: Path
    """The results root (absolute: jobs may start elsewhere)."""
    grid: str
    """The grid's name; its manifest holds the runs' configs."""
    data_root: Path
    """Where registered datasets are prepared (absolute)."""
    checkpoint_every_s: float
    """Seconds between a run's checkpoints (the work a preemption can lose)."""
    keep_checkpoints: bool
    """Keep a run's checkpoint after its row is written."""
    threads: int | None = None
    """torch CPU threads of each run process (None: torch's default); set by the backend."""

    @classmethod
    def build(
        cls,
        profile: LauncherProfile[Any],
        results_root: Path,
        grid: str,
        data_root: Path,
        environ: Mapping[str, str] = os.environ,
    ) -> ExecutionSpec:
        """The spec of a submission: the profile's values, overridden by ``HARNESS_*`` variables.

        Raises:
            UserError: an override that is not a valid value.
        """
        every = profile.checkpoint_every_s
        given = env.CHECKPOINT_EVERY_S.get(environ)
        if given:
            try:
                every = float(given)
            except ValueError:
                every = -1.0
            if not every > 0:
                raise UserError(f"{CHECKPOINT_ENV}={given!r}: expected seconds > 0")
        keep = profile.keep_checkpoints
        given = env.KEEP_CHECKPOINTS.get(environ)
        if given:
            flag = given.lower()
            if flag not in ("1", "true", "0", "false"):
                raise UserError(f"{KEEP_ENV}={given!r}: expected 1, true, 0 or false")
            keep = flag in ("1", "true")
        return cls(
            results_root=results_root.resolve(),
            grid=grid,
            data_root=data_root.resolve(),
            checkpoint_every_s=every,
            keep_checkpoints=keep,
        )

    def with_threads(self, threads: int | None) -> ExecutionSpec:
        """This spec with ``threads`` torch threads per run process."""
        return dataclasses.replace(self, threads=threads)


@dataclass(frozen=True, slots=True)
class Launched:
    """What :meth:`Launcher.launch` handed to its backend."""

    runs: int
    """Runs submitted (or started)."""
    handle: Any
    """The backend's own record of them, for :meth:`Launcher.wait`."""


@dataclass(frozen=True, slots=True)
class LaunchReport:
    """What a launch came to."""

    launched: int
    """Runs handed to the backend (those submitted while waiting included)."""
    statuses: dict[str, str]
    """run_id -> status of runs that finished while the launcher waited."""


class Launcher(Protocol):
    """A backend that runs planned runs somewhere (this machine, a SLURM cluster)."""

    profile: LauncherProfile[Any]
    """The profile it was made from (its ``settings``: the backend's own section)."""
    detaches: bool
    """Whether launched runs go on without this process (SLURM): then waiting is optional.
    A backend that does not detach runs them in this process's children and must wait."""

    def plan(self, runs: Sequence[RunConfig]) -> str:
        """What a launch of ``runs`` would do, for a dry run (queries nothing slow)."""
        ...

    def reconcile(self, root: Path, grid: str) -> dict[str, str]:
        """Write rows for runs whose job ended without one; run_id -> status written."""
        ...

    def exclude_queued(self, root: Path, grid: str, runs: Sequence[RunConfig]) -> list[RunConfig]:
        """``runs`` minus those queued or training already (never launched twice)."""
        ...

    def launch(
        self,
        runs: Sequence[RunConfig],
        spec: ExecutionSpec,
        seen: Mapping[str, int | None] | None = None,
    ) -> Launched:
        """Hand ``runs`` (of ``spec.grid``, in its manifest) to the backend. ``seen``: each run's
        rows as ``submit`` saw them before deciding to train it
        (:func:`~harness.store.rows.row_mark`); a backend that trains a run
        whose row changed since (another process finished it) trains it twice, so it should
        check, under the run lock (the local pool does; SLURM tasks start later, from
        their own view)."""
        ...

    def wait(
        self, launched: Launched, spec: ExecutionSpec, *, show_progress: bool = True
    ) -> LaunchReport:
        """Block until every launched run has its row (Ctrl-C stops waiting)."""
        ...


def launcher_for(profile: LauncherProfile[Any]) -> Launcher:
    """The launcher of ``profile.kind``, made from the profile."""
    made: Launcher = load_object(backend(profile.kind).launcher)(profile)
    return made
