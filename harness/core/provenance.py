"""Where a result came from: code commit, torch version, host, time."""

from __future__ import annotations

import datetime as dt
import functools
import os
import socket
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any


@functools.cache
def git_commit() -> str | None:
    """The harness checkout's commit (``+dirty`` when it has uncommitted changes), or None
    outside a git checkout."""
    here = Path(__file__).resolve().parent
    try:
        head = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "HEAD"],
            capture_output=True, text=True, timeout=10, check=True,
        ).stdout.strip()  # fmt: skip
        dirty = subprocess.run(
            ["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, timeout=10, check=True,
        ).stdout.strip()  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("+dirty" if dirty else "") if head else None


@functools.cache
def torch_version() -> str | None:
    """The installed torch's version (read from its metadata: torch is not imported here)."""
    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return None


def provenance(job_id: str | None = None, source: str | None = None) -> dict[str, Any]:
    """Provenance columns of a result row."""
    return {
        "hostname": socket.gethostname(),
        "visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "git_commit": git_commit(),
        "torch_version": torch_version(),
        "job_id": job_id,
        "source": source,
        "created_at": dt.datetime.now(dt.UTC),
    }
