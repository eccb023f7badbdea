"""Where a result came from: code commit, torch version, host, time; and fingerprints of the
code a result depends on (an optimizer class and its bases, a model builder)."""

from __future__ import annotations

import ast
import contextlib
import datetime as dt
import functools
import hashlib
import inspect
import os
import socket
import subprocess
import sys
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from typing import Any

from harness.core import env
from harness.core.codegrain import class_code, strip_docstrings
from harness.core.files import FileStamp, file_stamp

PROVENANCE: dict[str, str] = {
    "device": "where the run computed (cpu, cuda:<device name>)",
    "hostname": "the machine",
    "visible_devices": "CUDA_VISIBLE_DEVICES of the run's process",
    "git_commit": "the harness checkout's commit (+dirty with local changes)",
    "torch_version": "torch's version",
    "job_id": "the launcher's job id (SLURM), if any",
    "source": "where imported numbers come from (harness import)",
    "created_at": "when the row was written (UTC)",
    "attempt": "the run's attempt: 1 for its first row, one more than its newest row's for each "
    "later one (decides which row is newest; never a clock)",
}
"""Row columns saying where and when a result was made."""

IMPORTED_PROVENANCE: tuple[str, ...] = (
    "source",
    "device",
    "hostname",
    "git_commit",
    "torch_version",
    "job_id",
)
"""The :data:`PROVENANCE` columns an imported CSV may set (``harness import``); the importer or
the store sets the others."""

ATTEMPT = "attempt"
"""The row column numbering a run's attempts. The store assigns it when it writes a row, from
the rows of that run on disk, while the writer holds the run's lock (``harness.store.rows``), so
the hosts' clocks never decide which of a run's rows is newest."""
ATTEMPT_ABSENT = 0
"""The attempt of a row written before attempts were recorded (its column is NULL or absent):
older than every numbered one."""

INPUTS: dict[str, str] = {
    "optimizer_source": "where the run's optimizer code came from (module:Class, + for two)",
    "optimizer_version": "name==version of the installed packages providing it, if any",
    "optimizer_fingerprint": "hash of its optimizers' code (comments and formatting excluded)",
    "model_fingerprint": "hash of its model's code",
    "data_fingerprint": "hash of its dataset's files",
}
"""Row columns (strings) recording what a result depends on beyond its config; computed by
``harness.launch.inputs``, compared by ``submit`` before it keeps a result."""

TORCH_THREADS = "torch_threads"
"""Row column: torch's intra-op threads in the run's process."""
BLAS_THREADS = "blas_threads"
"""Row column: threads of the BLAS library numpy and scipy use in the run's process."""
THREADS: dict[str, str] = {
    TORCH_THREADS: "torch's intra-op threads of the run's process (from the launcher profile and "
    "the machine, never from how many runs a submission holds)",
    BLAS_THREADS: "threads of the BLAS numpy and scipy use in the run's process (1)",
}
"""Row columns (integers) recording the threads a run computed with, set by the process that
trained it (``harness.launch.worker.threads``): a run's numbers depend on them (a sum split over
more threads adds in another order). Absent (NULL) in rows written before they were recorded,
in imported rows, and in the rows a launcher writes for a run whose process died."""

STALE_INPUTS: tuple[str, ...] = ("optimizer_fingerprint", "model_fingerprint", "data_fingerprint")
"""The :data:`INPUTS` whose change makes a result stale (``submit --stale``)."""


@functools.cache
def git_commit() -> str | None:
    """The harness checkout's commit (``+dirty`` when it has uncommitted changes), or None
    outside a git checkout."""
    here = Path(__file__).resolve().parent
    try:
        head = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
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
        "visible_devices": env.CUDA_VISIBLE_DEVICES.get(),
        "git_commit": git_commit(),
        "torch_version": torch_version(),
        "job_id": job_id,
        "source": source,
        "created_at": dt.datetime.now(dt.UTC),
        ATTEMPT: None,  # assigned by the store when it writes the row
    }


def _normalized(source: str) -> str:
    """The code of a Python source without its comments, docstrings and formatting (AST dump):
    editing those does not make results stale."""
    tree = ast.parse(source)
    strip_docstrings(tree)
    return ast.dump(tree, annotate_fields=False)


def _third_party_or_own(module: str) -> bool:
    """Whether code of ``module`` counts in a fingerprint: not the standard library, not torch."""
    top = module.partition(".")[0]
    return top not in sys.stdlib_module_names and top not in ("builtins", "torch")


def source_files(obj: object) -> list[Path]:
    """The source files of a class (every class of its MRO outside the standard library and
    torch) or of a function: the code a result depends on."""
    classes = obj.__mro__ if isinstance(obj, type) else (obj,)
    files = set()
    for c in classes:
        module = getattr(c, "__module__", "") or ""
        if _third_party_or_own(module):
            path = inspect.getsourcefile(c)  # type: ignore[arg-type]  # a class or function: its MRO or obj
            if path:
                files.add(Path(path).resolve())
    return sorted(files)


def code_fingerprint(objects: Iterable[object]) -> str:
    """A 16-hex-digit hash of the code of ``objects`` (classes or functions), comments,
    docstrings and formatting excluded: equal exactly when that code computes the same."""
    h = hashlib.sha256()
    for path in sorted({p for obj in objects for p in source_files(obj)}):
        h.update(_normalized(path.read_text()).encode())
    return h.hexdigest()[:16]


_FINGERPRINTS: dict[tuple[tuple[object, ...], tuple[FileStamp | None, ...]], str] = {}
"""Class fingerprints computed by this process, by (objects, stamps of their source files)."""
_FIRST_SEEN: dict[Path, FileStamp | None] = {}
"""Each source file this process fingerprinted, as it was the first time."""


def class_fingerprint(objects: Iterable[object]) -> str:
    """A 16-hex-digit hash of the code ``objects`` (classes or functions) run, at the grain of a
    class (:mod:`harness.core.codegrain`): editing another class of the same file leaves it.

    Computed once per process while their source files are unchanged (a run process trains many
    runs: it reads and parses an optimizer's files once, not once per run)."""
    objs = tuple(objects)
    files = sorted({f for obj in objs for f in source_files(obj)})
    stamps = tuple(file_stamp(f) for f in files)
    key = (objs, stamps)
    if key not in _FINGERPRINTS:
        h = hashlib.sha256()
        for part in sorted({part for obj in objs for part in class_code(obj)}):
            h.update(part.encode())
        _FINGERPRINTS[key] = h.hexdigest()[:16]
        for f, stamp in zip(files, stamps, strict=True):
            _FIRST_SEEN.setdefault(f, stamp)
    return _FINGERPRINTS[key]


def fingerprinted_code_changed() -> list[Path]:
    """The source files this process fingerprinted that changed on disk since the first time:
    a process that imported their code then runs code other than theirs (a run process then
    leaves its next run to a fresh process)."""
    return [f for f, stamp in _FIRST_SEEN.items() if file_stamp(f) != stamp]


@functools.cache
def _distribution_of(top: str) -> str | None:
    """``name==version`` of the installed distribution providing top-level module ``top``.
    Cached per process: reading every installed package's metadata takes about a second, and
    the code a process imported does not change distribution; a distribution named as the
    module that declares it (``top_level.txt``: the harness, torch, most optimizer packages)
    is found without reading the others."""
    with contextlib.suppress(metadata.PackageNotFoundError):
        named = metadata.distribution(top)
        if top in (named.read_text("top_level.txt") or "").split():
            return f"{named.metadata['Name']}=={named.version}"
    for dist in metadata.packages_distributions().get(top, []):
        with contextlib.suppress(metadata.PackageNotFoundError):
            return f"{dist}=={metadata.version(dist)}"
    return None


def distribution_version(obj: object) -> str | None:
    """``name==version`` of the installed distribution providing ``obj``'s module, if any."""
    return _distribution_of((getattr(obj, "__module__", "") or "").partition(".")[0])


@functools.cache
def source_digest() -> bytes:
    """SHA-256 over every ``.py`` file of the ``harness`` package (its path and bytes): any
    edit of the harness changes it (the keys of the plan cache and of the preflight cache;
    about 10 ms, once per process)."""
    top = Path(__file__).resolve().parents[1]  # the harness package
    h = hashlib.sha256()
    for folder, subs, files in os.walk(top):
        subs.sort()
        for name in sorted(files):
            if name.endswith(".py"):
                file = Path(folder, name)
                h.update(str(file.relative_to(top)).encode() + b"\0")
                h.update(file.read_bytes())
    return h.digest()
