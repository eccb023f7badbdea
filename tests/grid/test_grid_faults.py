"""Grid values that once passed the dry run and broke later (issue 20, B9 and B10): a seed count
or an expansion too large for memory, and non-finite numbers."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from tests.inprocess import runs_in_process  # noqa: F401  # the fixture, by name

pytestmark = pytest.mark.usefixtures("runs_in_process")  # runs train in the test's process

GRID = """
name: g
base: {{model: tiny, dataset: classics-bpe8k, optimizer: adamw, seq_len: 32, batch_size: 8,
        tokens: 1536, lr: 1.0e-3}}
local: {{base: {{tokens: 1536}}}}
{extra}
"""


def _grid(tmp_path: Path, extra: str) -> Path:
    path = tmp_path / "g.yaml"
    path.write_text(textwrap.dedent(GRID.format(extra=textwrap.dedent(extra))))
    return path


def _dry_run_in_little_memory(grid: Path) -> tuple[int, str, int]:
    """(exit code, output, peak memory in kB) of ``submit --dry-run`` in a process whose address
    space is capped at 2 GB (the expansion of today's code dies there with a MemoryError)."""
    code = f"""
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
        from pathlib import Path
        from click.testing import CliRunner
        from harness.cli import main
        r = CliRunner().invoke(main, ["submit", {str(grid)!r}, "--dry-run", "--launcher", "local"])
        status = Path("/proc/self/status").read_text().splitlines()
        print(r.exit_code, next(ln.split()[1] for ln in status if ln.startswith("VmHWM:")))
        print(r.output, end="")
    """
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120
    )
    first, _, output = done.stdout.partition("\n")
    assert done.returncode == 0 and first, done.stdout[-2000:] + done.stderr[-2000:]
    exit_code, peak_kb = (int(x) for x in first.split())
    return exit_code, output, peak_kb


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ("seeds: 100000000", "seeds: 100,000,000 seeds, more than the 100,000 runs"),
        (
            "grid: {lr: [1,2,3,4,5,6,7,8,9,10], warmup_steps: [1,2,3,4,5,6,7,8,9,10]}\n"
            "seeds: 10000",
            "expands to 1,000,000 runs (100 combinations x 10,000 seeds)",
        ),
        (
            "grid: {lr: [1,2,3,4,5,6,7,8,9,10], beta1: [1,2,3,4,5,6,7,8,9,10],\n"
            "       beta2: [1,2,3,4,5,6,7,8,9,10], eps: [1,2,3,4,5,6,7,8,9,10],\n"
            "       weight_decay: [1,2,3,4,5,6,7,8,9,10], warmup_steps: [1,2,3,4,5,6,7,8,9,10]}",
            "expands to 1,000,000 runs (at grid.warmup_steps)",
        ),
    ],
    ids=["seeds", "runs", "axes"],
)
def test_a_grid_too_large_to_expand_is_one_line_in_little_memory(tmp_path, extra, says):
    exit_code, output, peak_kb = _dry_run_in_little_memory(_grid(tmp_path, extra))

    assert exit_code == 2 and len(output.strip().splitlines()) == 1, output[-2000:]
    assert output.startswith("error: ") and says in output, output
    assert peak_kb < 500_000


@pytest.mark.parametrize(
    ("extra", "key"),
    [
        ("grid: {lr: [.nan]}", "lr: nan is not a finite number"),
        ("grid: {lr: [.inf]}", "lr: inf is not a finite number"),
        ("grid: {beta2: [-.inf]}", "beta2: -inf is not a finite number"),
        ("grid: {lr: ['nan']}", "lr: nan is not a finite number"),
        ("grid: {weight_decay: ['1e308 * 10']}", "weight_decay: expression '1e308 * 10' is inf"),
        ("grid: {warmup_steps: ['1e308 * 10']}", "warmup_steps: expression '1e308 * 10' is inf"),
    ],
)
def test_a_non_finite_number_is_one_line_at_the_dry_run(tmp_path, prepared_data, extra, key):
    grid = _grid(tmp_path, extra)
    results = tmp_path / "results"
    for args in (
        ["--dry-run", "--launcher", "local"],
        ["--local", "--results", str(results), "--data", str(prepared_data)],
    ):
        r = CliRunner().invoke(main, ["submit", str(grid), *args])

        assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1, r.output
        assert r.output.startswith("error: ") and key in r.output, r.output
        assert not results.exists()
