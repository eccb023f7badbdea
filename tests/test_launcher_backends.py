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
from tests.local_submits import REPO, grid_file

TOY = '''
"""A backend from outside the harness: it records what it was handed, and trains nothing."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.launch.contract import Launched, LaunchReport
from harness.launch.profile import Backend


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

    def exclude_queued(self, root, grid, runs):
        return list(runs)

    def launch(self, runs, spec, seen=None):
        s = self.profile.settings
        print(" ".join([s.greeting] * s.copies), f"toy launched {len(runs)} runs")
        return Launched(len(runs), None)

    def wait(self, launched, spec, *, show_progress=True):
        return LaunchReport(launched.runs, {})


BACKEND = Backend(settings=ToySettings, launcher="toy_backend:ToyLauncher")
'''


def _install_toy(folder: Path) -> None:
    """The toy backend as an installed package: its module and an entry point naming it."""
    (folder / "toy_backend.py").write_text(TOY)
    info = folder / "toy_backend-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-backend\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[harness.launchers]\ntoy = toy_backend:BACKEND\n")


def _harness(argv: list[str], path: Path, launchers: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{path}",
           "HARNESS_LAUNCHERS": str(launchers)}  # fmt: skip
    code = "from harness.cli import main; main()"
    return subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True,
                          env=env, cwd=REPO, timeout=300)  # fmt: skip


def test_a_backend_from_outside_the_package_is_one_entry_point(tmp_path, prepared_data):
    site, launchers = tmp_path / "site", tmp_path / "launchers"
    site.mkdir()
    launchers.mkdir()
    _install_toy(site)
    (launchers / "toy.yaml").write_text("kind: toy\ngreeting: hi\ncopies: 2\n")
    grid = grid_file(tmp_path, "toyg", [0, 1, 2], 6)
    args = ["--launcher", "toy", "--results", str(tmp_path / "r"), "--data", str(prepared_data)]

    plan = _harness(["submit", str(grid), "--dry-run", *args], site, launchers)
    done = _harness(["submit", str(grid), *args], site, launchers)

    assert plan.returncode == 0 and "toy plan: 3 runs" in plan.stdout, plan.stderr
    assert done.returncode == 0 and "hi hi toy launched 3 runs" in done.stdout, done.stderr
    (launchers / "toy.yaml").write_text("kind: toy\ngreting: hi\n")
    bad = _harness(["submit", str(grid), *args], site, launchers)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    line = "unknown key 'greting'; valid keys: kind, checkpoint_every_s, keep_checkpoints, "
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
