"""What every command tells its user: help for each command and flag, the flags it requires
documented in the README, DuckDB's hints kept in SQL errors, a closed pipe met quietly."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from harness.analysis.rows.direction import NO_DIRECTION
from harness.analysis.testing import make_run, write_run
from harness.cli import COMMANDS, main
from harness.core.registry import load_object
from tests.inprocess import runs_in_process  # noqa: F401  # the fixture, by name

pytestmark = pytest.mark.usefixtures("runs_in_process")  # runs train in the test's process

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text()


def _commands() -> Iterator[tuple[str, click.Command]]:
    def walk(cmd: click.Command, path: str) -> Iterator[tuple[str, click.Command]]:
        if isinstance(cmd, click.Group):
            for name in cmd.list_commands(click.Context(cmd)):
                sub = cmd.get_command(click.Context(cmd), name)
                assert sub is not None
                yield from walk(sub, f"{path} {name}")
        yield path, cmd

    for name in COMMANDS.names():
        yield from walk(load_object(COMMANDS[name]), name)


def _readme_commands() -> list[str]:
    """README lines that run harness, continuation lines joined."""
    return [ln for ln in README.replace("\\\n", " ").splitlines() if "harness " in ln]


def test_every_command_and_flag_has_help_and_required_flags_are_documented():
    lines = _readme_commands()
    seen = 0
    for path, cmd in _commands():
        assert (cmd.help or "").strip(), f"harness {path}: no help"
        for p in cmd.params:
            if not isinstance(p, click.Option) or p.name in ("help", "version"):
                continue
            assert (p.help or "").strip(), f"harness {path} {p.opts[0]}: no help"
            if p.required:
                seen += 1
                flag = p.opts[0]
                assert any(
                    f"harness {path} " in ln and any(f" {o} " in f"{ln} " for o in p.opts)
                    for ln in lines
                ), f"README: no example of harness {path} with its required {flag}"
                assert flag in cmd.get_help(click.Context(cmd))
    assert seen >= 10  # gap, crossover, compare, speedup, import, report


def test_goal_is_documented_for_metrics_of_no_direction():
    """`analyze best --metric max_loss_rise` needs --goal: its help and the README say so."""
    assert "max_loss_rise" in NO_DIRECTION
    for path, cmd in _commands():
        goal = [p for p in cmd.params if p.name == "goal"]
        if goal:
            assert all(m in (goal[0].help or "") for m in NO_DIRECTION), path
    text = " ".join(README.split())
    assert all(f"`{m}`" in text for m in NO_DIRECTION)
    assert "--metric max_loss_rise --goal min" in text


@pytest.fixture
def results(tmp_path: Path) -> Path:
    for lr in (1e-3, 2e-3):
        write_run(tmp_path, make_run(grid="g", lr=lr), val_ppl=20.0 + 1000 * lr)
    return tmp_path


@pytest.mark.parametrize(
    ("args", "hint"),
    [
        (["query", "SELECT * FROM runz"], 'Did you mean "runs"?'),
        (["query", "SELECT val_pl FROM runs"], 'Candidate bindings: "val_ppl"'),
        (["analyze", "best", "g", "--where", "val_pl < 3"], 'Candidate bindings: "val_ppl"'),
    ],
)
def test_sql_errors_keep_duckdbs_hint(results: Path, args: list[str], hint: str):
    res = CliRunner().invoke(main, [*args, "--results", str(results)])
    assert res.exit_code == 2
    first, second = res.output.strip().splitlines()
    assert first.startswith("error: ") and "Error" in first
    assert hint in second


@pytest.mark.parametrize(
    "args",
    [
        ["submit", "grids/adam_betas.yaml", "--dry-run"],
        ["submit", "grids/optimizer_gap.yaml", "--dry-run", "--format", "csv"],
        ["query", "SELECT * FROM runs"],
        ["analyze", "best", "g"],
        ["--help"],
    ],
)
def test_a_closed_pipe_is_quiet(results: Path, args: list[str]):
    """`harness ... | head`: the reader is gone before the command writes; no error message,
    exit code 1 (click's convention for a closed pipe)."""
    read, write = os.pipe()
    os.close(read)
    env = {**os.environ, "HARNESS_RESULTS": str(results)}
    proc = subprocess.run(
        [sys.executable, "-c", "from harness.cli import main; main()", *args],
        stdout=write,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env=env,
        timeout=120,
    )
    os.close(write)
    assert proc.stderr == "" and proc.returncode == 1, (proc.returncode, proc.stderr)


def test_the_command_list_is_read_from_source_as_click_would_show_it():
    """``harness --help`` lists the commands without importing them (issue 28): each line is
    what the imported command would say."""
    from harness.cli import short_help

    for name in COMMANDS.names():
        command = load_object(COMMANDS[name])
        for limit in (45, 80):
            assert short_help(name, limit) == command.get_short_help_str(limit), name


def test_help_imports_no_command():
    """``harness --help`` in a fresh process imports no command module, nor scipy, torch, DuckDB
    or pandas (issue 28: it took seconds)."""
    code = (
        "import sys; sys.argv = ['harness', '--help']\n"
        "from harness.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "heavy = ('scipy', 'torch', 'duckdb', 'pandas', 'pyarrow', 'matplotlib')\n"
        "print(sorted(m for m in sys.modules if m.startswith('harness.cli.')"
        " or m.partition('.')[0] in heavy))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )
    assert "Commands:" in proc.stdout and "submit" in proc.stdout
    assert proc.stdout.strip().splitlines()[-1] == "[]", proc.stdout
