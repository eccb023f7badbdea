"""Results written by an earlier version stay readable, keep their run_ids and are appendable.

``tests/fixtures/legacy/results`` was written by harness 0.1.0 (commit bc472d4, before the
field catalogue and the sectioned run config) from ``tests/fixtures/legacy/legacy.yaml``: six
tiny runs over adamw, sgd_cclip (clip_value), coupled_adam (coupled_scale_exp), signum, and adam
with an SGD embedding optimizer. It is never regenerated.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.core.catalogue import FIELD_NAMES, with_values
from harness.data.catalogue import vocab_lookup
from harness.grid.load import load_grid
from harness.launch.moved import moved_ids
from harness.store.manifest import load_run, read_manifest, write_manifest
from harness.store.schema import row_schema
from tests.inprocess import runs_in_process  # noqa: F401  # the fixture, by name

pytestmark = pytest.mark.usefixtures("runs_in_process")  # runs train in the test's process

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "legacy"


@pytest.fixture
def legacy(tmp_path: Path) -> Path:
    """A copy of the old results folder (tests never write into the fixture)."""
    root = tmp_path / "results"
    shutil.copytree(FIXTURE / "results", root)
    return root


def _cli(*args: object) -> str:
    r = CliRunner().invoke(main, [str(a) for a in args])
    assert r.exit_code == 0, r.output
    return r.output


def test_old_rows_keep_every_column_and_are_queried_as_before(legacy: Path) -> None:
    old = pq.read_table(next((legacy / "legacy" / "runs").glob("*.parquet"))).schema.names
    assert set(old) <= set(row_schema().names)  # no column lost or renamed
    out = _cli(
        "query",
        "SELECT optimizer, status, clip_value FROM runs ORDER BY optimizer",
        "--results",
        legacy,
        "--format",
        "csv",
    )
    assert out.count("completed") == 6 and "sgd_cclip,completed,0.5" in out
    assert "completed" in _cli("status", "legacy", "--results", legacy)


def test_old_manifest_rows_hash_to_their_run_ids(legacy: Path, prepared_data: Path) -> None:
    runs = read_manifest(legacy, "legacy")
    assert len(runs) == 6
    assert all(load_run(legacy, "legacy", run_id).run_id == run_id for run_id in runs)
    grid = load_grid(FIXTURE / "legacy.yaml", vocab=vocab_lookup(prepared_data))
    assert [r.run_id for r in grid.runs] == list(runs)  # today's expansion: the same ids


def test_resubmitting_over_old_results_skips_them(legacy: Path, prepared_data: Path) -> None:
    out = _cli("submit", FIXTURE / "legacy.yaml", "--results", legacy, "--data", prepared_data)
    assert "skipped 6 with a result" in out and "launching 0" in out


def test_an_old_manifest_accepts_new_runs(legacy: Path) -> None:
    runs = list(read_manifest(legacy, "legacy").values())
    new = with_values(runs[0], lr=runs[0].optim.lr * 2)
    assert write_manifest(legacy, "legacy", [*runs, new]) == 1
    table = pq.read_table(legacy / "legacy" / "manifest.parquet")
    assert table.num_rows == 7 and table.schema.names[: 1 + len(FIELD_NAMES)] == [
        "run_id",
        *FIELD_NAMES,
    ]
    assert new.run_id in read_manifest(legacy, "legacy")


def test_a_row_with_a_new_hyperparameter_column_joins_old_rows(legacy: Path, prepared_data):
    # A new optimizer with its own hyperparameter adds a column the old rows lack: queried
    # and compacted together, the old rows read NULL there.
    from harness.core.provenance import provenance
    from harness.core.result import RunResult
    from harness.optim.registry import OPTIMIZERS
    from harness.optim.spec import Hyperparameter, OptimizerSpec
    from harness.store.rows import write_result
    from tests.runs import tiny_run

    spec = OptimizerSpec(
        cls="torch.optim:Adam",
        hyperparameters=(Hyperparameter(name="gamma", type=float, default=0.5),),
    )
    with OPTIMIZERS.temporarily("adam_gamma", spec):
        run = tiny_run(prepared_data, grid="legacy", optimizer="adam_gamma", gamma=0.3)
        assert write_manifest(legacy, "legacy", [run]) == 1
        result = RunResult(status="completed", steps_done=6, metrics={"val_loss": 5.0})
        write_result(legacy, run, result, provenance())
    sql = "SELECT optimizer, gamma, status FROM runs ORDER BY optimizer, run_id"
    before = _cli("query", sql, "--results", legacy, "--format", "csv")
    lines = before.strip().splitlines()
    assert len(lines) == 8 and "adam_gamma,0.3,completed" in lines
    assert sum(line.split(",")[1] == "" for line in lines[1:]) == 6  # the old rows: NULL
    assert "7 result rows" in _cli("compact", "legacy", "--results", legacy)
    assert _cli("query", sql, "--results", legacy, "--format", "csv") == before
    status = _cli("status", "legacy", "--results", legacy).splitlines()
    local = next(ln for ln in status if ln.startswith("local"))
    assert local.split()[1] == "1"  # the new (local-scale) run: completed, beside the old six


PATHS = Path(__file__).resolve().parents[1] / "fixtures" / "legacy_paths"
"""Written by harness at commit f51ed4a (file references entered run_id by their absolute path)
in a folder that no longer exists: ``paths.yaml`` over ``./my_opt.py:HalfSign``, two tiny runs."""


def test_results_with_absolute_paths_are_recognised_where_the_project_is_now(
    tmp_path: Path, prepared_data: Path
) -> None:
    project = tmp_path / "moved"
    shutil.copytree(PATHS, project)
    runs = read_manifest(project / "results", "paths")
    assert all(r.optim.optimizer.startswith("/tmp/legacy_abs/") for r in runs.values())
    grid = load_grid(project / "paths.yaml", vocab=vocab_lookup(prepared_data))
    assert {r.run_id for r in grid.runs}.isdisjoint(runs)  # the old ids name old paths
    assert {load_run(project / "results", "paths", i).run_id for i in runs} == set(runs)
    assert set(moved_ids(runs, grid.runs).values()) == {r.run_id for r in grid.runs}
    # --stale keep: the harness's own model and data code moved on since the fixture was written
    # (a stale result is a recognised one: the runs are matched first, then their inputs checked)
    out = _cli(
        "submit",
        project / "paths.yaml",
        "--results",
        project / "results",
        "--data",
        prepared_data,
        "--launcher",
        "local",
        "--stale",
        "keep",
    )
    assert "skipped 2 with a result" in out and "launching 0" in out


def test_a_project_moved_with_its_results_keeps_every_run_id(tmp_path, prepared_data) -> None:
    from harness.core.provenance import provenance
    from harness.core.result import RunResult
    from harness.launch.inputs import inputs_of
    from harness.store.rows import write_result

    first = tmp_path / "first"
    shutil.copytree(PATHS, first, ignore=shutil.ignore_patterns("results"))
    grid = load_grid(first / "paths.yaml", vocab=vocab_lookup(prepared_data))
    root = first / "results"
    write_manifest(root, "paths", list(grid.runs))
    for run in grid.runs:
        result = RunResult(status="completed", steps_done=2, metrics={"val_loss": 5.0})
        write_result(root, run, result, {**provenance(), **inputs_of(run, prepared_data)})
    moved = tmp_path / "elsewhere" / "project"
    shutil.copytree(first, moved)
    shutil.rmtree(first)
    again = load_grid(moved / "paths.yaml", vocab=vocab_lookup(prepared_data))
    assert [r.run_id for r in again.runs] == [r.run_id for r in grid.runs]
    assert again.runs[0].optim.optimizer != grid.runs[0].optim.optimizer  # another path
    out = _cli(
        "submit",
        moved / "paths.yaml",
        "--results",
        moved / "results",
        "--data",
        prepared_data,
        "--launcher",
        "local",
    )
    assert "skipped 2 with a result" in out and "launching 0" in out


@pytest.mark.slow
def test_two_files_of_one_name_in_two_folders_of_a_grid_are_two_runs(
    tmp_path: Path, prepared_data: Path
) -> None:
    """Identity is the path relative to the grid's folder (issue 18, item 6), not the file name:
    ``a/my_opt.py`` and ``b/my_opt.py`` are different optimizers, and both train."""
    for folder, gamma in (("a", 0.5), ("b", 1.0)):
        (tmp_path / folder).mkdir()
        text = (PATHS / "my_opt.py").read_text()
        (tmp_path / folder / "my_opt.py").write_text(text + f"\nWHICH = {gamma}\n")
    (tmp_path / "two.yaml").write_text(
        "name: two\n"
        "base: {model: tiny, seq_len: 16, batch_size: 4, steps: 2, eval_tokens: 512,"
        " log_every: 1, lr: 1.0e-3, gamma: 0.5}\n"
        "grid:\n  optimizer: [./a/my_opt.py:HalfSign, ./b/my_opt.py:HalfSign]\nseeds: [0]\n"
    )
    grid = load_grid(tmp_path / "two.yaml", vocab=vocab_lookup(prepared_data))
    assert len({r.run_id for r in grid.runs}) == 2
    assert {r.grid_dir for r in grid.runs} == {str(tmp_path.resolve())}
    root = tmp_path / "results"
    plan = _cli(
        "submit",
        tmp_path / "two.yaml",
        "--results",
        root,
        "--data",
        prepared_data,
        "--launcher",
        "local",
        "--dry-run",
    )
    assert plan.startswith("runs: 2\n"), plan
    out = _cli(
        "submit",
        tmp_path / "two.yaml",
        "--results",
        root,
        "--data",
        prepared_data,
        "--launcher",
        "local",
    )
    assert "launching 2" in out, out
    sql = "SELECT optimizer, status FROM runs ORDER BY optimizer"
    rows = _cli("query", sql, "--results", root, "--format", "csv").strip().splitlines()[1:]
    assert [r.rsplit(",", 1)[1] for r in rows] == ["completed", "completed"]
    assert {r.split("/")[-2] for r in rows} == {"a", "b"}
