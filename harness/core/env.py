"""Every environment variable the harness reads: its name, what it means, what applies when it is
unset. Code reads them through :data:`ENV` (``env.RESULTS.get()``), never ``os.environ`` directly;
the README's table of them is checked against this list (``tests/core/test_env.py``).

Variables the harness only *sets* for libraries (``TORCHINDUCTOR_CACHE_DIR``, ``MASTER_ADDR``, ...)
are listed too where the harness keeps a value the user already set.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from harness.core.errors import UserError


@dataclass(frozen=True, slots=True)
class EnvVar:
    """One environment variable the harness reads."""

    name: str
    """The variable's name."""
    meaning: str
    """What it sets (one line, as the README says it)."""
    default: str
    """What applies when it is unset or empty (prose)."""

    def get(self, environ: Mapping[str, str] | None = None) -> str | None:
        """Its value; None when unset or empty. ``environ``: default ``os.environ``."""
        return (os.environ if environ is None else environ).get(self.name) or None


RESULTS = EnvVar("HARNESS_RESULTS", "results root (rows, curves, manifests)", "`./results`")
DATA = EnvVar(
    "HARNESS_DATA",
    "data root: prepared datasets, one folder each",
    "`$XDG_DATA_HOME/harness/data` (`~/.local/share/harness/data`)",
)
SPILL = EnvVar(
    "HARNESS_SPILL",
    "folder for results the results disk refused (written by the next `submit`)",
    "the cache folder's `spill/`, else the temp folder",
)
SQL_UNSAFE = EnvVar(
    "HARNESS_SQL_UNSAFE",
    "`1`/`true`: SQL over the results (`query`, `--where`, the Python API) runs full DuckDB",
    "reads only the results folder",
)
SQL_MEMORY = EnvVar(
    "HARNESS_SQL_MEMORY",
    "DuckDB's memory limit for SQL over the results (`4GB`, `25%`)",
    "`25%` of the RAM",
)
LAUNCHERS = EnvVar(
    "HARNESS_LAUNCHERS", "folder of launcher profiles (`<name>.yaml`)", "`./launchers/` only"
)
CHECKPOINT_EVERY_S = EnvVar(
    "HARNESS_CHECKPOINT_EVERY_S",
    "seconds between checkpoints (overrides the profile)",
    "the profile's `checkpoint_every_s`",
)
KEEP_CHECKPOINTS = EnvVar(
    "HARNESS_KEEP_CHECKPOINTS",
    "`1`/`true`: keep a completed run's checkpoint (`0`/`false`: delete it)",
    "the profile's `keep_checkpoints`",
)
PREFLIGHT_TIMEOUT_S = EnvVar(
    "HARNESS_PREFLIGHT_TIMEOUT_S",
    "seconds the preflight gives each optimizer configuration (build and one step, in a child "
    "process) that uses no CPU; ten times that while it still uses CPU (compiling)",
    "60",
)
PREFLIGHT_MEMORY_GB = EnvVar(
    "HARNESS_PREFLIGHT_MEMORY_GB",
    "address space of the preflight's child process, GiB",
    "half the machine's memory",
)
WAIT_POLL_S = EnvVar(
    "HARNESS_WAIT_POLL_S",
    "seconds between the looks of `submit --wait` and `eval --wait` at the rows and the queue "
    "(tests shorten it)",
    "5 (`eval --wait` on SLURM: 2)",
)
EARLY_SIGNAL = EnvVar(
    "HARNESS_EARLY_SIGNAL",
    "internal: a SLURM signal that arrived before a task's handlers (set by the task's boot)",
    "none arrived",
)
XDG_CACHE_HOME = EnvVar(
    "XDG_CACHE_HOME", "base of the cache folder (`<it>/harness`)", "`~/.cache` (also when relative)"
)
XDG_DATA_HOME = EnvVar(
    "XDG_DATA_HOME",
    "base of the default data root (`<it>/harness/data`)",
    "`~/.local/share` (also when relative)",
)
CUDA_VISIBLE_DEVICES = EnvVar(
    "CUDA_VISIBLE_DEVICES",
    "GPUs a local launch may use (recorded in each row's provenance)",
    "every GPU torch sees",
)
SLURM_CONF = EnvVar(
    "SLURM_CONF", "the cluster's `slurm.conf` (its limits are cached)", "`/etc/slurm/slurm.conf`"
)
SLURM_JOB_ID = EnvVar(
    "SLURM_JOB_ID", "set by SLURM inside a job: recorded in the row's provenance", "not in a job"
)
SLURM_RESTART_COUNT = EnvVar(
    "SLURM_RESTART_COUNT", "set by SLURM: how often the job was requeued", "0"
)
TORCHINDUCTOR_CACHE_DIR = EnvVar(
    "TORCHINDUCTOR_CACHE_DIR",
    "torch.compile's kernel cache (kept when set)",
    "`<results>/<grid>/compile_cache`",
)
TRITON_CACHE_DIR = EnvVar(
    "TRITON_CACHE_DIR",
    "Triton's kernel cache (kept when set)",
    "`<results>/<grid>/compile_cache/triton`",
)
MASTER_ADDR = EnvVar(
    "MASTER_ADDR", "multi-node DDP rendezvous host (kept when set)", "the job's first node"
)
MASTER_PORT = EnvVar(
    "MASTER_PORT", "multi-node DDP rendezvous port (kept when set)", "derived from the job id"
)

ENV: dict[str, EnvVar] = {
    v.name: v
    for v in (
        RESULTS,
        DATA,
        SPILL,
        SQL_UNSAFE,
        SQL_MEMORY,
        LAUNCHERS,
        CHECKPOINT_EVERY_S,
        KEEP_CHECKPOINTS,
        PREFLIGHT_TIMEOUT_S,
        PREFLIGHT_MEMORY_GB,
        WAIT_POLL_S,
        EARLY_SIGNAL,
        XDG_CACHE_HOME,
        XDG_DATA_HOME,
        CUDA_VISIBLE_DEVICES,
        SLURM_CONF,
        SLURM_JOB_ID,
        SLURM_RESTART_COUNT,
        TORCHINDUCTOR_CACHE_DIR,
        TRITON_CACHE_DIR,
        MASTER_ADDR,
        MASTER_PORT,
    )
}
"""Every variable the harness reads, by name (the README's table lists the same)."""


def wait_poll_s(default: float, environ: Mapping[str, str] | None = None) -> float:
    """Seconds between the looks of a ``--wait``: :data:`WAIT_POLL_S` when set, else ``default``.

    Raises:
        UserError: the variable is set to something other than a positive number.
    """
    raw = WAIT_POLL_S.get(environ)
    if raw is None:
        return default
    try:
        seconds = float(raw)
    except ValueError:
        seconds = float("nan")
    if not seconds > 0:
        raise UserError(f"{WAIT_POLL_S.name}={raw!r}: expected a positive number of seconds")
    return seconds


def cache_dir() -> Path:
    """The harness's cache folder: ``$XDG_CACHE_HOME/harness``, else ``~/.cache/harness``."""
    return xdg_base(XDG_CACHE_HOME, Path.home() / ".cache") / "harness"


def data_home() -> Path:
    """The default data root, one per user: ``$XDG_DATA_HOME/harness/data``, else
    ``~/.local/share/harness/data``."""
    return xdg_base(XDG_DATA_HOME, Path.home() / ".local" / "share") / "harness" / "data"


def xdg_base(var: EnvVar, fallback: Path, environ: Mapping[str, str] | None = None) -> Path:
    """An XDG base folder: ``var``'s value when it is an absolute path, else ``fallback``. The
    XDG spec has a relative value ignored: it would name another folder from every working
    directory (a dataset prepared again per folder, a cache per folder)."""
    given = var.get(environ)
    return Path(given) if given and Path(given).is_absolute() else fallback


def readme_table() -> str:
    """The README's table of the variables (Markdown), from :data:`ENV`."""
    lines = ["| variable | meaning | when unset |", "|---|---|---|"]
    lines += [f"| `{v.name}` | {v.meaning} | {v.default} |" for v in ENV.values()]
    return "\n".join(lines)
