"""The controller's limits on job arrays, and how a batch of array tasks is split into sbatch calls.

``MaxArraySize`` bounds the indices of one array (0 .. MaxArraySize - 1); ``MaxJobCount`` bounds
the jobs the controller holds at once, every array task counted. Both are read from
``scontrol show config`` and cached for an hour (per ``slurm.conf`` version), so that a dry run
stays fast; without a reachable controller Slurm's defaults are assumed, and the plan says so.
"""

from __future__ import annotations

import contextlib
import json
import math
import shutil
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from harness.core import env
from harness.core.files import atomic_write_text

DEFAULT_MAX_ARRAY_SIZE = 1001
"""Slurm's default ``MaxArraySize`` (highest index 1000)."""
DEFAULT_MAX_JOB_COUNT = 10000
"""Slurm's default ``MaxJobCount``."""
CACHE_TTL_S = 3600.0
"""Seconds a cached reading of ``scontrol show config`` stays valid."""


@dataclass(frozen=True, slots=True)
class ClusterLimits:
    """Array limits of the SLURM controller."""

    max_array_size: int
    """``MaxArraySize``: an array holds at most this many tasks (indices 0 .. value - 1)."""
    max_job_count: int
    """``MaxJobCount``: jobs the controller holds at once; each array task counts."""
    source: str
    """Origin: ``scontrol show config``, or why Slurm's defaults are assumed."""


def cache_path() -> Path:
    """The cache file (``slurm-limits.json`` in :func:`harness.core.env.cache_dir`)."""
    return env.cache_dir() / "slurm-limits.json"


def _cache_key() -> str:
    """Identifies the cluster configuration: the slurm.conf path and its modification time."""
    conf = Path(env.SLURM_CONF.get() or "/etc/slurm/slurm.conf")
    try:
        return f"{conf}@{conf.stat().st_mtime_ns}"
    except OSError:
        return f"{conf}@absent"


def parse_config(text: str) -> dict[str, str]:
    """``Key = Value`` lines of ``scontrol show config`` as a dict."""
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key.strip()] = value.strip()
    return out


def _leading_int(value: str | None, default: int) -> int:
    digits = (value or "").split()[0] if value and value.split() else ""
    return int(digits) if digits.isdigit() else default


def _query(timeout_s: float) -> ClusterLimits:
    """Read the limits from ``scontrol show config`` (Slurm's defaults when that fails)."""
    if shutil.which("scontrol") is None:
        why = "no Slurm here (scontrol not found)"
    else:
        try:
            proc = subprocess.run(
                ["scontrol", "show", "config"],
                capture_output=True,
                text=True,
                timeout=timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired:
            why = f"scontrol show config did not answer within {timeout_s:g} s"
        else:
            if proc.returncode == 0:
                conf = parse_config(proc.stdout)
                return ClusterLimits(
                    _leading_int(conf.get("MaxArraySize"), DEFAULT_MAX_ARRAY_SIZE),
                    _leading_int(conf.get("MaxJobCount"), DEFAULT_MAX_JOB_COUNT),
                    "scontrol show config",
                )
            why = f"scontrol show config failed: {proc.stderr.strip().splitlines()[-1:]}"
    return ClusterLimits(
        DEFAULT_MAX_ARRAY_SIZE, DEFAULT_MAX_JOB_COUNT, f"Slurm's defaults assumed: {why}"
    )


def cluster_limits(timeout_s: float = 10.0, refresh: bool = False) -> ClusterLimits:
    """The controller's array limits, from the cache when fresh, else from ``scontrol``.

    Args:
        timeout_s: longest wait for ``scontrol`` (a dry run passes a short one).
        refresh: ignore the cache.
    """
    path, key = cache_path(), _cache_key()
    if not refresh:
        try:
            doc = json.loads(path.read_text())
            if doc["key"] == key and time.time() - doc["time"] < CACHE_TTL_S:
                return ClusterLimits(**doc["limits"])
        except (OSError, ValueError, KeyError, TypeError):
            pass
    limits = _query(timeout_s)
    if limits.source == "scontrol show config":  # never cache a fallback
        _write_cache(path, {"key": key, "time": time.time(), "limits": asdict(limits)})
    return limits


def _write_cache(path: Path, doc: dict[str, object]) -> None:
    with contextlib.suppress(OSError):  # a read-only home only costs the next call an scontrol
        atomic_write_text(path, json.dumps(doc))


def array_sizes(tasks: int, max_array_size: int) -> list[int]:
    """Split ``tasks`` array tasks into arrays of at most ``max_array_size`` tasks each.

    The arrays are as even as possible (10,000 tasks at 1001: ten arrays of 1000).
    """
    if tasks <= 0:
        return []
    calls = math.ceil(tasks / max_array_size)
    base, extra = divmod(tasks, calls)
    return [base + 1] * extra + [base] * (calls - extra)
