"""Left-censored batch sizes and the critical-batch fit (issue 37 item 5): a batch size whose
runs are already at the target at their first logged point has steps that are only an upper
bound; it stays out of the S(B) fit (or the cell reads "no verdict"), never a zero-width
interval."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from harness import api

TRUE_CRITICAL = 12.8  # S(B) = 10 + 640 / B: B* = 0.2 b / a from the small-batch limit


def _import(tmp: Path, batches: tuple[int, ...]) -> Path:
    runs, pts = ["optimizer,batch_size,seed,val_loss"], ["batch_size,seed,step,train_loss"]
    for b in batches:
        for s, j in enumerate((-0.02, 0.0, 0.02)):
            steps = (10 + 640 / b) * (1 + j)  # the loss falls from 6 to the target 5 at S(B)
            runs.append(f"adamw,{b},{s},4.0")
            pts += [f"{b},{s},{t},{6 - t / steps}" for t in range(25, 501, 25)]  # every 25
    (tmp / "r.csv").write_text("\n".join(runs) + "\n")
    (tmp / "c.csv").write_text("\n".join(pts) + "\n")
    api.import_results(tmp / "r.csv", grid="cb", results=tmp / "res", curves=tmp / "c.csv")
    return tmp / "res"


def _answer(root: Path):
    return api.analyze("critical-batch", "cb", results=root, target=5.0, metric="val_loss")


def test_left_censored_batch_sizes_stay_out_of_the_fit(tmp_path):
    # c16a263: 7.07 [6.86, 7.29] with steps intervals [25, 25] at B = 64 and 128
    a = _answer(_import(tmp_path, (2, 4, 8, 16, 32, 64, 128)))
    t = a.table.set_index("batch_size")
    assert t["critical_batch"].iloc[0] == pytest.approx(TRUE_CRITICAL, rel=0.01)
    assert t.loc[2.0, "ci_low"] <= TRUE_CRITICAL <= t.loc[2.0, "ci_high"]
    assert (t["steps_ci_high"] > t["steps_ci_low"]).all()  # no zero-width interval
    assert t.loc[64.0, "steps_ci_low"] == 0 and "out of the fit" in t.loc[64.0, "note"]
    assert any("left-censored): out of the S(B) fit" in n for n in a.notes)


def test_a_cell_left_with_too_few_batch_sizes_reads_no_verdict(tmp_path):
    t = _answer(_import(tmp_path, (16, 32, 64, 128))).table
    assert t["critical_batch"].isna().all() and math.isnan(t["ci_low"].iloc[0])
    assert t["note"].str.startswith("no verdict").all()
