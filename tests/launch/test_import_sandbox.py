"""The user's module is imported in the sandbox's child first (issue 44, item 2): a module that
exits, raises ``SystemExit``/``KeyboardInterrupt`` or hangs while it is imported is one line
naming it, exit 2, nothing queued, for ``submit``, ``submit --dry-run`` and ``bench`` (every
command: :func:`harness.core.registry.checked_imports` around each);
before, ``os._exit(0)`` at import ended ``submit`` with a silent 0.

Most tests run ``harness`` in the test's process (:func:`here`, the sandbox's child forked from
one torch server per pytest worker: a process per test imported torch and Dynamo again, 5 s of
CPU each); those whose subject is the process (a signal to ``submit``, ``submit`` killed, the
one-line refusal of ``bench`` from a process of its own) run it as a process of its own
(:func:`harness`)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from tests.local_submits import REPO
from tests.polling import wait_until

BODIES = {
    "os._exit(0)": ("import os\nos._exit(0)\n", "exited with status 0"),
    "sys.exit(3)": ("import sys\nsys.exit(3)\n", "failed: SystemExit: 3"),
    "KeyboardInterrupt": ("raise KeyboardInterrupt('at import')\n", "KeyboardInterrupt"),
    "a hang": (
        "import time\nwhile True:\n    time.sleep(1)\n",
        "did not finish within 3 s (set HARNESS_PREFLIGHT_TIMEOUT_S for more): importing",
    ),
}
"""What the user's module does when imported -> what its line says."""

GRID = "name: ev\nbase: {{workload: quadratic, lr: 0.01, steps: 4, {field}}}\nseeds: 1\n"

COMMANDS = {
    "submit": ["submit", "g.yaml", "--launcher", "local"],
    "submit --dry-run": ["submit", "g.yaml", "--dry-run", "--launcher", "local"],
    "bench": ["bench", "./evil.py:Opt", "--scale", "ci", "--dry-run"],
}


def harness(
    project: Path, *args: str, timeout: str = "3", tmpdir: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        **({"TMPDIR": tmpdir} if tmpdir else {}),
        "PYTHONPATH": str(REPO),
        "HARNESS_PREFLIGHT_TIMEOUT_S": timeout,
        "HARNESS_RESULTS": str(project / "results"),
    }
    argv = [sys.executable, "-c", "from harness.cli import main; main()", *args]
    return subprocess.run(
        argv, cwd=project, env=env, capture_output=True, text=True, timeout=300, check=False
    )


@pytest.fixture
def here(monkeypatch: pytest.MonkeyPatch):
    """``harness`` in this process, as :func:`harness` runs it in a process of its own: the
    project as working folder, the same environment; its exit status and output as a
    ``CompletedProcess``."""

    def run(project: Path, *args: str, timeout: str = "3") -> subprocess.CompletedProcess[str]:
        monkeypatch.chdir(project)
        monkeypatch.setenv("HARNESS_PREFLIGHT_TIMEOUT_S", timeout)
        monkeypatch.setenv("HARNESS_RESULTS", str(project / "results"))
        r = CliRunner().invoke(main, list(args))
        return subprocess.CompletedProcess(list(args), r.exit_code, r.stdout, r.stderr)

    return run


def _project(tmp_path: Path, body: str, field: str = "optimizer: ./evil.py:Opt") -> Path:
    (tmp_path / "evil.py").write_text(body)
    (tmp_path / "g.yaml").write_text(GRID.format(field=field))
    return tmp_path


def _refused(r: subprocess.CompletedProcess[str], project: Path, says: str) -> None:
    assert r.returncode == 2, r.stdout + r.stderr
    lines = [s for s in r.stderr.splitlines() if "evil.py" in s]
    assert len(lines) == 1 and says in lines[0], r.stderr
    assert "Traceback" not in r.stderr, r.stderr
    assert not list((project / "results").glob("*/manifest.parquet"))  # nothing queued


@pytest.mark.parametrize("command", ["submit", "submit --dry-run"])
@pytest.mark.parametrize("body", BODIES)
def test_a_module_that_exits_or_hangs_at_import_is_one_line(tmp_path, here, command, body):
    text, says = BODIES[body]
    project = _project(tmp_path, text)

    _refused(here(project, *COMMANDS[command]), project, says)


@pytest.mark.slow
def test_a_module_that_loops_forever_at_import_is_stopped_at_the_longer_limit(tmp_path, here):
    """A child still using CPU gets BUSY_FACTOR x the limit (as a first step that compiles
    does), then one line; one command only, at a 1 s limit (10 s of CPU)."""
    project = _project(tmp_path, "while True:\n    pass\n")
    says = "did not finish within 10 s (set HARNESS_PREFLIGHT_TIMEOUT_S for more): importing"
    _refused(here(project, *COMMANDS["submit --dry-run"], timeout="1"), project, says)


def test_bench_imports_the_users_module_in_the_sandbox(tmp_path):
    project = _project(tmp_path, BODIES["os._exit(0)"][0])

    _refused(harness(project, *COMMANDS["bench"]), project, "exited with status 0")


def test_a_users_workload_module_is_imported_in_the_sandbox(tmp_path, here):
    project = _project(tmp_path, BODIES["sys.exit(3)"][0])
    (project / "g.yaml").write_text(
        "name: ev\nbase: {workload: ./evil.py:W, optimizer: sgd, lr: 0.01, steps: 4}\n"
    )

    _refused(here(project, *COMMANDS["submit --dry-run"]), project, "SystemExit: 3")


def test_a_users_model_module_is_imported_in_the_sandbox(tmp_path, here, prepared_data):
    project = _project(tmp_path, BODIES["sys.exit(3)"][0])
    (project / "g.yaml").write_text(
        "name: ev\nbase: {model: ./evil.py:build, dataset: classics-bpe8k, optimizer: sgd, "
        "lr: 0.01, seq_len: 32, batch_size: 8, tokens: 1536}\n"
    )

    r = here(project, *COMMANDS["submit --dry-run"], "--data", str(prepared_data))

    _refused(r, project, "SystemExit: 3")


def test_a_module_that_imports_cleanly_is_imported_once_more_by_submit(tmp_path, here):
    project = _project(
        tmp_path,
        "import torch\n\nclass Opt(torch.optim.SGD):\n"
        "    def __init__(self, params, lr=0.1):\n        super().__init__(params, lr=lr)\n",
    )

    r = here(project, *COMMANDS["submit --dry-run"], timeout="5")  # torch: at start-up

    assert r.returncode == 0, r.stdout + r.stderr


CONSTRUCTOR = """
import os, pathlib, signal, sys, time
import torch

class Opt(torch.optim.SGD):
    def __init__(self, params, lr=0.1):
        super().__init__(params, lr=lr)
        pathlib.Path("child.pid").write_text(str(os.getpid()))
        {act}
        time.sleep(60)
"""


SIGNAL_SUBMIT = (
    "p = os.getppid();"
    " p = int(open(f'/proc/{p}/stat').read().rpartition(')')[2].split()[1])"
    " if b'forkserver' in open(f'/proc/{p}/cmdline', 'rb').read() else p;"
    " os.kill(p, signal.SIGTERM)"
)
"""The user's code sends SIGTERM to submit: its parent's parent where the child is forked from
the server that submit started (:mod:`harness.launch.sandbox_child`), its parent where the
server could not start (a ``TMPDIR`` too long for its socket: the child is spawned)."""


@pytest.mark.slow
def test_preflight_code_that_signals_submit_dies_with_it_and_leaves_no_folder(tmp_path):
    project = _project(tmp_path, CONSTRUCTOR.format(act=SIGNAL_SUBMIT))
    (project / "tmp").mkdir()

    r = harness(project, *COMMANDS["submit"], timeout="120", tmpdir=str(project / "tmp"))

    assert r.returncode == -signal.SIGTERM, r.stdout + r.stderr  # as SIGTERM ends it
    child = int((project / "child.pid").read_text())
    wait_until(lambda: not _alive(child), 5, "the sandbox's child ending with submit")
    assert not list((project / "tmp").glob("harness-sandbox-*"))  # its temporary folder removed


@pytest.mark.slow
def test_a_line_in_the_childs_answer_that_is_not_one_is_one_line(tmp_path, here):
    act = "open(sys.argv[2], 'a').write('garbage\\n')"
    project = _project(tmp_path, CONSTRUCTOR.format(act=act))

    r = here(project, *COMMANDS["submit"], timeout="120")

    _refused(r, project, "the child's answer is not one: 'garbage'")
    assert not _alive(int((project / "child.pid").read_text()))  # its group killed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"


@pytest.mark.slow
def test_the_sandboxs_child_dies_with_a_submit_killed_by_sigkill(tmp_path):
    project = _project(tmp_path, CONSTRUCTOR.format(act="pass"))
    env = {**os.environ, "PYTHONPATH": str(REPO), "HARNESS_PREFLIGHT_TIMEOUT_S": "120"}
    argv = [sys.executable, "-c", "from harness.cli import main; main()", *COMMANDS["submit"]]
    proc = subprocess.Popen(argv, cwd=project, env=env, stdout=subprocess.DEVNULL)
    try:
        wait_until(lambda: (project / "child.pid").exists(), 120, "the constructor running")
        child = int((project / "child.pid").read_text())
        proc.kill()  # no handler runs: the kernel ends the child (PR_SET_PDEATHSIG)
        proc.wait()
        wait_until(lambda: not _alive(child), 5, "the sandbox's child ending with submit")
    finally:
        if proc.poll() is None:
            proc.kill()


LEAKY = """
import json, os, resource, signal, sys
import torch

torch.harness_leak = getattr(torch, "harness_leak", 0) + 1  # a global set in torch at import


def seen(item):
    return json.dumps({
        "leak": torch.harness_leak,
        "pid": os.getpid(),
        "session": os.getsid(0),
        "cwd": os.getcwd(),
        "marked": os.environ.get("HARNESS_TEST_MARK"),
        "memory": resource.getrlimit(resource.RLIMIT_AS)[0],
        "blocked": sorted(int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, [])),
        "sigterm_default": signal.getsignal(signal.SIGTERM) == signal.SIG_DFL,
        "cuda": torch.cuda.is_initialized(),
    })
"""


def test_the_users_import_stays_in_its_sandbox_forked_as_a_fresh_child_would_be(
    tmp_path, monkeypatch
):
    """The sandbox's child is forked from the preloaded server (issue 40, point 2), not a
    fresh interpreter: what the user's module sets in torch at import is seen by that child
    only, not by the next sandbox (forked from the same server), nor by this process; the child
    gets what a fresh interpreter had (a session of its own, the caller's working folder and
    environment as they are now, the memory limit, no signal blocked, SIGTERM's default, no
    CUDA). Each assertion fails if the import ran in this process, in the server, or in a child
    not set up so."""
    import torch

    from harness.launch.sandbox import Limits, run_isolated

    (tmp_path / "leaky.py").write_text(LEAKY)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HARNESS_TEST_MARK", "set after the server started")
    limits = Limits(timeout_s=60, memory_bytes=8 * 2**30)

    first = [json.loads(a or "{}") for a in run_isolated("./leaky.py:seen", [0, 1], limits)]
    again = json.loads(run_isolated("./leaky.py:seen", [2], limits)[0] or "{}")

    assert [s["leak"] for s in [*first, again]] == [1, 1, 1], (first, again)
    assert not hasattr(torch, "harness_leak")  # not in the submitting process
    assert first[0]["pid"] == first[1]["pid"] != again["pid"] != os.getpid()
    for s in [*first, again]:
        assert s["session"] == s["pid"] != os.getsid(0)  # the terminal's Ctrl-C: not to it
        assert s["cwd"] == str(tmp_path) and s["marked"] == "set after the server started"
        assert s["memory"] == limits.memory_bytes
        assert s["blocked"] == [] and s["sigterm_default"] and not s["cuda"]
