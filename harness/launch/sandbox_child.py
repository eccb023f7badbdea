"""The sandbox's child (:mod:`harness.launch.sandbox`): the user's function on each item in turn,
a ``start`` line before it and a ``done`` line after, in its answer file. It is forked from the
server that run processes fork from (:func:`harness.launch.worker.server.run_context`: it
imported torch once), not a fresh interpreter: a preflight or an import check costs a fork, not
torch's import (about 3 s of CPU each; a ``submit`` of a user's optimizer had two, then forked
its runs from that server).

What a fresh interpreter gave the child, the forked one sets up itself before the user's code:

- a session of its own (the terminal's Ctrl-C reaches ``submit`` only), its own stdout and
  stderr (a file), the submitting process's environment, working folder and import path (a
  ``./my_optim.py:Opt`` or ``my_optim:Opt`` resolves as in the submitting process), and a
  command line naming its request, answer file and the submitting process;
- the signals the server was started with blocked (:data:`~harness.launch.worker.server.
  PARENT_SIGNALS`) unblocked, with their default actions;
- the end of the submitting process ends it within :data:`WATCH_S` (a thread watches it), and
  ``PR_SET_PDEATHSIG`` when the server exits (it exits when the process that started it does).

The server is a process of its own: what the user's code imports or changes (a global set in
torch) stays in the child, never in the submitting process, the server, the runs forked later
or the next sandbox. The server imported torch and Dynamo only, never initialising CUDA; the
child (the preflight runs on the CPU) inherits no GPU state.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import json
import os
import pickle
import resource
import signal
import sys
import threading
import time
import traceback
from multiprocessing.process import BaseProcess
from pathlib import Path

from harness.core.registry import load_object
from harness.launch.worker import server

NAME = "harness-sandbox"
"""The child's process name (multiprocessing's)."""


def start(request: Path, out: Path, err: Path) -> BaseProcess:
    """Fork the child of ``request`` (the sandbox's pickled items) from the preloaded server; it
    writes its answers to ``out``, its output to ``err``."""
    ctx = server.run_context(preloaded=True)
    setting = (dict(os.environ), os.getcwd(), list(sys.path))
    args = (str(request), str(out), str(err), os.getpid(), setting)
    child = ctx.Process(target=_forked, args=args, name=NAME)
    with server.callers_main_left_out():
        child.start()
    return child


def kill(child: BaseProcess) -> None:
    """SIGKILL the child and its session (what the user's code started: its group, also once
    the child has exited), and reap it."""
    if child.pid is not None:
        for send in (os.killpg, os.kill):  # the group once set up; the child before that
            with contextlib.suppress(ProcessLookupError, PermissionError):
                send(child.pid, signal.SIGKILL)
    child.join()


def _forked(
    request: str,
    out: str,
    err: str,
    parent: int,
    setting: tuple[dict[str, str], str, list[str]],
) -> None:
    """The forked child: set up as a fresh interpreter would be (module docstring), then the
    sandbox's items."""
    server_pid = os.getppid()
    os.setsid()
    sink = os.open(err, os.O_WRONLY | os.O_APPEND)
    for fd in (1, 2):
        os.dup2(sink, fd)
    os.close(sink)
    for signum in server.PARENT_SIGNALS:
        if signum != signal.SIGINT:  # SIGINT keeps Python's handler (KeyboardInterrupt)
            signal.signal(signum, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, server.PARENT_SIGNALS)
    environ, cwd, path = setting
    os.environ.clear()
    os.environ.update(environ)
    os.chdir(cwd)
    sys.path[:] = [cwd, *path]
    sys.argv[:] = [__file__, request, out, str(parent)]  # as the fresh child's command line
    die_with_parent(server_pid)
    threading.Thread(target=_end_with, args=(parent,), daemon=True).start()
    _serve(Path(request), Path(out))


WATCH_S = 0.1
"""How often the child looks whether the submitting process still runs (seconds)."""


def _end_with(parent: int) -> None:
    """End this process once ``parent`` (the submitting process) has ended, however it ended:
    the server exits after it, but a server that imports torch takes seconds to (a loaded
    machine)."""
    while alive(parent):
        time.sleep(WATCH_S)
    os._exit(1)


def _serve(request: Path, out: Path) -> None:
    """Each item in turn, a ``start`` line before it and a ``done`` line after."""
    function, warm, todo, memory = pickle.loads(request.read_bytes())
    if memory is not None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    for module in warm:  # start-up: not the items' time
        with contextlib.suppress(Exception):  # a broken install: the item's import says so
            importlib.import_module(module)
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


def die_with_parent(parent: int) -> None:
    """End this process when ``parent`` ends (Linux: ``PR_SET_PDEATHSIG``, SIGKILL; elsewhere
    nothing); at once if it has ended already (this process was adopted)."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)


PR_SET_PDEATHSIG = 1
"""``prctl`` option: the signal this process gets when its parent thread ends (Linux)."""


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process of that pid
    return True
