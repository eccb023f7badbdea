"""Every benchmark runs (``python benchmarks/<name>.py --quick``, a few seconds each) and prints
sane numbers, so that ``benchmarks/RESULTS.md`` stays reproducible from the code. CI runs the
throughput and scale benchmarks' quick modes; the others are in the nightly lane
(``bash scripts/nightly.sh``, marker ``nightly``)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # each test runs a benchmark

ROOT = Path(__file__).resolve().parents[2]
NUMBER = r"([\d,]+(?:\.\d+)?)"
SIGNED = r"(-?[\d,]+(?:\.\d+)?)"  # a difference of two measurements


def _quick(name: str) -> str:
    """The output of ``benchmarks/<name>.py --quick`` on the CPU (exit status 0)."""
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}  # the benchmarks' --device cpu
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / f"{name}.py"), "--quick"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    return proc.stdout


def _numbers(pattern: str, text: str) -> list[float]:
    found = [float(m.replace(",", "")) for m in re.findall(pattern, text)]
    assert found, f"{pattern!r} not in:\n{text}"
    return found


def test_throughput_quick_times_both_loops_on_the_same_computation() -> None:
    out = _quick("throughput")
    (ratio,) = _numbers(rf"ratio harness/bare: tokens/s {NUMBER}", out)
    assert 0.2 < ratio < 5, out  # the same steps: within noise of each other
    harness, bare = _numbers(rf"tokens/s {NUMBER} \[", out)
    assert harness > 0 and bare > 0
    (h_loss, b_loss) = re.findall(r"final train loss: harness ([\d.]+), bare ([\d.]+)", out)[0]
    assert float(h_loss) == pytest.approx(float(b_loss), abs=1e-3), out  # the same work


@pytest.mark.nightly
def test_packing_quick_trains_every_mode() -> None:
    out = _quick("packing")
    totals = _numbers(rf"total tok/s {NUMBER} \[", out)
    assert len(totals) == 3 and all(t > 0 for t in totals), out  # 2 sequential modes + 1 pack
    assert "(1.00x)" in out


@pytest.mark.nightly
def test_optim_step_quick_times_every_optimizer() -> None:
    from harness.optim.registry import OPTIMIZERS

    out = _quick("optim_step")
    rows = dict(re.findall(r"^(\w+)\s+[\d.]+\s+[\d.]+\s+([\d.]+)$", out, re.MULTILINE))
    built_in = {n for n in OPTIMIZERS if not n.startswith("test_")}  # others: registered by tests
    assert set(rows) == built_in, out
    assert all(0 < float(r) < 100 for r in rows.values()), rows


@pytest.mark.nightly
def test_overhead_quick_expands_writes_compacts_and_queries() -> None:
    out = _quick("overhead")
    assert "expand: 1,000 runs, 3 varying axes" in out
    assert re.search(r"write: 1,000 rows .* = [\d,]+ rows/s; per row p50 [\d.]+ ms", out), out
    assert "compact: 1,000 rows, 30,000 curve points from 2,000 files" in out, out
    compacted = re.findall(r"query compacted .* connect\+query\s+([\d.]+) ms.*\((\d+) rows\)", out)
    assert len(compacted) == 3, out
    assert all(float(ms) > 0 and int(rows) > 0 for ms, rows in compacted), out


@pytest.mark.nightly
def test_startup_quick_trains_runs_through_one_warm_slot() -> None:
    out = _quick("startup")
    (one,) = _numbers(rf"1 run: CPU {NUMBER} s", out)
    (many,) = _numbers(rf"3 runs: CPU {NUMBER} s", out)
    # a difference of two noisy CPU times: a 50-step quadratic run costs less than their noise,
    # so the marginal cost may print as negative
    (per_run,) = _numbers(rf"per run \(marginal\): CPU {SIGNED} s", out)
    assert one > 0 and many < 2 * one, out  # one process for all three: not three start-ups
    assert per_run < one / 2, out  # each further run far less than the first (imports: seconds)
    assert re.search(rf"harness --help CPU {NUMBER} s .* harness status CPU {NUMBER} s", out), out


def test_scale_quick_builds_a_store_through_the_write_path_and_measures_commands() -> None:
    out = _quick("scale")
    assert "150 runs x 20 points: wrote 150 runs through write_or_spill" in out, out
    measured = re.findall(
        rf"^  (query runs|status|analyze best)\s+{NUMBER}\s+\[[\d., ]+\]\s+{NUMBER}\s",
        out,
        re.MULTILINE,
    )
    assert {name for name, _, _ in measured} == {"query runs", "status", "analyze best"}, out
    assert all(float(cpu) > 0 and float(mb) > 0 for _, cpu, mb in measured), out
    assert "(exit" not in out, out


@pytest.mark.nightly
def test_resubmit_quick_times_a_no_op_resubmit_of_finished_runs() -> None:
    out = _quick("resubmit")  # it asserts that the re-submit skipped every run and launched none
    cpus = _numbers(rf"no-op re-submit CPU {NUMBER} s \[", out)
    assert len(cpus) == 2 and all(c > 0 for c in cpus), out  # per-run files, then compacted


@pytest.mark.nightly
def test_tracking_quick_times_every_track_setting() -> None:
    out = _quick("tracking")
    rows = re.findall(
        r"^\| (.+?) \| ([\d.]+) \[[\d.]+, [\d.]+\] \| [+-][\d.]+% \| ([\d.]+) \|", out, re.MULTILINE
    )
    assert [r[0] for r in rows] == [
        "nothing (default)",
        "buckets",
        "mu_norm, rho",
        "embedding",
        "embedding, head, buckets",
    ], out
    assert all(float(cpu) > 0 for _, cpu, _ in rows), out
    assert "4 steps of 64 x 8 tokens, eval every 2 steps" in out, out


@pytest.mark.nightly
def test_branching_quick_trains_the_budget_grid_both_ways() -> None:
    out = _quick("branching")
    assert "branch off : CPU s" in out and "steps trained 35 of 35" in out, out  # 5 + 10 + 20
    assert "branch auto: CPU s" in out and "steps trained 23 of 35" in out, out  # 20 + 1 + 2
    (ratio,) = _numbers(rf"CPU time with branching / without: {NUMBER}", out)
    assert 0 < ratio < 2, out
