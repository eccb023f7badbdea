"""Launcher profiles: ``launchers/<name>.yaml``, validated like grids.

A profile says where runs execute. ``kind`` selects the launcher class (``local`` or ``slurm``);
the other fields map onto submitit's parameters. Profiles are looked up in ``$HARNESS_LAUNCHERS``,
then ``./launchers``, then the ``launchers/`` folder shipped next to the package.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harness.core import env
from harness.core.errors import UserError, unknown_choice
from harness.launch.registry import LAUNCHERS


@dataclass(frozen=True, kw_only=True, slots=True)
class LauncherProfile:
    """Where and how runs execute."""

    name: str
    """The profile's name (its file name without ``.yaml``)."""
    kind: str
    """``local`` (processes on this machine, owned by ``submit``) or ``slurm`` (job arrays)."""
    max_parallel: int = 0
    """local: runs at once; 0 = one per core without GPUs, ``runs_per_device`` per GPU with them
    (torch threads are split between the running runs)."""
    partition: str | None = None
    """slurm: partition (``--partition``)."""
    account: str | None = None
    """slurm: account to charge (``--account``)."""
    qos: str | None = None
    """slurm: quality of service (``--qos``)."""
    constraint: str | None = None
    """slurm: node feature constraint (``--constraint``, e.g. ``a100``)."""
    gpus_per_node: int = 0
    """slurm: GPUs per array task (``--gpus-per-node``)."""
    cpus_per_task: int = 1
    """CPU cores per task (``--cpus-per-task``)."""
    mem_gb: float | None = None
    """Memory per node in GB (``--mem``); None: the cluster default."""
    timeout_min: int = 60
    """Time limit per task in minutes; a run past it checkpoints and is requeued."""
    array_parallelism: int = 256
    """slurm: array tasks running at once (``--array=...%N``)."""
    runs_per_task: int = 1
    """slurm: runs packed into one array task, executed one after another."""
    runs_per_device: int = 1
    """Runs training at once on one GPU, each in its own process: small runs that cannot fill a
    GPU alone. local: per visible GPU. slurm: of a task's runs (one-GPU tasks; must not exceed
    ``runs_per_task``); on a CPU-only task, on its CPUs. 1: one run per GPU at a time."""
    max_num_timeout: int = 20
    """Requeues after a time limit or preemption before the run is recorded as ``timeout``."""
    checkpoint_every_s: float = 600.0
    """Seconds between a run's checkpoints (the work a preemption can lose)."""
    keep_checkpoints: bool = False
    """Keep a run's checkpoint after its row is written (default: removed)."""
    setup: tuple[str, ...] = ()
    """Shell lines run before each task (module load, environment activation)."""
    sbatch: dict[str, Any] = field(default_factory=dict)
    """Extra sbatch options passed through submitit's ``slurm_additional_parameters``."""

    def __hash__(self) -> int:
        return hash(self.name)


FIELDS = tuple(f.name for f in dataclasses.fields(LauncherProfile))
_DEFAULTS = {
    f.name: f.default
    for f in dataclasses.fields(LauncherProfile)
    if f.default is not dataclasses.MISSING
}


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


def load_profile(name: str) -> LauncherProfile:
    """Read and validate profile ``name``.

    Raises:
        UserError: unknown name (lists the known ones), unknown key, wrong type.
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
    valid = [f for f in FIELDS if f != "name"]
    for k in doc:
        if k not in valid:
            raise UserError(f"{path}: unknown key {k!r}; valid keys: {', '.join(valid)}")
    if doc.get("kind") not in LAUNCHERS:
        raise unknown_choice("launcher kind", doc.get("kind"), LAUNCHERS, where=f"{path}: kind")
    fields = _typed(doc, path)
    per_device, per_task = fields.get("runs_per_device", 1), fields.get("runs_per_task", 1)
    if per_device < 1:
        raise UserError(f"{path}: runs_per_device: must be >= 1, got {per_device}")
    if doc["kind"] == "slurm" and per_device > max(1, per_task):
        raise UserError(
            f"{path}: runs_per_device: {per_device} exceeds runs_per_task: {per_task}; a task "
            f"packs only its own runs (set runs_per_task to a multiple of {per_device})"
        )
    return LauncherProfile(name=name, **fields)


_TYPES: dict[str, tuple[type, ...]] = {
    "max_parallel": (int,),
    "gpus_per_node": (int,),
    "cpus_per_task": (int,),
    "timeout_min": (int,),
    "array_parallelism": (int,),
    "runs_per_task": (int,),
    "runs_per_device": (int,),
    "max_num_timeout": (int,),
    "mem_gb": (int, float),
    "checkpoint_every_s": (int, float),
    "keep_checkpoints": (bool,),
    "setup": (list,),
    "sbatch": (dict,),
}


def _typed(doc: dict[str, Any], path: Path) -> dict[str, Any]:
    out = dict(doc)
    for k, v in doc.items():
        want = _TYPES.get(k, (str,))
        if v is None and _DEFAULTS.get(k) is not None and k not in ("setup", "sbatch"):
            raise UserError(f"{path}: {k}: expected a value, got nothing (default: {_DEFAULTS[k]})")
        if v is not None and (
            not isinstance(v, want) or (isinstance(v, bool) and bool not in want)
        ):
            names = " or ".join(t.__name__ for t in want)
            raise UserError(f"{path}: {k}: expected {names}, got {type(v).__name__} {v!r}")
        if want[0] in (int, float) and isinstance(v, int | float) and v < 0:
            raise UserError(f"{path}: {k}: must be >= 0, got {v}")
    out["setup"] = tuple(str(s) for s in out.get("setup") or ())  # a commented-out list is None
    out["sbatch"] = dict(out.get("sbatch") or {})
    return out
