"""The user's code run in a child process, with a time and a memory limit, item by item.

``submit`` must not run a user's optimizer in its own process: a constructor that calls
``os._exit(0)`` would end ``submit`` with a false success, a ``step()`` that never returns would
hang it, one that raises ``KeyboardInterrupt`` would look like the user's Ctrl-C, and one that
allocates without end would take the login node's memory. :func:`run_isolated` hands a function
(``module:attr``, called on each item in turn) and its items to a fresh interpreter
(``python -m harness.launch.sandbox``) in its own session, so that the terminal's Ctrl-C reaches
only ``submit``, which then kills the child at once. Each item ends in one line: the function's
answer (a problem, or None), the exception it raised (``SystemExit`` and ``KeyboardInterrupt``
included), or, when the child died or ran past its time on it, what became of it (its exit
status or signal, the last line it wrote to stderr, the CPU it used). Its time is ``timeout_s``
when the child uses no CPU (a hang), up to :data:`BUSY_FACTOR` times that while it still works
(a first step that compiles); the items after one that killed the child
are run in a new child.

The child's stdout and stderr (libraries print) go to a file, not to the user's terminal.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import resource
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.core import env
from harness.core.registry import load_object

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


def run_isolated(function: str, items: Sequence[Any], limits: Limits) -> list[str | None]:
    """``function(item)`` for each item, in child processes; the answer (a problem line, or
    None) for each item, in order: what the function returned, or what stopped it there.

    Raises:
        KeyboardInterrupt: the user's Ctrl-C (the child is killed first).
    """
    answers: dict[int, str | None] = {}
    pending = list(range(len(items)))
    with tempfile.TemporaryDirectory(prefix="harness-sandbox-") as tmp:
        while pending:
            got = _one_child(function, [(i, items[i]) for i in pending], limits, Path(tmp))
            if isinstance(got, str):  # died before its first item: every item gets that line
                answers.update((i, got) for i in pending)
            else:
                answers.update(got)
            pending = [i for i in pending if i not in answers]
    return [answers[i] for i in range(len(items))]


def _one_child(
    function: str, todo: list[tuple[int, Any]], limits: Limits, tmp: Path
) -> dict[int, str | None] | str:
    """Run one child over ``todo`` until it ends or overruns: the answers it gave, and one for
    the item it was on when it died or ran out of time; or, when it died before its first
    item, the line saying how."""
    (tmp / "in.pickle").write_bytes(pickle.dumps((function, todo, limits.memory_bytes)))
    out, err = tmp / "out.jsonl", tmp / "err.txt"
    out.write_text("")
    with err.open("wb") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "harness.launch.sandbox", str(tmp / "in.pickle"), str(out)],
            stdin=subprocess.DEVNULL,
            stdout=stderr,
            stderr=stderr,
            start_new_session=True,  # the terminal's Ctrl-C goes to submit only
        )
    answers: dict[int, str | None] = {}
    busy = _Busy(proc.pid)
    clock: int | None = None  # the item whose time runs
    current: int | None = None  # the item started and not done
    since, read, started = time.monotonic(), 0, False
    try:
        while True:
            ended = proc.poll() is not None
            text = out.read_text()
            for line in text[read : text.rfind("\n") + 1].splitlines():
                event = json.loads(line)
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
                _kill(proc)
                return f"the preflight's process did not start within {STARTUP_S:g} s"
            if clock is not None:
                stop = busy.overrun(time.monotonic() - since, limits.timeout_s)
                if stop is not None:
                    _kill(proc)
                    answers[clock] = stop
                    return answers
            time.sleep(POLL_S)
    except BaseException:  # Ctrl-C: the user's code stops with submit
        _kill(proc)
        raise
    if current is not None:
        answers[current] = _death_line(err, proc.returncode)
    elif not answers:
        return _death_line(err, proc.returncode)
    return answers


class _Busy:
    """Whether the child's session (it and its own children: compile workers) still uses CPU,
    sampled once a second: what tells a step at work from a hang."""

    def __init__(self, sid: int) -> None:
        self.sid = sid
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
                slow = "the constructor or step() hangs or is slow"
                return _late(limit, slow) if waited > limit else None
            self.samples.append((now, cpu))
        if waited <= limit:
            return None
        window = min(IDLE_WINDOW_S, limit)
        t1, used = self.samples[-1]
        t0, c0 = next(((t, c) for t, c in reversed(self.samples) if t1 - t >= window), (t1, used))
        if t1 - t0 >= window and used - c0 < IDLE_SHARE * (t1 - t0):
            return _late(
                limit,
                f"it used no CPU over the last {t1 - t0:.0f} s ({used:.1f} s of CPU in all): "
                "the constructor or step() hangs",
            )
        if waited > BUSY_FACTOR * limit:
            return _late(
                BUSY_FACTOR * limit,
                f"still working ({used:.1f} s of CPU), past {BUSY_FACTOR} x the limit given to "
                "a child that uses CPU (a first step that compiles): the constructor or step() "
                "is too slow",
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


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the child's process group (its own children too) and reap it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


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


def _child(request: Path, out: Path) -> None:
    """The child: each item in turn, a ``start`` line before it and a ``done`` line after."""
    function, todo, memory = pickle.loads(request.read_bytes())
    if memory is not None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    fn = load_object(function)
    with out.open("a", buffering=1) as sink:
        for i, item in todo:
            sink.write(json.dumps({"start": i}) + "\n")
            try:
                problem = fn(item)
            except BaseException as e:  # the user's code: SystemExit, Ctrl-C...
                problem = _exception_line(e)
            sink.write(json.dumps({"done": i, "problem": problem}) + "\n")


def _exception_line(e: BaseException) -> str:
    if isinstance(e, MemoryError):
        return "MemoryError: the optimizer ran out of the preflight's memory limit"
    text = f"{type(e).__name__}: {e}".replace("\n", " ")
    if isinstance(e, SystemExit | KeyboardInterrupt):
        where = traceback.extract_tb(e.__traceback__)[-1:]
        at = f" (raised at {where[0].filename}:{where[0].lineno})" if where else ""
        return f"{text} raised by the user's code{at}"
    return text


if __name__ == "__main__":
    _child(Path(sys.argv[1]), Path(sys.argv[2]))
