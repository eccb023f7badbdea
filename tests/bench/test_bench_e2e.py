"""``harness bench`` end to end, training real runs: the A/A test (AdamW against AdamW finds no
evidence in any cell), a clearly worse candidate (plain SGD without momentum: worse in every
cell) that reuses every baseline run, and a bench through the SLURM test cluster with --wait.

The benches run the test suite's protocol (``tests/bench/quadratic.yaml``): ``protocols/ci.yaml``'s
rules on the quadratic workload (0.02 s a run against 1.5 s for the tiny GPT; what is checked
here, the phases, reuse, verdict, card and SLURM round trip, does not depend on the model).
Slow: about 70 runs per bench, each phase a submit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from harness.cli import main

QUADRATIC = Path(__file__).with_name("quadratic.yaml")


def _bench(*args: object) -> tuple[int, str, str]:
    r = CliRunner().invoke(main, ["bench", *map(str, args)], catch_exceptions=False)
    return r.exit_code, r.stdout, r.output


def _baseline_rows(root: Path, grid: str) -> dict[str, int]:
    """run_id -> the highest attempt among the rows of every AdamW (baseline) run: a run
    trained again would raise it (rows are written once per attempt, never replaced)."""
    from harness.store.db import newest_values
    from harness.store.rows import row_marks

    labels = newest_values(root, grid, ["label"])
    marks = row_marks(root, grid)
    return {r: marks[r] for r, (label,) in labels.items() if label == "AdamW"}


@pytest.mark.slow
def test_aa_no_evidence_then_sgd_worse_reusing_every_baseline_run(tmp_path: Path) -> None:
    root = tmp_path / "results"
    common = ("--protocol", QUADRATIC, "--results", root, "--data", tmp_path / "data")
    code, out, both = _bench("torch.optim:AdamW", *common, "--format", "json")
    assert code == 0, both
    aa = json.loads(out)
    readings = [c["reading"] for c in aa["comparisons"]]
    # the A/A test: the two arms train bit-identical runs on each seed (paired by seed, the
    # differences do not vary), so no cell has a test: no verdict, never better or worse
    assert readings == ["no verdict"] * 4, both
    assert all("identical seeds" in c["why"] for c in aa["comparisons"]), both
    assert all(c["n_candidate"] == c["n_baseline"] == 3 for c in aa["comparisons"])
    # its submits name the bench's protocol, not the runs' scale field (the grid as written)
    assert "runs planned (protocol quadratic.yaml)" in both and "full scale" not in both, both
    status = CliRunner().invoke(main, ["status", "bench_quadratic", "--results", str(root)])
    said = status.output
    assert said.startswith("grid bench_quadratic (protocol quadratic.yaml; "), said
    totals = {t["label"]: t for t in aa["totals"]}
    assert totals["AdamW"]["budget"] == totals["torch.optim:AdamW"]["budget"] == 5
    assert totals["AdamW"]["extension_runs"] > 0  # AdamW's best lr (1) on the edge: extended
    before = _baseline_rows(root, "bench_quadratic")
    assert len(before) == totals["AdamW"]["runs"]

    code, _, plan = _bench("torch.optim:SGD", *common, "--dry-run")
    assert code == 0, plan
    assert "AdamW (baseline): 20 runs; 20 already have a result (reused" in plan, plan

    code, out, both = _bench(
        "torch.optim:SGD", *common, "--format", "json", "--html", tmp_path / "card.html"
    )
    assert code == 0, both
    assert "AdamW: 20 of 20 tuning runs have a result from an earlier bench" in both, both
    # not one baseline run (tuning, extension, confirmation) trained again
    assert _baseline_rows(root, "bench_quadratic") == before
    sgd = json.loads(out)
    assert [c["reading"] for c in sgd["comparisons"]] == ["worse"] * 4, both
    assert all(c["difference"] > 0 and c["ci_low"] > 0 for c in sgd["comparisons"])
    card = (tmp_path / "card.html").read_text()
    assert "harness bench: torch.optim:SGD" in card and "worse 4" in card
    assert "workloads other than quadratic" in card and "models other than" not in card


@pytest.mark.slow
@pytest.mark.slurm
def test_bench_through_slurm_with_wait(slurm_env: Path) -> None:
    from tests.slurm_runs import write_profile

    # one array task per phase and arm: one process (one torch import) trains its runs
    launcher = write_profile(slurm_env / "launchers", "slurm-bench", runs_per_task=24)
    doc = yaml.safe_load(QUADRATIC.read_text())
    doc["launcher"] = launcher
    doc["budget"]["lr_points"] = 6  # 1e-4 ... 10: the best lr (1) inside, no extension phase
    doc["baselines"]["AdamW"]["search"]["lr"] = [1.0e-4, 10.0]
    protocol = slurm_env / "tiny.yaml"
    protocol.write_text(yaml.safe_dump(doc))
    root = slurm_env / "results"
    args = ("--protocol", protocol, "--results", root, "--data", slurm_env / "data")
    code, out, both = _bench("torch.optim:AdamW", *args, "--wait", "--format", "json")
    assert code == 0, both
    verdict = json.loads(out)
    assert all(c["n_candidate"] == 3 for c in verdict["comparisons"]), both
    readings = {c["reading"] for c in verdict["comparisons"]}
    assert readings <= {"no evidence", "no verdict", "not tuned"}, both  # A/A: never a reading
    again_code, _, again = _bench("torch.optim:AdamW", *args, "--wait")
    assert again_code == 0 and "training at most" in again and "launching 0" in again, again
