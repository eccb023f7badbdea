"""Launcher profiles: ``launchers/<name>.yaml``, validated like grids.

A profile says where runs execute. ``kind`` selects the backend (:data:`harness.launch.registry
.LAUNCHERS`: ``local``, ``slurm``, or one an installed package offers under the entry-point
group ``harness.launchers``). Every kind reads the keys of :class:`LauncherProfile`
(``checkpoint_every_s``, ``keep_checkpoints``) and the keys of its own section: the fields of the
frozen dataclass its :class:`Backend` declares (as submitit declares its parameters per
executor), each documented where it is declared. A key of no section is a one-line error naming
the kind's valid keys; a value of the wrong type is a one-line error naming the type.

Profiles are looked up in ``$HARNESS_LAUNCHERS``, then ``./launchers``, then the ``launchers/``
folder shipped next to the package.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

import yaml

from harness.core import env
from harness.core.errors import UserError, unknown_choice
from harness.core.registry import load_object
from harness.grid.branches import check_mode
from harness.launch.registry import LAUNCHERS

S = TypeVar("S")


@dataclass(frozen=True, slots=True)
class Backend:
    """A launcher backend, as the registry (or an entry point ``harness.launchers``) offers it."""

    settings: type[Any]
    """Its profile section: a frozen dataclass whose fields are the profile keys it reads
    (documented there); ``__post_init__`` may raise ``ValueError`` for values that do not fit
    together (its message becomes the one-line error)."""
    launcher: str
    """``module:Class`` of its :class:`~harness.launch.contract.Launcher`, built as
    ``Class(profile)``; imported only when runs are planned or launched."""
    evaluator: str | None = None
    """``module:function`` running downstream evaluations on this backend (``harness eval``):
    ``run(profile, spec, jobs, wait) -> int | None`` (the pairs evaluated; None: queued) with
    an :class:`~harness.launch.evals.EvalSpec` and :class:`~harness.launch.evals.EvalJob` values,
    each job calling :func:`~harness.launch.evals.evaluate_run`; None: this backend runs none."""
    queue: str | None = None
    """``module:attribute`` of its :class:`~harness.launch.contract.Queue` (what it has queued or
    running, and cancelling it), asked by every ``submit``, ``status`` and ``cancel`` whatever
    the launcher; None: this backend queues nothing between submissions."""


@dataclass(frozen=True, kw_only=True, slots=True)
class LauncherProfile(Generic[S]):
    """Where and how runs execute: the keys every kind reads, and its backend's section."""

    name: str
    """The profile's name (its file name without ``.yaml``)."""
    kind: str
    """The backend (``local``: processes on this machine, owned by ``submit``; ``slurm``: job
    arrays)."""
    checkpoint_every_s: float = 600.0
    """Seconds between a run's checkpoints (the work a preemption can lose)."""
    keep_checkpoints: bool = False
    """Keep a run's checkpoint after its row is written (default: removed)."""
    branch: str = "auto"
    """``auto``: the budgets of a wsd grid branch from one stable phase; ``off``: every run
    trains alone (:mod:`harness.grid.branches`; a grid's own ``branch:`` wins)."""
    settings: S
    """The backend's own section (its :attr:`Backend.settings` dataclass)."""

    def __hash__(self) -> int:
        return hash(self.name)


COMMON = ("kind", "checkpoint_every_s", "keep_checkpoints", "branch")
"""Keys every kind reads (:class:`LauncherProfile`)."""


def backend(kind: str, where: str = "") -> Backend:
    """The backend of ``kind``.

    Raises:
        UserError: an unknown kind (lists the known ones), or an entry that is not a Backend.
    """
    if kind not in LAUNCHERS:
        raise unknown_choice("launcher kind", kind, LAUNCHERS, where=where)
    found = load_object(LAUNCHERS[kind])
    if not isinstance(found, Backend):
        raise UserError(f"launcher kind {kind!r}: {LAUNCHERS[kind]} is not a profile Backend")
    return found


def search_path() -> list[Path]:
    """Folders searched for profiles, in order."""
    out = []
    launchers = env.LAUNCHERS.get()
    if launchers:
        out.append(Path(launchers))
    out.append(Path("launchers"))
    out.append(Path(__file__).resolve().parents[2] / "launchers")
    return out


def _files() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for d in search_path():
        if d.is_dir():
            for p in sorted(d.glob("*.yaml")):
                found.setdefault(p.stem, p)
    return found


def profile_names() -> list[str]:
    """Names of every profile on the search path."""
    return sorted(_files())


def load_profile(name: str) -> LauncherProfile[Any]:
    """Read and validate profile ``name``.

    Raises:
        UserError: unknown name (lists the known ones), unknown kind or key, wrong type, a value
            out of range.
    """
    files = _files()
    if name not in files:
        raise unknown_choice("launcher", name, files)
    path = files[name]
    try:
        doc = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as e:
        raise UserError(f"{path}: invalid YAML: {e}") from None
    if not isinstance(doc, dict):
        raise UserError(f"{path}: expected a mapping of launcher fields")
    return make_profile(name, doc, str(path))


def make_profile(name: str, doc: dict[str, Any], where: str) -> LauncherProfile[Any]:
    """The profile ``doc`` (a profile file's mapping) describes; ``where`` names it in errors.

    Raises:
        UserError: see :func:`load_profile`.
    """
    kind = doc.get("kind")
    found = backend(kind if isinstance(kind, str) else repr(kind), where=f"{where}: kind")
    own = [f.name for f in dataclasses.fields(found.settings)]
    valid = [*COMMON, *own]
    for k in doc:
        if k not in valid:
            raise UserError(f"{where}: unknown key {k!r}; valid keys: {', '.join(valid)}")
    typed = {k: doc[k] for k in COMMON[1:] if k in doc and k != "branch"}
    common = typed_fields(LauncherProfile, typed, where)
    if "branch" in doc:  # YAML's off is False
        common["branch"] = check_mode(doc["branch"], f"{where}: branch")
    values = typed_fields(found.settings, {k: doc[k] for k in own if k in doc}, where)
    try:
        settings = found.settings(**values)
    except ValueError as e:
        raise UserError(f"{where}: {e}") from None
    return LauncherProfile(name=name, kind=str(kind), settings=settings, **common)


def typed_fields(cls: type[Any], doc: dict[str, Any], where: str) -> dict[str, Any]:
    """``doc``'s values checked against the annotated types of dataclass ``cls``'s fields (int,
    float, bool, str, ``X | None``, ``tuple[str, ...]`` from a list, ``dict``); numbers must be
    >= 0. A key missing from ``doc`` keeps its default.

    Raises:
        UserError: a value of another type, a negative number, nothing where a value is needed.
    """
    hints = typing.get_type_hints(cls)
    defaults = {f.name: f.default for f in dataclasses.fields(cls)}
    out: dict[str, Any] = {}
    for key, value in doc.items():
        want = _accepted(hints[key])
        if value is None and (tuple in want or dict in want):
            value = tuple() if tuple in want else {}  # a commented-out list or mapping
        elif value is None and type(None) not in want:
            raise UserError(
                f"{where}: {key}: expected a value, got nothing (default: {defaults[key]})"
            )
        elif value is not None and not _is(value, want):
            names = " or ".join(
                "list" if t is tuple else t.__name__ for t in want if t is not type(None)
            )
            raise UserError(
                f"{where}: {key}: expected {names}, got {type(value).__name__} {value!r}"
            )
        if isinstance(value, int | float) and not isinstance(value, bool) and value < 0:
            raise UserError(f"{where}: {key}: must be >= 0, got {value}")
        if tuple in want and isinstance(value, list | tuple):
            value = tuple(str(v) for v in value)
        out[key] = value
    return out


def _accepted(hint: Any) -> tuple[type, ...]:
    """The Python types a YAML value of a field annotated ``hint`` may have."""
    args = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
    out: list[type] = []
    for a in args:
        origin = typing.get_origin(a) or a
        if origin is float:
            out += [int, float]
        elif origin is typing.Any:
            out.append(object)
        else:
            out.append(origin)
    return tuple(out)


def _is(value: Any, want: tuple[type, ...]) -> bool:
    if isinstance(value, bool):
        return bool in want or object in want
    if tuple in want and isinstance(value, list):
        return True
    return isinstance(value, want)
