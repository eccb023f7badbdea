"""Launcher backends are one package plus one registry entry, or an entry point
``harness.launchers`` (issue 20, item 2): each declares its own profile section, a typed frozen
dataclass; unknown keys and wrong types are one-line errors naming the valid ones."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.core.errors import UserError
from harness.launch.profile import load_profile
from tests.local_submits import REPO

TOY = '''
"""A backend from outside the harness: it records what it was handed in a file of its own (its
queue), and trains nothing."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.launch.contract import CancelReport, Launched, LaunchReport, QueueView
from harness.launch.profile import Backend


def _queue_file(root, grid):
    return Path(root) / grid / "submissions" / "toy" / "queued.txt"


@dataclass(frozen=True, kw_only=True, slots=True)
class ToySettings:
    """The toy's profile section."""

    greeting: str = "hello"
    """Printed when it launches."""
    copies: int = 1
    """How many times."""


class ToyLauncher:
    detaches = True

    def __init__(self, profile):
        self.profile = profile

    def plan(self, runs):
        return f"toy plan: {len(runs)} runs"

    def reconcile(self, root, grid):
        return {}

    def launch(self, runs, spec, seen=None):
        s = self.profile.settings
        path = _queue_file(spec.results_root, spec.grid)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a") as fh:
            fh.writelines(r.run_id + "\\n" for r in runs)
        print(" ".join([s.greeting] * s.copies), f"toy launched {len(runs)} runs")
        return Launched(len(runs), None)

    def wait(self, launched, spec, *, show_progress=True):
        return LaunchReport(launched.runs, {})


class ToyQueue:
    def _runs(self, root, grid):
        path = _queue_file(root, grid)
        return path.read_text().split() if path.exists() else None

    def queued(self, root, grid, run_ids):
        return set(self._runs(root, grid) or ()) & set(run_ids)

    def view(self, root, grid):
        runs = self._runs(root, grid)
        return None if runs is None else QueueView("toy", {"QUEUED": len(runs)}, ("t1",))

    def cancel(self, root, grid, wait_s):
        runs = self._runs(root, grid)
        if runs is None:
            return None
        _queue_file(root, grid).write_text("")
        return CancelReport(grid, ("t1",), len(runs), 0)


QUEUE = ToyQueue()
BACKEND = Backend(settings=ToySettings, launcher="toy_backend:ToyLauncher",
                  queue="toy_backend:QUEUE")
'''


def _install_toy(folder: Path) -> None:
    """The toy backend as an installed package: its module and an entry point naming it."""
    (folder / "toy_backend.py").write_text(TOY)
    info = folder / "toy_backend-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-backend\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[harness.launchers]\ntoy = toy_backend:BACKEND\n")


def _harness(argv: list[str], path: Path, launchers: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": f"{REPO}{os.pathsep}{path}",
        "HARNESS_LAUNCHERS": str(launchers),
    }
    code = "from harness.cli import main; main()"
    return subprocess.run(
        [sys.executable, "-c", code, *argv],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=300,
    )


@pytest.mark.slow
def test_a_backend_from_outside_the_package_is_one_entry_point(tmp_path):
    site, launchers = tmp_path / "site", tmp_path / "launchers"
    site.mkdir()
    launchers.mkdir()
    _install_toy(site)
    (launchers / "toy.yaml").write_text("kind: toy\ngreeting: hi\ncopies: 2\n")
    grid = tmp_path / "toyg.yaml"  # quadratic runs: the launcher is the subject, not the model
    grid.write_text(
        "name: toyg\nbase: {workload: quadratic, optimizer: sgd, lr: 0.01, steps: 6}\n"
        "seeds: [0, 1, 2]\n"
    )
    args = ["--launcher", "toy", "--results", str(tmp_path / "r")]

    plan = _harness(["submit", str(grid), "--dry-run", *args], site, launchers)
    done = _harness(["submit", str(grid), *args], site, launchers)

    assert plan.returncode == 0 and "toy plan: 3 runs" in plan.stdout, plan.stderr
    assert done.returncode == 0 and "hi hi toy launched 3 runs" in done.stdout, done.stderr
    # its queue takes part in status, in every submit (whatever the launcher) and in cancel
    root = ["--results", str(tmp_path / "r")]
    status = _harness(["status", "toyg", *root], site, launchers)
    assert status.returncode == 0 and "toy (1 submissions, jobs t1): QUEUED 3" in status.stdout
    local = ["--launcher", "local", *args[2:]]
    again = _harness(["submit", str(grid), *local], site, launchers)
    assert again.returncode == 0, again.stderr
    assert "skipped 3 with a result or already queued; launching 0" in again.stdout
    stop = _harness(["cancel", "toyg", *root], site, launchers)
    assert stop.returncode == 0 and "toyg: cancelled jobs t1; 3 runs cancelled" in stop.stdout
    done = _harness(["submit", str(grid), *args], site, launchers)
    assert done.returncode == 0 and "hi hi toy launched 3 runs" in done.stdout, done.stderr
    (launchers / "toy.yaml").write_text("kind: toy\ngreting: hi\n")
    bad = _harness(["submit", str(grid), *args], site, launchers)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    line = "unknown key 'greting'; valid keys: kind, checkpoint_every_s, keep_checkpoints, branch, "
    assert line + "greeting, copies" in bad.stderr
    (launchers / "toy.yaml").write_text("kind: toy\ncopies: two\n")
    bad = _harness(["submit", str(grid), *args], site, launchers)
    assert bad.returncode == 2 and "copies: expected int, got str 'two'" in bad.stderr


@pytest.mark.parametrize("kind", ["local", "slurm"])
@pytest.mark.parametrize("value", [0, -5])
def test_a_time_limit_of_no_time_is_refused(tmp_path, monkeypatch, kind, value):
    """B10's profile part: ``timeout_min: 0`` timed out every run at once."""
    monkeypatch.setenv("HARNESS_LAUNCHERS", str(tmp_path))
    (tmp_path / "odd.yaml").write_text(f"kind: {kind}\ntimeout_min: {value}\n")
    with pytest.raises(UserError) as e:
        load_profile("odd")
    assert "odd.yaml: timeout_min: must be >= " in str(e.value) and "\n" not in str(e.value)


def test_each_kind_reads_only_its_own_keys(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_LAUNCHERS", str(tmp_path))
    (tmp_path / "odd.yaml").write_text("kind: local\npartition: a100\n")
    with pytest.raises(UserError, match="unknown key 'partition'; valid keys: kind, "):
        load_profile("odd")
    (tmp_path / "odd.yaml").write_text("kind: slurm\nmax_parallel: 2\n")
    with pytest.raises(UserError, match="unknown key 'max_parallel'"):
        load_profile("odd")
    local = load_profile("local")
    assert (local.kind, local.checkpoint_every_s, local.settings.timeout_min) == ("local", 60, 600)
    assert load_profile("slurm-a100").settings.sbatch == {}
