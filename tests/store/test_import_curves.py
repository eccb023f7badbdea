"""Bring your own curves (issue 39 item 5, issue 44 item 6): a W&B export goes in as it is,
curve points are checked like a live run's, and a re-import of an edited file replaces its
rows."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from harness import api
from harness.cli import main
from tests.analysis.speedrun_shape import ARMS, EVERY, TARGET, write_wandb


def invoke(*args: object):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_a_wandb_export_imports_without_options_and_answers_targets_and_speedup(tmp_path):
    runs, history = write_wandb(tmp_path)
    root = tmp_path / "results"
    r = invoke("import", runs, "--curves", history, "--grid", "wb", "--results", root)
    assert r.exit_code == 0, r.output
    assert f"loss curves of {sum(a.seeds for a in ARMS)} run(s)" in r.output
    t = api.analyze("targets", "wb", results=root, target=TARGET, curve="val_loss").table
    assert set(t["method"]) == {a.label for a in ARMS}  # Group is the arm, Name only a key
    assert (t["steps_to_target"] % EVERY).lt(EVERY).all() and not t["censored"].any()
    # tokens derived from step x batch_size x seq_len
    assert (t["tokens_to_target"] == t["steps_to_target"] * 8 * 1024).all()
    s = api.analyze(
        "speedup",
        "wb",
        results=root,
        target=TARGET,
        curve="val_loss",
        a="label=record3",
        b="label=record6",
    ).table
    assert 1.1 < float(s["speedup"].iloc[0]) < 1.3


def test_map_reads_a_column_under_a_harness_name(tmp_path):
    (tmp_path / "r.csv").write_text("optimizer,seed,eval/loss_main\nadamw,0,3.5\nadamw,1,3.6\n")
    root = tmp_path / "results"
    r = invoke("import", tmp_path / "r.csv", "--grid", "g", "--results", root)
    assert r.exit_code == 2 and "unknown column 'eval/loss_main'" in r.output
    r = invoke(
        "import",
        tmp_path / "r.csv",
        "--grid",
        "g",
        "--results",
        root,
        "--map",
        "val_loss=eval/loss_main",
    )
    assert r.exit_code == 0, r.output


def test_the_configured_lr_is_a_key_when_the_others_leave_runs_apart(tmp_path):
    (tmp_path / "r.csv").write_text(
        "optimizer,lr,seed,val_loss\nadamw,0.1,0,3.5\nadamw,0.2,0,3.6\n"
    )
    (tmp_path / "c.csv").write_text(
        "seed,lr,step,val_loss\n0,0.1,100,4.0\n0,0.1,200,3.5\n0,0.2,100,4.1\n0,0.2,200,3.6\n"
    )
    done = api.import_results(
        tmp_path / "r.csv", grid="g", results=tmp_path / "res", curves=tmp_path / "c.csv"
    )
    assert done.curves == 2


HEADER = "optimizer,seed,val_loss\nadamw,0,3.5\nadamw,1,3.6\n"


@pytest.mark.parametrize(
    ("points", "message"),
    [
        ("0,100,4\n0,100,3.9\n", "c.csv:3: step 100 of the run with seed=0 is already on line 2"),
        ("0,9223372036854775808,4\n", "c.csv:2: column step: '9223372036854775808' is out of"),
        ("0,-5,4\n", "c.csv:2: column step: '-5' is out of range"),
        ("0,,4\n", "c.csv:2: column step: empty"),
        ("0,1.5,4\n", "c.csv:2: column step: expected an integer, got '1.5'"),
    ],
)
def test_bad_curve_steps_are_one_line_naming_file_and_line(tmp_path, points, message):
    (tmp_path / "r.csv").write_text(HEADER)
    (tmp_path / "c.csv").write_text("seed,step,val_loss\n" + points)
    r = invoke(
        "import",
        tmp_path / "r.csv",
        "--curves",
        tmp_path / "c.csv",
        "--grid",
        "g",
        "--results",
        tmp_path / "res",
    )
    assert r.exit_code == 2 and message in r.output, r.output
    assert len(r.output.strip().splitlines()) == 1
    assert not (tmp_path / "res").exists() or not list((tmp_path / "res").rglob("*.parquet"))


def test_a_reimport_of_an_edited_file_replaces_its_rows(tmp_path: Path):
    f = tmp_path / "r.csv"
    f.write_text(HEADER + "adamw,2,3.7\n")
    root = tmp_path / "res"
    api.import_results(f, grid="g", results=root)
    f.write_text(HEADER)  # a row deleted
    api.import_results(f, grid="g", results=root)
    t = api.analyze("best", "g", results=root, metric="val_loss").table
    assert int(t["n"].iloc[0]) == 2
