"""Grid grammar: expansion, derived values, run_id stability, and every bad-input case."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from harness.core.catalogue import flat, from_flat
from harness.core.errors import UserError
from harness.data.catalogue import vocab_lookup
from harness.grid.load import grid_name, load_grid
from tests.inprocess import runs_in_process  # noqa: F401  # the fixture, by name

pytestmark = pytest.mark.usefixtures("runs_in_process")  # runs train in the test's process

BASE = """
name: g
base:
  model: tiny
  optimizer: adamw
  seq_len: 64
  batch_size: 16
  tokens: 102400
  eval_tokens: 4096
  lr: 1.0e-3
"""


def write(tmp_path: Path, text: str, name: str = "g.yaml") -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def grid(tmp_path: Path, extra: str, **kw):
    return load_grid(
        write(tmp_path, BASE + textwrap.dedent(extra)), vocab=vocab_lookup(tmp_path), **kw
    )


def test_cartesian_axes_and_seeds(tmp_path):
    g = grid(tmp_path, "grid:\n  lr: [1e-3, 2e-3]\n  beta1: [0.9, 0.95, 0.99]\nseeds: 2\n")
    assert len(g.runs) == 2 * 3 * 2
    assert {(r.optim.lr, r.optim.beta1, r.execution.seed) for r in g.runs} == {
        (lr, b, s) for lr in (1e-3, 2e-3) for b in (0.9, 0.95, 0.99) for s in (0, 1)
    }
    assert set(g.axes) == {"lr", "beta1", "seed"}


def test_seeds_share_one_resolution_and_each_run_equals_its_own(tmp_path):
    """Points differing only in the seed are resolved once (the 10,000-run dry run): each such run
    is the config its point resolves to on its own, with its own run_id; a value that names the
    seed (an expression) is resolved per seed."""
    from harness.grid.resolve import Resolver

    g = grid(tmp_path, "grid:\n  lr: [1e-3, 2e-3]\nseeds: [0, 3, 7]\n")
    resolver = Resolver("g", "full", vocab_lookup(tmp_path), "g.yaml", tmp_path)
    for run in g.runs:
        alone = resolver.resolve(
            {
                "model": "tiny",
                "optimizer": "adamw",
                "seq_len": 64,
                "batch_size": 16,
                "tokens": 102400,
                "eval_tokens": 4096,
                "lr": run.optim.lr,
                "seed": run.execution.seed,
            },
            "alone",
        )
        assert alone == run and alone.run_id == run.run_id
    assert len({r.run_id for r in g.runs}) == 6
    assert [r.execution.seed for r in g.runs] == [0, 3, 7, 0, 3, 7]

    named = grid(tmp_path, "grid:\n  warmup_steps: ['seed * 2']\nseeds: [0, 3]\n")
    assert [r.optim.warmup_steps for r in named.runs] == [0, 6]


def test_derived_steps_and_expressions(tmp_path):
    text = BASE.replace(
        "lr: 1.0e-3", "lr: 3e-3\n  warmup_steps: '0.1 * steps'\n  lr_min: '0.1 * lr'"
    )
    g = load_grid(write(tmp_path, text), vocab=vocab_lookup(tmp_path))
    (run,) = g.runs
    assert run.data.steps == 102400 // (16 * 64) == 100
    assert run.optim.warmup_steps == 10 and isinstance(run.optim.warmup_steps, int)
    assert run.optim.lr_min == pytest.approx(3e-4)
    assert run.data.micro_batch_size == 16


def test_yaml_exponent_strings_are_numbers(tmp_path):
    # PyYAML reads 3.2e9 (no '+') as a string; numeric fields accept it.
    text = BASE.replace("tokens: 102400", "tokens: 1.024e5").replace("1.0e-3", "1e-3")
    (run,) = load_grid(write(tmp_path, text), vocab=vocab_lookup(tmp_path)).runs
    assert run.data.tokens == 102400 and run.optim.lr == 1e-3


def test_conditional_subgrids_per_optimizer(tmp_path):
    g = grid(
        tmp_path,
        """
        grid:
          optimizer:
            adamw: {lr: [1e-3, 3e-3], beta2: [0.95]}
            sgd: {lr: [0.1], momentum: [0.9, 0.95], nesterov: [true]}
        """,
    )
    adam = [r for r in g.runs if r.optim.optimizer == "adamw"]
    sgd = [r for r in g.runs if r.optim.optimizer == "sgd"]
    assert len(adam) == 2 and len(sgd) == 2
    assert all(r.optim.momentum is None and r.optim.beta2 == 0.95 for r in adam)
    assert all(r.optim.beta1 is None and r.optim.beta2 is None and r.optim.nesterov for r in sgd)
    assert {r.optim.momentum for r in sgd} == {0.9, 0.95}


def test_zip_axes_vary_together(tmp_path):
    g = grid(tmp_path, "zip:\n  batch_size: [8, 32]\n  lr: [1e-3, 4e-3]\n")
    assert sorted((r.data.batch_size, r.optim.lr) for r in g.runs) == [(8, 1e-3), (32, 4e-3)]
    assert {r.data.steps for r in g.runs} == {102400 // (8 * 64), 102400 // (32 * 64)}


def test_local_overrides(tmp_path):
    text = BASE + "grid:\n  lr: [1e-3, 2e-3]\nseeds: [0, 1, 2]\nlocal:\n  base: {tokens: 20480}\n"
    text += "  grid: {lr: [5e-3]}\n  seeds: [7]\n"
    p = write(tmp_path, text)
    full, local = (
        load_grid(p, vocab=vocab_lookup(tmp_path)),
        load_grid(p, local=True, vocab=vocab_lookup(tmp_path)),
    )
    assert len(full.runs) == 6 and full.scale == "full"
    (run,) = local.runs
    assert (run.optim.lr, run.execution.seed, run.data.tokens, run.scale) == (
        5e-3,
        7,
        20480,
        "local",
    )


def test_run_id_is_stable_content_hash(tmp_path):
    g1 = grid(tmp_path, "grid:\n  lr: [1e-3, 2e-3]\nseeds: [0, 1]\n")
    g2 = grid(tmp_path, "grid:\n  lr: [2e-3, 1e-3]\nseeds: [1, 0]\n")
    assert {r.run_id for r in g1.runs} == {r.run_id for r in g2.runs}
    assert len({r.run_id for r in g1.runs}) == 4  # seed and lr change the id
    r = g1.runs[0]
    assert from_flat({"run_id": "x", **flat(r)}).run_id == r.run_id
    # pinned values: the hash must not drift silently between versions of the code (results on
    # disk are found by run_id); a change here orphans every stored result
    pinned = {(r.optim.lr, r.execution.seed): r.run_id for r in g1.runs}
    assert pinned == {
        (1e-3, 0): "42dd724ab1a155b0",
        (1e-3, 1): "04e23bc049cfbfb4",
        (2e-3, 0): "ed3eb00369ceb9d4",
        (2e-3, 1): "3680fed5a5ab6272",
    }


def test_batch_size_changes_run_id(tmp_path):
    g = grid(tmp_path, "grid:\n  batch_size: [8, 16]\n")
    assert len({r.run_id for r in g.runs}) == 2


def test_grid_name_from_file_or_name(tmp_path):
    assert grid_name(str(write(tmp_path, BASE))) == "g"
    assert grid_name("some_grid") == "some_grid"


BAD = [
    ("base:\n  lrr: 1\n", "unknown key 'lrr'"),
    ("grid:\n  lr: []\n", "empty axis"),
    ("grid:\n  lr: ['fast']\n", "lr"),
    ("base:\n  batch_size: 'big'\n", "batch_size"),
    ("base:\n  optimizer: adamx\n", "unknown optimizer 'adamx'; valid choices: "),
    ("base:\n  model: huge\n", "unknown model preset 'huge'"),
    ("base:\n  dataset: /no/such/dir\n", "/no/such/dir"),
    ("grid:\n  momentum: [0.9, 0.95]\n", "'momentum' is set, but none of the grid's optimizers"),
    ("grid:\n  optimizer: [adamw, sgd]\n  momentum: [0.9, 0.95]\n", "duplicate runs"),
    ("colour: red\n", "unknown key 'colour'"),
    ("seeds: []\n", "seeds"),
    ("zip:\n  lr: [1e-3, 2e-3]\n  beta1: [0.9]\n", "equal length"),
    ("base:\n  warmup_steps: '0.1 * stepz'\n", "stepz"),
    ("base:\n  n_head: 3\n", "not divisible"),
    ("base:\n  steps: 10\n", "either 'tokens' or 'steps'"),
    ("base:\n  tokens: 10\n", "less than one batch"),
    ("base:\n  tie_weights: 1\n", "expected bool"),
    ("base:\n  norm: batchnorm\n", "norm"),
]


@pytest.mark.parametrize(("extra", "message"), BAD)
def test_bad_input_is_one_clear_line(tmp_path, extra, message):
    # later top-level keys replace BASE's, so merge 'base:' additions into the base mapping
    text = BASE + (extra[len("base:\n") :] if extra.startswith("base:\n") else extra)
    path = write(tmp_path, text)
    with pytest.raises(UserError) as info:
        load_grid(path, vocab=vocab_lookup(tmp_path))
    msg = str(info.value)
    assert message in msg
    assert "\n" not in msg
    assert str(path) in msg


def test_missing_file_and_bad_yaml(tmp_path):
    with pytest.raises(UserError, match="no such grid file"):
        load_grid(tmp_path / "nope.yaml", vocab=vocab_lookup(Path("data")))
    with pytest.raises(UserError, match="invalid YAML"):
        load_grid(write(tmp_path, "name: [unclosed\n"), vocab=vocab_lookup(Path("data")))
    with pytest.raises(UserError, match="no 'local:' section"):
        load_grid(write(tmp_path, BASE), local=True, vocab=vocab_lookup(tmp_path))


def test_every_shipped_grid_expands_at_both_scales():
    root = Path(__file__).resolve().parents[2] / "grids"
    files = sorted(root.glob("*.yaml"))
    assert files, "no grids shipped"
    for f in files:
        full = load_grid(f, vocab=vocab_lookup(Path("data")))
        local = load_grid(f, local=True, vocab=vocab_lookup(Path("data")))
        assert full.runs and local.runs, f
        assert all(r.scale == "local" for r in local.runs)


def test_launcher_profiles_validate(tmp_path, monkeypatch):
    from harness.launch.profile import load_profile, profile_names

    assert {"local", "slurm-a100", "slurm-a100x8"} <= set(profile_names())
    assert load_profile("slurm-a100").settings.gpus_per_node == 1
    monkeypatch.setenv("HARNESS_LAUNCHERS", str(tmp_path))
    (tmp_path / "odd.yaml").write_text("kind: slurm\npartitoin: a100\n")
    with pytest.raises(UserError, match="unknown key 'partitoin'; valid keys: "):
        load_profile("odd")
    (tmp_path / "odd.yaml").write_text("kind: slurm\ngpus_per_node: two\n")
    with pytest.raises(UserError, match="gpus_per_node: expected int"):
        load_profile("odd")
    (tmp_path / "odd.yaml").write_text("kind: cloud\n")
    with pytest.raises(UserError, match="unknown launcher kind 'cloud'"):
        load_profile("odd")
    (tmp_path / "odd.yaml").write_text("kind: slurm\nsetup:\n  # - module load cuda\n")
    assert load_profile("odd").settings.setup == ()
    (tmp_path / "odd.yaml").write_text("kind: slurm\ntimeout_min:\n")
    with pytest.raises(UserError, match="timeout_min: expected a value, got nothing"):
        load_profile("odd")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ("runs_per_device: 0", "runs_per_device: must be >= 1, got 0"),
        ("runs_per_device: 4", "runs_per_device: 4 exceeds runs_per_task: 1"),
        ("runs_per_task: 6\nruns_per_device: 8", "runs_per_device: 8 exceeds runs_per_task: 6"),
    ],
)
def test_runs_per_device_must_fit_in_a_task(tmp_path, monkeypatch, fields, message):
    from harness.launch.profile import load_profile

    monkeypatch.setenv("HARNESS_LAUNCHERS", str(tmp_path))
    (tmp_path / "odd.yaml").write_text(f"kind: slurm\n{fields}\n")
    with pytest.raises(UserError, match=message):
        load_profile("odd")
    (tmp_path / "odd.yaml").write_text("kind: slurm\nruns_per_task: 8\nruns_per_device: 4\n")
    assert load_profile("odd").settings.runs_per_device == 4
