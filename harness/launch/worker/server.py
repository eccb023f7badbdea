"""The server run processes are forked from (:func:`run_context`: it imported torch once) and what
starting a process from it needs; no training code (the sandbox's child is forked from it too:
:mod:`harness.launch.sandbox_child`). :mod:`harness.launch.worker.process` starts run processes
with it (its module docstring says how they behave)."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import types
from collections.abc import Iterator
from multiprocessing import forkserver, resource_tracker
from multiprocessing.context import ForkServerContext, SpawnContext

PARENT_SIGNALS = (signal.SIGTERM, signal.SIGUSR2, signal.SIGINT, signal.SIGHUP)
"""Signals a run process leaves to its parent (see the module docstring)."""

RunContext = SpawnContext | ForkServerContext
"""How run processes start: spawned (a fresh interpreter each) or forked from a server."""

PRELOADED = ("torch", "torch._dynamo")
"""What the fork server imports once, before it forks run processes: torch (2 s of CPU) and
Dynamo (2 s more: torch's ``Optimizer.__init__`` imports it), which every run process needs and
a spawned one imports again. Not the harness's modules: a run process imports those itself, so
that it runs the code on disk when it starts (the optimizers' fingerprints read that code)."""


def run_context(*, preloaded: bool) -> RunContext:
    """How the pool starts run processes: with ``preloaded``, forked from a server process that
    imported :data:`PRELOADED` once (CUDA is never initialised there: each run process does that
    itself), else spawned. A forked run process's output is the server's (the caller's output
    when the server started): only runs that write their own logs are forked; a SLURM task's
    runs write to the task's output and are spawned. The pool forks only where it gives no GPU
    (the GPU path stays the one checked on GPUs: a CUDA driver that torch initialised in the
    server would not survive the fork).

    A server that cannot start (its socket lives in ``TMPDIR``, whose path may be longer than
    the 107 bytes a Unix socket's address holds) gives spawned processes instead.

    The server lives as long as the process that started it (it exits when that process
    exits, however it dies), so a process that submits many times (a notebook, a test session)
    imports torch for its run processes once.

    multiprocessing's resource tracker (a helper process the parent's queues and events need)
    and the fork server are started with :data:`PARENT_SIGNALS` blocked, so that a signal to the
    process group (a closed terminal's SIGHUP) does not kill them: they would be restarted with
    tracebacks, and without the caller's output (they must not hold it open: ``out=$(harness
    submit ...)`` would wait). The tracker is also told (a ``-W`` option, passed on from
    ``sys.warnoptions``) not to warn of "leaked semaphore objects" when it cleans up after a
    parent killed with SIGKILL: the cleanup is its job, and the user's terminal is not the place
    for the warning."""
    ctx: RunContext = ForkServerContext() if preloaded else SpawnContext()
    before = signal.pthread_sigmask(signal.SIG_BLOCK, PARENT_SIGNALS)
    options = list(sys.warnoptions)
    sys.warnoptions.append(TRACKER_QUIET)
    try:
        with _output_not_inherited():
            resource_tracker.ensure_running()
            if isinstance(ctx, ForkServerContext):
                ctx.set_forkserver_preload(list(PRELOADED))
                try:
                    with callers_main_left_out():
                        forkserver.ensure_running()
                except OSError:  # its socket not made: "AF_UNIX path too long" (a long TMPDIR)
                    ctx = SpawnContext()  # processes as without the server, each importing torch
    finally:
        sys.warnoptions[:] = options
        signal.pthread_sigmask(signal.SIG_SETMASK, before)
    return ctx


@contextlib.contextmanager
def _output_not_inherited() -> Iterator[None]:
    """While the block starts a helper process, this process's stdout and stderr are
    ``/dev/null``: the helper (the resource tracker, which lives while any process holds its
    pipe) must not hold the caller's output open (``out=$(harness submit ...)`` would wait)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(ValueError, OSError):
            stream.flush()
    null = os.open(os.devnull, os.O_WRONLY)
    saved = [os.dup(fd) for fd in (1, 2)]
    try:
        for fd in (1, 2):
            os.dup2(null, fd)
        yield
    finally:
        for fd, copy in zip((1, 2), saved, strict=True):
            os.dup2(copy, fd)
            os.close(copy)
        os.close(null)


@contextlib.contextmanager
def callers_main_left_out() -> Iterator[None]:
    """While a run process is started, ``__main__`` is an empty module.

    A spawned child re-runs the parent's ``__main__`` (by path or ``-m`` name) before its
    target, so a user's script that calls :func:`harness.api.submit` at top level, without an
    ``if __name__ == "__main__":`` guard, would run again in every run process and fail with
    multiprocessing's "bootstrapping phase" error. A run process needs nothing of the caller's
    main module: its target and arguments are the harness's own."""
    main = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        if main is None:
            del sys.modules["__main__"]
        else:
            sys.modules["__main__"] = main


TRACKER_QUIET = "ignore:resource_tracker:UserWarning"
"""The ``-W`` filter the resource tracker is started with (its cleanup warnings)."""
