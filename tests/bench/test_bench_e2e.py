"""``harness bench`` end to end, training real runs: the A/A test (AdamW against AdamW finds no
evidence in any cell), a clearly worse candidate (plain SGD without momentum: worse in every
cell) that reuses every baseline run, and a bench through the SLURM test cluster with --wait.

Slow: the CI protocol (``protocols/ci.yaml``) is about 70 tiny runs per bench."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from harness.cli import main

PROTOCOLS = Path(__file__).resolve().parents[2] / "protocols"


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
def test_aa_no_evidence_then_sgd_worse_reusing_every_baseline_run(
    tmp_path: Path, prepared_data: Path
) -> None:
    root = tmp_path / "results"
    common = ("--scale", "ci", "--results", root, "--data", prepared_data)
    code, out, both = _bench("torch.optim:AdamW", *common, "--format", "json")
    assert code == 0, both
    aa = json.loads(out)
    readings = [c["reading"] for c in aa["comparisons"]]
    # the A/A test: the two arms train bit-identical runs on each seed (paired by seed, the
    # differences do not vary), so no cell has a test: no verdict, never better or worse
    assert readings == ["no verdict"] * 4, both
    assert all("identical seeds" in c["why"] for c in aa["comparisons"]), both
    assert all(c["n_candidate"] == c["n_baseline"] == 3 for c in aa["comparisons"])
    # its submits name the bench's scale, not the runs' field (the grid as written: "full")
    assert "runs planned (ci scale)" in both and "full scale" not in both, both
    status = CliRunner().invoke(main, ["status", "bench_ci", "--results", str(root)])
    assert status.output.startswith("grid bench_ci (ci scale; "), status.output
    totals = {t["label"]: t for t in aa["totals"]}
    assert totals["AdamW"]["budget"] == totals["torch.optim:AdamW"]["budget"] == 3
    before = _baseline_rows(root, "bench_ci")

    code, _, plan = _bench("torch.optim:SGD", *common, "--dry-run")
    assert code == 0, plan
    assert "AdamW (baseline): 12 runs; 12 already have a result (reused" in plan, plan

    code, out, both = _bench(
        "torch.optim:SGD", *common, "--format", "json", "--html", tmp_path / "card.html"
    )
    assert code == 0, both
    assert "AdamW: 12 of 12 tuning runs have a result from an earlier bench" in both, both
    assert _baseline_rows(root, "bench_ci") == before  # not one baseline run trained again
    sgd = json.loads(out)
    assert [c["reading"] for c in sgd["comparisons"]] == ["worse"] * 4, both
    assert all(c["difference"] > 0 and c["ci_low"] > 0 for c in sgd["comparisons"])
    card = (tmp_path / "card.html").read_text()
    assert "harness bench: torch.optim:SGD" in card and "worse 4" in card


@pytest.mark.slow
@pytest.mark.slurm
def test_bench_through_slurm_with_wait(slurm_env: Path, prepared_data: Path) -> None:
    from tests.slurm_runs import write_profile

    # 12 runs per array task: one process (one torch import) trains a phase's arm at a time
    launcher = write_profile(slurm_env / "launchers", "slurm-bench", runs_per_task=12)
    doc = yaml.safe_load((PROTOCOLS / "ci.yaml").read_text())
    doc["launcher"] = launcher
    doc["cells"]["tokens"] = [1024, 2048]
    doc["base"]["eval_tokens"] = 1024
    doc["budget"]["extend_rounds"] = 1
    protocol = slurm_env / "tiny.yaml"
    protocol.write_text(yaml.safe_dump(doc))
    root = slurm_env / "results"
    args = ("--protocol", protocol, "--results", root, "--data", prepared_data)
    code, out, both = _bench("torch.optim:AdamW", *args, "--wait", "--format", "json")
    assert code == 0, both
    verdict = json.loads(out)
    assert all(c["n_candidate"] == 3 for c in verdict["comparisons"]), both
    readings = {c["reading"] for c in verdict["comparisons"]}
    assert readings <= {"no evidence", "no verdict", "not tuned"}, both  # A/A: never a reading
    again_code, _, again = _bench("torch.optim:AdamW", *args, "--wait")
    assert again_code == 0 and "training at most" in again and "launching 0" in again, again
