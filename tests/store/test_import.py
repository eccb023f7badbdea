"""``harness import``: published results become rows of ``runs`` that every command reads."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from harness.store.db import connect
from tests.cli_calls import run as _run

# Talk, Table 1: mean and 2-sigma over 3 seeds (val ppl, 160M, 3.2B tokens).
TABLE1 = [
    ("adamw", 1.0, 21.86, 0.21),
    ("signum", 1.0, 23.23, 0.16),
    ("rmsprop", 1.0, 27.04, 0.34),
    ("sgd_cclip", 1.0, 33.40, 0.39),
    ("signsgd", 1.0, 36.78, 0.57),
    ("sgd", 1.0, 37.76, 0.61),
    ("sgd", "null", 53.62, 5.14),
]


def _table1_csv(path: Path) -> Path:
    """Three seeds per optimizer with exactly the published mean and 2-sigma."""
    lines = ["optimizer,grad_clip,seed,val_ppl"]
    for opt, clip, mean, two_sigma in TABLE1:
        s = two_sigma / 2
        lines += [f"{opt},{clip},{seed},{mean + d * s!r}" for seed, d in enumerate((-1, 0, 1))]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_talk_table1_signum_closes_95_7_percent_of_the_gap(tmp_path):
    csv = _table1_csv(tmp_path / "table1.csv")
    res = _run(tmp_path, "import", str(csv), "--grid", "talk", "--source", "Orvieto talk, Table 1")
    assert res.exit_code == 0, res.output
    assert "imported 21 row(s) into grid 'talk'" in res.stdout and "derived: val_loss" in res.stdout
    res = _run(
        tmp_path,
        "analyze",
        "gap",
        "talk",
        "--baseline",
        "optimizer=sgd,grad_clip=null",
        "--reference",
        "optimizer=adamw",
        "--format",
        "json",
        "--n-boot",
        "500",
    )
    assert res.exit_code == 0, res.output
    rows = {r["arm"]: r for r in json.loads(res.stdout)}
    signum = rows["optimizer=signum,grad_clip=1.0"]
    assert round(signum["closure_pct"], 1) == 95.7
    assert signum["mean"] == pytest.approx(23.23) and signum["std"] == pytest.approx(0.08)
    assert signum["ci_low_pct"] < 95.7 < signum["ci_high_pct"]
    gclip = rows["optimizer=sgd,grad_clip=1.0"]
    assert gclip["closure_pct"] == pytest.approx(100 * (53.62 - 37.76) / (53.62 - 21.86))


def test_imported_rows_are_runs_with_status_source_and_types(tmp_path):
    csv = tmp_path / "paper.csv"
    csv.write_text(
        "optimizer,tokens,batch_size,seed,val_loss,iso,status,tie_weights\n"
        "adamw,5e9,96,0,3.14,0.31,completed,true\n"
        "coupled_adam,5e9,96,0,3.12,0.94,,true\n"
        "coupled_adam,5e9,96,1,,,diverged,true\n"
    )
    res = _run(tmp_path, "import", str(csv), "--grid", "paper")
    assert res.exit_code == 0, res.output
    con = connect(tmp_path, "paper")
    with warnings.catch_warnings():  # duckdb's pandas conversion warns on pandas 3
        warnings.simplefilter("ignore")
        df = con.execute("SELECT * FROM runs ORDER BY optimizer, seed").df()
    assert list(df["status"]) == ["completed", "completed", "diverged"]
    assert set(df["source"]) == {"import:paper.csv"} and set(df["scale"]) == {"full"}
    assert df["tokens"].iloc[0] == 5_000_000_000 and df["batch_size"].iloc[0] == 96
    assert df["val_ppl"].iloc[0] == pytest.approx(2.718281828459045**3.14)
    assert bool(df["tie_weights"].iloc[0]) is True and df["iso"].iloc[1] == pytest.approx(0.94)
    assert df["run_id"].nunique() == 3 and df["lr"].isna().all()  # missing config: NULL
    # importing the same file again replaces its rows
    assert _run(tmp_path, "import", str(csv), "--grid", "paper").exit_code == 0
    files = list((tmp_path / "paper" / "runs").glob("*.parquet"))
    assert len(files) == 1 and pq.read_table(files[0]).num_rows == 3
    res = _run(
        tmp_path,
        "analyze",
        "best",
        "paper",
        "--by",
        "optimizer",
        "--metric",
        "val_loss",
        "--format",
        "json",
    )
    rows = {r["optimizer"]: r for r in json.loads(res.stdout)}
    assert rows["coupled_adam"]["mean"] == "inf"  # JSON has no infinity: the string "inf"
    assert rows["coupled_adam"]["n_diverged"] == 1  # the published divergence counts as worst


def test_provenance_columns_a_csv_may_set_are_the_declared_ones(tmp_path):
    """Each of ``IMPORTED_PROVENANCE`` lands in its row column; the other provenance columns
    (the importer's or the store's to set) are refused."""
    from harness.core.provenance import IMPORTED_PROVENANCE, PROVENANCE

    cols = ",".join(IMPORTED_PROVENANCE)
    values = ",".join(f"v-{c}" for c in IMPORTED_PROVENANCE)
    csv = tmp_path / "p.csv"
    csv.write_text(f"optimizer,val_ppl,{cols}\nadamw,20,{values}\n")
    res = _run(tmp_path, "import", str(csv), "--grid", "p")
    assert res.exit_code == 0, res.output
    row = connect(tmp_path, "p").execute(f"SELECT {cols} FROM runs").fetchall()
    assert row == [tuple(f"v-{c}" for c in IMPORTED_PROVENANCE)]
    for other in sorted(set(PROVENANCE) - set(IMPORTED_PROVENANCE)):
        csv.write_text(f"optimizer,val_ppl,{other}\nadamw,20,1\n")
        res = _run(tmp_path, "import", str(csv), "--grid", "p")
        assert res.exit_code == 2 and repr(other) in res.output, (other, res.output)


def test_extra_metric_columns(tmp_path):
    csv = tmp_path / "acc.csv"
    csv.write_text("optimizer,seed,val_ppl,hellaswag\nadamw,0,20.0,0.31\nadamw,1,20.5,0.32\n")
    res = _run(tmp_path, "import", str(csv), "--grid", "acc")
    assert (
        res.exit_code == 2
        and "unknown column 'hellaswag'" in res.stderr
        and "--extra hellaswag" in res.stderr
    )
    assert (
        _run(tmp_path, "import", str(csv), "--grid", "acc", "--extra", "hellaswag").exit_code == 0
    )
    res = _run(
        tmp_path,
        "analyze",
        "best",
        "acc",
        "--metric",
        "hellaswag",
        "--goal",
        "max",
        "--format",
        "json",
    )
    assert json.loads(res.stdout)[0]["mean"] == pytest.approx(0.315)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("optimizer,val_ppl\nadamw,abc\n", ":2: column val_ppl: expected double, got 'abc'"),
        ("optimizer,batch_size,val_ppl\nadamw,2.5,20\n", "column batch_size: expected an integer"),
        ("optimizer,val_ppl\nadamw,20\nadamw,21\n", "lines 2 and 3 have the same configuration"),
        ("optimizer,grid,val_ppl\nadamw,x,20\n", "column 'grid' is set by the importer"),
        ("optimizer,lr\nadamw,0.1\n", "no result column"),
        ("optimizer,val_ppl,status\nadamw,20,running\n", "unknown status 'running'"),
    ],
)
def test_bad_csv_is_one_line_and_exit_2(tmp_path, text, message):
    csv = tmp_path / "bad.csv"
    csv.write_text(text)
    res = _run(tmp_path, "import", str(csv), "--grid", "g")
    assert res.exit_code == 2, res.output
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], res.stderr
    assert not (tmp_path / "g").exists()  # nothing written


def test_missing_file(tmp_path):
    res = _run(tmp_path, "import", str(tmp_path / "nope.csv"), "--grid", "g")
    assert res.exit_code == 2 and "no such file" in res.stderr


def test_shipped_talk_table1_csv(tmp_path):
    """The published Table 1 in the repo imports and reproduces the talk's 96 % (95.7 %)."""
    csv = Path(__file__).resolve().parents[2] / "analysis" / "published" / "talk_table1.csv"
    assert _run(tmp_path, "import", str(csv), "--grid", "talk_table1").exit_code == 0
    res = _run(
        tmp_path,
        "analyze",
        "gap",
        "talk_table1",
        "--baseline",
        "label=SGD",
        "--reference",
        "label=Adam",
        "--format",
        "json",
    )
    rows = {r["arm"]: r for r in json.loads(res.stdout)}
    assert round(rows["Signum"]["closure_pct"], 1) == 95.7
    assert round(rows["RMSprop"]["closure_pct"], 1) == 83.7
    assert rows["Signum"]["note"] == "n = 1: no interval"
