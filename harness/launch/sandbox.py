"""The user's code run in a child process, with a time and a memory limit, item by item.

``submit`` must not run a user's optimizer in its own process: a constructor that calls
``os._exit(0)`` would end ``submit`` with a false success, a ``step()`` that never returns would
hang it, one that raises ``KeyboardInterrupt`` would look like the user's Ctrl-C, and one that
allocates without end would take the login node's memory. :func:`run_isolated` hands a function
(``module:attr``, called on each item in turn) and its items to a child process in its own
session (:mod:`harness.launch.sandbox_child`: forked from a server that imported torch once), so
that the terminal's Ctrl-C reaches only ``submit``, which then kills the child at once. Each item
ends in one line: the function's answer (a problem, or None), the exception it raised
(``SystemExit`` and ``KeyboardInterrupt`` included), or, when the child died or ran past its time
on it, what became of it (its exit status or signal, the last line it wrote to stderr, the CPU
it used). Its time is ``timeout_s`` when the child uses no CPU (a hang), up to
:data:`BUSY_FACTOR` times that while it still works (a first step that compiles); the items after
one that killed the child are run in a new child.

The child's stdout and stderr (libraries print) go to a file, not to the user's terminal.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import pickle
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.core import env
from harness.core.errors import UserError
from harness.launch import sandbox_child

DEFAULT_TIMEOUT_S = 60.0
"""Seconds one item may take when :data:`harness.core.env.PREFLIGHT_TIMEOUT_S` is unset."""

STARTUP_S = 300.0
"""Seconds the child may take to start (import the function's module: torch) before its first
item; not counted in any item's time."""

POLL_S = 0.02
"""How often the parent looks at the child (seconds)."""

BUSY_FACTOR = 10
"""An item whose child still uses CPU at its time limit (a first step that compiles) may run
this many times the limit: the limit stops a hang, not work."""

IDLE_WINDOW_S = 10.0
"""A child that used under :data:`IDLE_SHARE` of a CPU over the last this many seconds (or the
limit, when shorter) is idle: a hang, stopped at the limit."""

IDLE_SHARE = 0.02
"""Share of one CPU under which a child counts as idle (a loaded machine still gives a working
child more)."""


@dataclass(frozen=True, slots=True)
class Limits:
    """What the child may take."""

    timeout_s: float
    """Seconds per item (the child's start-up not counted: :data:`STARTUP_S`)."""
    memory_bytes: int | None
    """Address space of the child (``RLIMIT_AS``), bytes; None: unlimited."""

    @classmethod
    def from_env(cls) -> Limits:
        """The limits :mod:`harness.core.env` sets (``HARNESS_PREFLIGHT_TIMEOUT_S``,
        ``HARNESS_PREFLIGHT_MEMORY_GB``), else a minute and half the machine's memory.

        Raises:
            ValueError: a value that is not a positive number (naming the variable).
        """
        timeout = _positive(env.PREFLIGHT_TIMEOUT_S)
        memory = _positive(env.PREFLIGHT_MEMORY_GB)
        if memory is None:
            physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
            memory_bytes = physical // 2
        else:
            memory_bytes = int(memory * 2**30)
        return cls(timeout or DEFAULT_TIMEOUT_S, memory_bytes)


def _positive(var: env.EnvVar) -> float | None:
    raw = var.get()
    if raw is None:
        return None
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise ValueError(f"{var.name}={raw!r}: expected a positive number ({var.meaning})")
    return value


HANGS = "the optimizer's constructor or step() hangs or is slow"
"""What an item that runs out of time says by default (the preflight's)."""

PREFIX = "harness-sandbox-"
"""How a child's temporary folder is named: this prefix, the parent's pid, a dash."""


def import_problem(ref: str) -> str | None:
    """Import the module of ``ref`` in a child process, within :meth:`Limits.from_env`'s time
    (:func:`harness.core.registry.checked_imports`): None when it loads, else a line.

    Raises:
        UserError: a limit set in the environment that is not a positive number.
        KeyboardInterrupt: the user's Ctrl-C (the child is killed first).
    """
    try:
        limits = Limits.from_env()
    except ValueError as e:
        raise UserError(str(e)) from None
    hangs = "importing the module hangs or is slow"
    warm = tuple(m for m in WARM if importlib.util.find_spec(m) is not None)
    check = "harness.core.registry:import_check"
    return run_isolated(check, [ref], limits, hangs=hangs, warm=warm)[0]


WARM = ("torch",)
"""Modules the child of an import check imports before its item, in its start-up time
(:data:`STARTUP_S`), so that the user's module's own time is what the limit bounds (torch's
import takes seconds on a loaded machine)."""


def run_isolated(
    function: str,
    items: Sequence[Any],
    limits: Limits,
    *,
    hangs: str = HANGS,
    warm: tuple[str, ...] = (),
) -> list[str | None]:
    """``function(item)`` for each item, in child processes; the answer (a problem line, or
    None) for each item, in order: what the function returned, or what stopped it there
    (``hangs``: what running out of time means; ``warm``: modules imported at start-up).

    Raises:
        KeyboardInterrupt: the user's Ctrl-C (the child is killed first).
    """
    answers: dict[int, str | None] = {}
    pending = list(range(len(items)))
    _sweep(Path(tempfile.gettempdir()))
    with (
        _terminated_cleanly(),
        tempfile.TemporaryDirectory(prefix=f"{PREFIX}{os.getpid()}-") as tmp,
    ):
        while pending:
            todo = [(i, items[i]) for i in pending]
            got = _one_child((function, warm), todo, limits, Path(tmp), hangs)
            if isinstance(got, str):  # died before its first item: every item gets that line
                answers.update((i, got) for i in pending)
            else:
                answers.update(got)
            pending = [i for i in pending if i not in answers]
    return [answers[i] for i in range(len(items))]


class _Terminated(BaseException):
    """SIGTERM arrived while a child ran (:func:`_terminated_cleanly`)."""


@contextlib.contextmanager
def _terminated_cleanly() -> Iterator[None]:
    """A SIGTERM (the user's code may send it to its parent) ends this process as it would
    have, by the signal, once the child is killed and its folder removed; where SIGTERM has a
    handler already (the local launcher's) or this is not the main thread, nothing changes."""
    main = threading.current_thread() is threading.main_thread()
    if not main or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return

    def raise_terminated(signum: int, frame: object) -> None:
        raise _Terminated

    signal.signal(signal.SIGTERM, raise_terminated)
    try:
        yield
    except _Terminated:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)
        raise
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _sweep(folder: Path) -> None:
    """Remove the temporary folders of parents that died without removing them (killed by a
    signal the user's code sent them; their children died with them: ``PR_SET_PDEATHSIG``)."""
    for found in folder.glob(f"{PREFIX}*-*"):
        pid = found.name.removeprefix(PREFIX).split("-")[0]
        if pid.isdigit() and not sandbox_child.alive(int(pid)):
            shutil.rmtree(found, ignore_errors=True)


def _one_child(
    function: tuple[str, tuple[str, ...]],
    todo: list[tuple[int, Any]],
    limits: Limits,
    tmp: Path,
    hangs: str,
) -> dict[int, str | None] | str:
    """Run one child over ``todo`` until it ends or overruns: the answers it gave, and one for
    the item it was on when it died or ran out of time; or, when it died before its first
    item, the line saying how."""
    request = (*function, todo, limits.memory_bytes)  # the function, modules to warm, items
    (tmp / "in.pickle").write_bytes(pickle.dumps(request))
    out, err = tmp / "out.jsonl", tmp / "err.txt"
    out.write_text("")
    err.write_bytes(b"")
    proc = sandbox_child.start(tmp / "in.pickle", out, err)
    assert proc.pid is not None  # started
    answers: dict[int, str | None] = {}
    busy = _Busy(proc.pid, hangs)
    clock: int | None = None  # the item whose time runs
    current: int | None = None  # the item started and not done
    since, read, started = time.monotonic(), 0, False
    try:
        while True:
            ended = proc.exitcode is not None
            text = out.read_text(errors="replace")
            for line in text[read : text.rfind("\n") + 1].splitlines():
                event = _event(line, {i for i, _ in todo})
                if event is None:  # the user's code wrote to the answer file
                    why = f"the child's answer is not one: {line.strip()[:80]!r}"
                    answers[current if current is not None else todo[0][0]] = why
                    return answers
                if "start" in event:
                    clock = current = event["start"]
                    since, started = time.monotonic(), True
                    busy.reset()
                else:
                    answers[event["done"]] = event["problem"]
                    clock = current = None
            read = text.rfind("\n") + 1
            if ended:
                break
            if not started and time.monotonic() - since > STARTUP_S:
                return f"the preflight's process did not start within {STARTUP_S:g} s"
            if clock is not None:
                stop = busy.overrun(time.monotonic() - since, limits.timeout_s)
                if stop is not None:
                    answers[clock] = stop
                    return answers
            time.sleep(POLL_S)
    finally:  # every exit: what the user's code started in the child's session goes with it
        sandbox_child.kill(proc)
    code = proc.exitcode
    assert code is not None  # reaped by the kill
    if current is not None:
        answers[current] = _death_line(err, code)
    elif not answers:
        return _death_line(err, code)
    return answers


class _Busy:
    """Whether the child's session (it and its own children: compile workers) still uses CPU,
    sampled once a second: what tells a step at work from a hang."""

    def __init__(self, sid: int, hangs: str) -> None:
        self.sid = sid
        self.hangs = hangs  # what running out of time means (:func:`run_isolated`)
        self.samples: list[tuple[float, float]] = []  # (monotonic time, CPU seconds)

    def reset(self) -> None:
        self.samples = []

    def overrun(self, waited: float, limit: float) -> str | None:
        """None while the item may go on, ``waited`` s after it started, else its line: past
        ``limit`` when the child used no CPU over the last :data:`IDLE_WINDOW_S` (or ``limit``,
        when shorter), past :data:`BUSY_FACTOR` x ``limit`` when it still works."""
        now = time.monotonic()
        if not self.samples or now - self.samples[-1][0] >= 1.0:
            cpu = _session_cpu(self.sid)
            if cpu is None:  # no /proc: the plain limit
                return _late(limit, self.hangs) if waited > limit else None
            self.samples.append((now, cpu))
        if waited <= limit:
            return None
        window = min(IDLE_WINDOW_S, limit)
        t1, used = self.samples[-1]
        t0, c0 = next(((t, c) for t, c in reversed(self.samples) if t1 - t >= window), (t1, used))
        if t1 - t0 >= window and used - c0 < IDLE_SHARE * (t1 - t0):
            return _late(
                limit,
                f"{self.hangs} (it used no CPU over the last {t1 - t0:.0f} s; "
                f"{used:.1f} s of CPU in all)",
            )
        if waited > BUSY_FACTOR * limit:
            return _late(
                BUSY_FACTOR * limit,
                f"{self.hangs} (still working, {used:.1f} s of CPU, past {BUSY_FACTOR} x the "
                "limit given to a child that uses CPU, as a first step that compiles does)",
            )
        return None


def _late(waited: float, why: str) -> str:
    name = env.PREFLIGHT_TIMEOUT_S.name
    return f"did not finish within {waited:g} s (set {name} for more): {why}"


def _session_cpu(sid: int) -> float | None:
    """CPU seconds of every process of session ``sid`` (user + system, its reaped children's
    included), from ``/proc``; None where there is no ``/proc``."""
    proc = Path("/proc")
    if not (proc / "self" / "stat").exists():
        return None
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for d in proc.iterdir():
        if not d.name.isdigit():
            continue
        try:
            fields = (d / "stat").read_text().rpartition(")")[2].split()
        except OSError:  # ended meanwhile
            continue
        if int(fields[3]) == sid:  # fields after the name: state ppid pgrp session ...
            total += sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
    return total / ticks


def _event(line: str, items: set[int]) -> dict[str, Any] | None:
    """One line of the child's answer file, checked: ``{"start": i}`` or ``{"done": i,
    "problem": str | None}`` of one of ``items``; None when it is not such a line."""
    try:
        event = json.loads(line)
    except ValueError:
        return None
    if not isinstance(event, dict):
        return None
    if set(event) == {"start"} and event["start"] in items:
        return event
    problem = event.get("problem")
    if set(event) == {"done", "problem"} and event["done"] in items:
        return event if problem is None or isinstance(problem, str) else None
    return None


def _death_line(err: Path, code: int) -> str:
    """What a child's death says: its exit status or signal, and its last line on stderr."""
    if code < 0:
        name = signal.Signals(-code).name
        oom = " (out of memory?)" if -code == signal.SIGKILL else ""
        how = f"the process was killed by {name}{oom}"
    else:
        how = f"the process exited with status {code} (os._exit or exit in the user's code)"
    lines = [s for s in err.read_text(errors="replace").splitlines() if s.strip()]
    return how + (f"; its last words: {lines[-1].strip()[:200]}" if lines else "")
