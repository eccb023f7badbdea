"""A corrupt file is moved aside with a warning, its run counts as missing, and nothing else
breaks (issue 11, item 5)."""

from __future__ import annotations

import json
import textwrap
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from harness.analysis.testing import write_run
from harness.cli import main
from harness.core import paths
from harness.data.catalogue import vocab_lookup
from harness.grid.load import load_grid
from harness.launch.slurm.records import read_submissions
from harness.store.layout import GRACE_S, remove_due
from harness.store.manifest import write_manifest
from harness.store.rows import newest_curve_file, newest_row_file
from tests.inprocess import runs_in_process  # noqa: F401  # the fixture, by name

pytestmark = pytest.mark.usefixtures("runs_in_process")  # runs train in the test's process

GRID = """
name: cg
base: {workload: quadratic, optimizer: adamw, steps: 6, log_every: 2}
grid: {lr: [1.0e-3, 3.0e-3]}
seeds: 2
local: {base: {}}
"""


def cli(*args: object) -> tuple[int, str]:
    r = CliRunner().invoke(main, [str(a) for a in args])
    return r.exit_code, r.output


@pytest.fixture
def results(tmp_path: Path, prepared_data: Path) -> tuple[Path, Path, list[str]]:
    """(results root, grid file, run_ids): the 4 runs of grid ``cg`` with rows and curves."""
    grid_file = tmp_path / "cg.yaml"
    grid_file.write_text(textwrap.dedent(GRID))
    runs = load_grid(grid_file, vocab=vocab_lookup(prepared_data), local=True).runs
    root = tmp_path / "results"
    write_manifest(root, "cg", runs)
    for i, run in enumerate(runs):
        write_run(root, run, val_ppl=100.0 + i, points=3, source=None)  # trained here
    return root, grid_file, [r.run_id for r in runs]


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _row(root: Path, run_id: str) -> Path:
    found = newest_row_file(root, "cg", run_id)
    assert found is not None
    return found


def _curve(root: Path, run_id: str) -> Path:
    found = newest_curve_file(root, "cg", run_id)
    assert found is not None
    return found


def _status_counts(out: str) -> list[str]:
    return next(ln for ln in out.splitlines() if ln.startswith("local")).split()[1:]


COMMANDS = {
    "query": ["query", "SELECT count(*) AS n FROM runs", "--format", "csv"],
    "status": ["status", "cg"],
    "analyze": ["analyze", "best", "cg", "--over", "lr"],
    "figures": ["figures", "cg", "--figure", "lr_sensitivity"],
    "compact": ["compact", "cg"],
}

EXIT = {"figures": (0, 1)}
"""Exit statuses that say the command ran: figures exits 1 where every figure was skipped (here
the one asked for has one learning rate left), 0 where one was drawn."""


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_moves_a_truncated_row_and_curve_aside(results, command):
    root, _, ids = results
    row0, curve1, row1 = _row(root, ids[0]), _curve(root, ids[1]), _row(root, ids[1])
    _truncate(row0)
    _truncate(curve1)

    code, out = cli(*COMMANDS[command], "--results", root)

    assert code in EXIT.get(command, (0,)), out
    assert "Traceback" not in out
    warnings = [ln for ln in out.splitlines() if ln.startswith("warning:")]
    assert len(warnings) == 3, out  # the row, the curve, and the row of the corrupt curve
    assert all("moved to" in w and "quarantine" in w for w in warnings)
    moved = sorted(
        p.relative_to(paths.quarantine_dir(root, "cg")).as_posix()
        for p in paths.quarantine_dir(root, "cg").rglob("*.parquet")
    )
    folder = paths.grid_dir(root, "cg")
    assert moved == sorted(p.relative_to(folder).as_posix() for p in (row0, curve1, row1))
    code, out = cli("status", "cg", "--results", root)
    assert _status_counts(out) == ["2", "0", "0", "0", "0", "0", "2", "4"]  # 2 missing, 4 in all


@pytest.mark.slow
def test_submit_runs_a_run_with_a_corrupt_curve_again(results, prepared_data):
    root, grid_file, ids = results
    _truncate(_curve(root, ids[2]))

    code, out = cli("submit", grid_file, "--local", "--results", root, "--data", prepared_data)

    assert code == 0, out
    assert "skipped 3 with a result" in out and "launching 1" in out
    code, out = cli("status", "cg", "--results", root)
    assert _status_counts(out) == ["4", "0", "0", "0", "0", "0", "0", "4"]


@pytest.mark.slow
def test_a_corrupt_manifest_is_moved_aside_and_planned_anew(results, prepared_data):
    root, grid_file, _ = results
    paths.manifest_path(root, "cg").write_bytes(b"not parquet at all")

    code, out = cli(
        "query", "SELECT count(*) AS n FROM manifest", "--format", "csv", "--results", root
    )
    assert code == 0 and "manifest.parquet: corrupt Parquet file" in out, out
    assert out.splitlines().count("0") == 1  # an empty manifest view
    code, out = cli("submit", grid_file, "--local", "--results", root, "--data", prepared_data)
    assert code == 0 and "skipped 4 with a result" in out, out
    code, out = cli(
        "query", "SELECT count(*) AS n FROM manifest", "--format", "csv", "--results", root
    )
    assert out.split() == ["n", "4"]


def test_a_corrupt_submission_record_is_moved_aside(tmp_path):
    records = paths.submissions_dir(tmp_path, "cg") / "records"
    records.mkdir(parents=True)
    good = {
        "job_id": "12",
        "array": True,
        "submitted_at": "2026-01-01T00:00:00+00:00",
        "launcher": "p",
        "log_dir": "/x",
        "tasks": [["a"], ["b"]],
    }
    (records / "12.json").write_text(json.dumps(good))
    (records / "13.json").write_text(json.dumps(good)[:40])  # cut short
    (records / "14.json").write_text(json.dumps({**good, "job_id": "14", "tasks": 3}))

    subs = read_submissions(tmp_path, "cg")

    assert [s.job_id for s in subs] == ["12"]
    aside = sorted(p.name for p in (paths.quarantine_dir(tmp_path, "cg")).rglob("*.json"))
    assert aside == ["13.json", "14.json"]


def test_a_corrupt_dataset_metadata_file_is_one_line(tmp_path, prepared_data):
    data = tmp_path / "mine"
    data.mkdir()
    for name in ("train.bin", "val.bin"):
        (data / name).write_bytes((prepared_data / "classics-bpe8k" / name).read_bytes())
    (data / "meta.json").write_text('{"vocab_size": 81')  # cut short
    grid = tmp_path / "mine.yaml"
    spec = f"{{model: tiny, dataset: {data}, optimizer: adamw}}"  # a GPT: it reads the data
    grid.write_text(f"name: mine\nbase: {spec}\nlocal: {{base: {{}}}}\n")

    code, out = cli("submit", grid, "--local", "--results", tmp_path / "results")

    assert code == 2 and len(out.strip().splitlines()) == 1, out
    assert out.startswith("error: ") and f"cannot read {data / 'meta.json'}: " in out
    assert not (tmp_path / "results").exists()


def _garble(path: Path, where: str) -> None:
    """Flip 32 bytes inside ``path``, its ends (magic bytes, footer length) left intact:
    ``header`` the first page's header (DuckDB: a TProtocolException), ``data`` the middle of
    the pages (only a checksum tells)."""
    data = bytearray(path.read_bytes())
    footer = int.from_bytes(data[-8:-4], "little")
    start = 4 if where == "header" else (len(data) - 8 - footer) // 2
    for i in range(start, start + 32):
        data[i] ^= 0x5A
    path.write_bytes(bytes(data))


def _compacted(root: Path, ids: list[str], kind: str) -> Path:
    """Compact the rows and curves of ``ids[:2]`` (the others stay per-run files) and remove the
    per-run files it covered (as once readers had their grace); returns the consolidated
    ``kind`` file."""
    held = tmp = root.parent / "held"
    tmp.mkdir()
    others = [p for run_id in ids[2:] for p in (_row(root, run_id), _curve(root, run_id))]
    for p in others:
        p.rename(held / f"{p.parent.name}-{p.name}")
    code, out = cli("compact", "cg", "--results", root)
    assert code == 0, out
    remove_due(root, "cg", now=time.time() + GRACE_S)  # later: the generation is all there is
    for p in others:
        (held / f"{p.parent.name}-{p.name}").rename(p)
    return paths.compact_dir(root, "cg") / f"{kind}-000001.parquet"


TARGETS = ["row", "curve", "manifest", "compacted rows", "compacted curves"]
MISSING_AFTER = {"row": 1, "curve": 1, "manifest": 0, "compacted rows": 2, "compacted curves": 2}


@pytest.mark.parametrize("where", ["header", "data"])
@pytest.mark.parametrize("target", TARGETS)
def test_a_file_garbled_in_the_middle_is_moved_aside_like_a_truncated_one(results, target, where):
    root, _, ids = results
    path = {
        "row": lambda: _row(root, ids[0]),
        "curve": lambda: _curve(root, ids[0]),
        "manifest": lambda: paths.manifest_path(root, "cg"),
        "compacted rows": lambda: _compacted(root, ids, "runs"),
        "compacted curves": lambda: _compacted(root, ids, "curves"),
    }[target]()
    cli("status", "cg", "--results", root)  # checked whole once: remembered by its stamp
    _garble(path, where)

    for command in COMMANDS:
        code, out = cli(*COMMANDS[command], "--results", root)
        assert code in EXIT.get(command, (0,)), (command, out)
        assert "Traceback" not in out and "TProtocolException" not in out, (command, out)
    if not target.startswith("compacted"):  # (compact writes a new generation 1 there)
        assert not path.exists()
    aside = paths.quarantine_dir(root, "cg") / path.relative_to(paths.grid_dir(root, "cg"))
    assert aside.exists()
    code, out = cli("status", "cg", "--results", root)
    assert code == 0 and "Traceback" not in out, out
    if target != "manifest":
        missing = _status_counts(out)[-2]
        assert missing == str(MISSING_AFTER[target]), out


@pytest.mark.slow
def test_runs_whose_consolidated_curves_are_lost_are_trained_again(results, prepared_data):
    """A truncated consolidated curve file: the rows of the runs whose curves it held are moved
    aside too, so those runs count as missing and the next submit trains them again."""
    root, grid_file, ids = results
    _truncate(_compacted(root, ids, "curves"))

    code, out = cli("status", "cg", "--results", root)

    assert code == 0 and "Traceback" not in out, out
    warnings = [ln for ln in out.splitlines() if ln.startswith("warning:")]
    assert len(warnings) == 2 and "curves-000001.parquet" in warnings[0], out
    assert "the curves of 2 run(s) whose rows it holds are lost" in warnings[1], out
    assert _status_counts(out) == ["2", "0", "0", "0", "0", "0", "2", "4"]
    quarantined = paths.quarantine_dir(root, "cg") / "compact" / "runs-000001.no-curves.parquet"
    assert sorted(pq.read_table(quarantined).column("run_id").to_pylist()) == sorted(ids[:2])
    code, out = cli("submit", grid_file, "--local", "--results", root, "--data", prepared_data)
    assert code == 0 and "skipped 2 with a result" in out and "launching 2" in out, out
    code, out = cli(
        "query",
        "SELECT run_id, count(*) AS n FROM curves GROUP BY run_id",
        "--format",
        "csv",
        "--results",
        root,
    )
    assert code == 0 and len(out.split()) == 5, out  # every run has its curve again
