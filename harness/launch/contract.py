"""The launcher contract: what every backend implements (:class:`Launcher`, and :class:`Queue`
for what it has queued), what it is handed (:class:`ExecutionSpec`) and what it reports.

``submit`` drives every backend the same way: ``plan`` for a dry run; then ``reconcile`` (rows for
runs whose job died without one); then it asks every backend's queue which runs are queued or
running (:func:`queued_anywhere`) *before* it reads the rows, so that a task that finishes in
between has its runs in one set or the other, never in neither; then ``launch`` and, unless the
backend detaches and the user does not ask to wait, ``wait``. For a backend that detaches,
``submit`` also leaves out the runs being trained now (their run lock is held,
:func:`harness.store.status.training_now`); a backend that waits is handed them and waits for
their locks (:mod:`harness.launch.worker.pool`), so that a submit that exits 0 leaves no run
missing. The process that trains a run holds its lock, so that no run is trained twice at once,
and checks under it that the run has no row newer than the one ``submit`` saw (``seen``), so
that no run is trained twice one after the other either. ``harness status`` and ``harness
cancel`` ask every backend's :class:`Queue` (one offered through the ``harness.launchers``
entry point too), never a backend's modules directly. Worker entry points (the code that
runs inside a job) receive the one frozen :class:`ExecutionSpec`, built once from the launcher
profile and the environment.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from harness.core import env
from harness.core.config import RunConfig
from harness.core.errors import UserError
from harness.core.registry import load_object
from harness.launch.profile import LauncherProfile, backend
from harness.launch.registry import LAUNCHERS

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


Seen = Mapping[str, int | None]
"""run_id -> its rows as ``submit`` saw them before deciding to train it
(:func:`~harness.store.rows.row_mark`; None: no row): what a backend checks again, under the run
lock, just before training."""


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

    def launch(
        self, runs: Sequence[RunConfig], spec: ExecutionSpec, seen: Seen | None = None
    ) -> Launched:
        """Hand ``runs`` (of ``spec.grid``, in its manifest) to the backend. ``seen``: each run's
        rows as ``submit`` saw them before deciding to train it
        (:func:`~harness.store.rows.row_mark`); a backend that trains a run whose rows changed
        since (another process or job finished it) trains it twice, so it checks, under the run
        lock, just before training (the local pool and SLURM tasks do)."""
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


# --- what a backend has queued -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class QueueView:
    """A backend's view of one grid's submitted runs, for ``harness status``."""

    backend: str
    """The backend's kind (``slurm``)."""
    counts: Mapping[str, int]
    """The backend's state of each run's latest task (``PENDING``, ``RUNNING``, ...) -> runs."""
    jobs: tuple[str, ...]
    """The backend's ids of the grid's submissions, oldest first."""
    error: str | None = None
    """Why the states could not be read (then ``counts`` is empty)."""

    def line(self) -> str:
        """One line: ``slurm (2 submissions, jobs 80..81): PENDING 10, RUNNING 2``."""
        jobs = self.jobs[0] if len(self.jobs) == 1 else f"{self.jobs[0]}..{self.jobs[-1]}"
        head = f"{self.backend} ({len(self.jobs)} submissions, jobs {jobs})"
        if self.error:
            return f"{head}: job states unavailable: {self.error}"
        return f"{head}: " + ", ".join(f"{k} {v}" for k, v in sorted(self.counts.items()))


@dataclass(frozen=True, slots=True)
class CancelReport:
    """What a backend's :meth:`Queue.cancel` did."""

    grid: str
    """The grid's name."""
    jobs: tuple[str, ...]
    """The backend's ids of the jobs it stopped."""
    cancelled: int
    """Runs recorded as ``cancelled`` (by their job or by the cancel)."""
    still_ending: int
    """Runs whose job had not ended when the cancel stopped waiting (no row written)."""


class Queue(Protocol):
    """What a backend has queued, whatever profile queued it: the backend's
    :attr:`~harness.launch.profile.Backend.queue`. A backend whose runs are children of their
    ``submit`` (``local``) has nothing queued between submissions; a run being trained holds its
    run lock whatever the backend (``submit`` and ``status`` check the locks themselves)."""

    def queued(self, root: Path, grid: str, run_ids: Collection[str]) -> set[str]:
        """The runs among ``run_ids`` that a task of this backend has queued or is running
        (none where this machine cannot see the backend, e.g. results copied to a laptop).

        Raises:
            UserError: the backend is there but cannot answer (launching then could duplicate).
        """
        ...

    def view(self, root: Path, grid: str) -> QueueView | None:
        """The grid's submitted runs by state; None when this backend never queued any."""
        ...

    def cancel(self, root: Path, grid: str, wait_s: float) -> CancelReport | None:
        """Stop the grid's queued and running tasks, waiting up to ``wait_s`` for running ones
        to record their runs as ``cancelled``; None when this backend never queued any.

        Raises:
            UserError: the backend cannot answer or refused.
        """
        ...


def queues() -> dict[str, Queue]:
    """Kind -> queue of every registered backend that has one (those of entry points too)."""
    out: dict[str, Queue] = {}
    for kind in LAUNCHERS.names():
        ref = backend(kind).queue
        if ref is not None:
            out[kind] = load_object(ref)
    return out


def queued_anywhere(root: Path, grid: str, run_ids: Collection[str]) -> set[str]:
    """The runs among ``run_ids`` that any backend has queued or is running.

    Raises:
        UserError: a backend is there but cannot answer.
    """
    found: set[str] = set()
    for queue in queues().values():
        found |= queue.queued(root, grid, run_ids)
    return found
