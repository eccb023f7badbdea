"""Names and paths that once escaped the results folder or acted as patterns (issue 11, item 4)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.core.provenance import provenance
from harness.core.result import RunResult
from harness.store.manifest import write_manifest
from harness.store.rows import write_result
from tests.inprocess import runs_in_process  # noqa: F401  # the fixture, by name
from tests.runs import tiny_run

pytestmark = pytest.mark.usefixtures("runs_in_process")  # runs train in the test's process

GRID = """
name: {name}
base: {{workload: quadratic, optimizer: adamw, lr: 3.0e-3, steps: 6, log_every: 2}}
seeds: {seeds}
local: {{base: {{}}}}
"""


def cli(*args: object) -> tuple[int, str]:
    r = CliRunner().invoke(main, [str(a) for a in args])
    return r.exit_code, r.output


def _grid(folder: Path, name: str, seeds: int = 1) -> Path:
    path = folder / f"grid-{len(list(folder.glob('grid-*')))}.yaml"
    path.write_text(textwrap.dedent(GRID.format(name=f'"{name}"', seeds=seeds)))
    return path


@pytest.mark.parametrize("name", ["..", ".", "sm*", "a/b", "x[1]", "", " lead", "-x"])
def test_a_grid_name_that_is_not_a_plain_folder_name_is_refused(tmp_path, name):
    results = tmp_path / "sub" / "results"
    code, out = cli("submit", _grid(tmp_path, name), "--local", "--results", results)
    assert code == 2, out
    assert out.count("error:") == 1 and "is not valid" in out and len(out.splitlines()) == 1
    assert not (tmp_path / "sub").exists()  # nothing written, not even next to the results
    code, out = cli("status", "--results", results, "--", name or "''")
    assert code == 2 and "is not valid" in out, out


def _rows(root: Path, grid: str, data: Path, n: int) -> None:
    """``n`` result rows (and a manifest) of ``grid`` without training."""
    runs = [tiny_run(data, grid=grid, seed=s) for s in range(n)]
    write_manifest(root, grid, runs)
    for run in runs:
        write_result(root, run, RunResult(status="completed", steps_done=6), provenance())


@pytest.mark.slow
def test_results_under_a_path_with_glob_characters_are_read_literally(tmp_path, prepared_data):
    # "res[1]" read as a pattern matches "res1"; "sm*" matches "small" and "smaller".
    root = tmp_path / "res[1]"
    code, out = cli(
        "submit", _grid(tmp_path, "small"), "--local", "--results", root, "--data", prepared_data
    )
    assert code == 0, out
    assert "launching 1" in out
    _rows(root, "smaller", prepared_data, 3)
    _rows(root, "sm*", prepared_data, 5)  # a folder an earlier version let through
    _rows(tmp_path / "res1", "small", prepared_data, 7)  # what the unescaped pattern reads

    code, out = cli("status", "small", "--results", root)
    assert code == 0, out
    assert next(ln for ln in out.splitlines() if ln.startswith("local")).split()[-1] == "1"
    code, out = cli(
        "query",
        "SELECT grid, count(*) AS n FROM runs GROUP BY grid ORDER BY grid",
        "--format",
        "csv",
        "--results",
        root,
    )
    assert code == 0 and out.split() == ["grid,n", "sm*,5", "small,1", "smaller,3"], out
    code, out = cli(
        "query",
        "SELECT count(*) AS n FROM curves",
        "--grid",
        "small",
        "--format",
        "csv",
        "--results",
        root,
    )
    assert code == 0 and out.split() == ["n", "3"], out  # 6 steps, a point every 2
    code, out = cli("compact", "small", "--results", root)
    assert code == 0 and "1 result rows" in out, out
    code, out = cli(
        "query",
        "SELECT count(*) AS n FROM runs",
        "--grid",
        "small",
        "--format",
        "csv",
        "--results",
        root,
    )
    assert code == 0 and out.split() == ["n", "1"], out


COMMANDS = {
    "status": ["status", "small"],
    "query": ["query", "SELECT count(*) FROM runs"],
    "compact": ["compact", "small"],
    "analyze": ["analyze", "best", "small", "--over", "lr"],
    "figures": ["figures", "small", "--figure", "loss_curves"],
    "cancel": ["cancel", "small"],
}


def test_a_results_path_with_a_backslash_and_a_glob_character_is_refused_up_front(
    tmp_path, prepared_data, monkeypatch
):
    """DuckDB cannot read it (its globbing splits at backslashes): every command refuses it in
    one line before anything is trained or written, rather than after training."""
    root = tmp_path / "a\\b[1]"
    grid = _grid(tmp_path, "small")
    code, out = cli("submit", grid, "--local", "--results", root, "--data", prepared_data)
    assert code == 2 and len(out.strip().splitlines()) == 1, out
    assert out.startswith(f"error: results folder {root}: a path with both '\\'"), out
    assert not root.exists()
    for name, args in COMMANDS.items():
        code, out = cli(*args, "--results", root)
        assert code == 2 and len(out.strip().splitlines()) == 1, (name, out)
        assert "cannot be read by DuckDB" in out, (name, out)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HARNESS_RESULTS", "a\\b{x}")  # relative, from the environment
    code, out = cli("status", "small")
    assert code == 2 and "cannot be read by DuckDB" in out, out


@pytest.mark.slow
def test_a_results_path_with_a_backslash_alone_is_read(tmp_path, prepared_data):
    root = tmp_path / "a\\b"
    code, out = cli(
        "submit", _grid(tmp_path, "small"), "--local", "--results", root, "--data", prepared_data
    )
    assert code == 0 and "launching 1" in out, out
    code, out = cli("query", "SELECT status FROM runs", "--format", "csv", "--results", root)
    assert code == 0 and out.split() == ["status", "completed"], out
