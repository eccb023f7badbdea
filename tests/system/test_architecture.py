"""The plan of the house: import contracts kept by a machine, one catalogue of fields and metrics
from which every table derives, and a new optimizer hyperparameter as one declaration."""

from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from harness.core import catalogue
from harness.core.catalogue import FIELDS, GRID_KEYS, flat
from harness.core.config import ExecutionConfig, RunConfig
from harness.core.fields import Role, Scale, hashed_values, spec
from harness.core.result import STATUSES, RunResult
from harness.data.catalogue import vocab_lookup
from harness.grid.load import load_grid
from harness.metrics.catalogue import METRICS, Goal
from harness.optim.build import build_optimizer
from harness.optim.registry import OPTIMIZERS
from harness.optim.spec import Hyperparameter, OptimizerSpec
from harness.store.manifest import read_manifest, write_manifest
from harness.store.rows import make_row
from harness.store.schema import config_schema, row_schema
from tests.optim_runs import make_model, make_run

REPO = Path(__file__).resolve().parents[2]

# --- import contracts --------------------------------------------------------------------------


def _lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    env = {"PYTHONPATH": str(root), "PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin"}
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "from importlinter.cli import lint_imports_command as c; c()",
            "--config",
            str(root / "pyproject.toml"),
            "--no-cache",
        ],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture(scope="module")
def tree_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tree")
    shutil.copytree(
        REPO / "harness", root / "harness", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    return root


@pytest.mark.slow
def test_the_contracts_hold_and_a_forbidden_import_breaks_them(tree_copy: Path) -> None:
    kept = _lint_imports(tree_copy)
    assert kept.returncode == 0, kept.stdout + kept.stderr
    assert "0 broken" in kept.stdout
    # The grid grammar reaching for a launcher profile: a back-edge the contracts forbid.
    grammar = tree_copy / "harness" / "grid" / "grammar.py"
    original = grammar.read_text()
    grammar.write_text(original + "\nfrom harness.launch.profile import load_profile  # noqa\n")
    try:
        broken = _lint_imports(tree_copy)
    finally:
        grammar.write_text(original)
    assert broken.returncode != 0
    assert "harness.grid.grammar -> harness.launch.profile" in broken.stdout
    assert "Grid expansion is a pure translator" in broken.stdout and "BROKEN" in broken.stdout


@pytest.mark.slow
def test_the_bench_reaches_results_and_submits_only_through_the_api(tree_copy: Path) -> None:
    # The bench loading rows itself: what harness.api.rows is for.
    results = tree_copy / "harness" / "bench" / "results.py"
    original = results.read_text()
    results.write_text(original + "\nfrom harness.analysis.rows.load import select  # noqa\n")
    try:
        broken = _lint_imports(tree_copy)
    finally:
        results.write_text(original)
    assert broken.returncode != 0
    assert "harness.bench.results -> harness.analysis.rows.load" in broken.stdout
    assert "The bench is a client of harness.api" in broken.stdout


# --- one catalogue of fields -------------------------------------------------------------------


def test_every_field_is_declared_once_with_its_role_and_the_tables_derive_from_it() -> None:
    names = [f.name for f in catalogue.CATALOGUE]  # every section's fields, before keying
    assert len(names) == len(set(names)), "a field name is declared in two sections"
    assert names == list(FIELDS)
    assert [f.name for f in config_schema()] == ["run_id", *names]
    # identity fields the harness sets (submit plans them, resolution records the grid folder)
    planned = {"extend_round", "confirm", "grid_dir"}
    assert set(names) - {"grid", "scale"} - planned == GRID_KEYS
    assert {FIELDS[n].role for n in ("grid", "scale")} == {Role.IDENTITY}
    assert FIELDS["label"].role is Role.LABEL and not FIELDS["label"].hashed
    assert FIELDS["n_layer"].role is Role.ARCHITECTURE and FIELDS["lr"].role is Role.OPTIMIZER
    assert FIELDS["lr"].meta.scale is Scale.LOG and FIELDS["beta2"].meta.scale is Scale.DECAY
    assert "lr" in catalogue.TUNED and "seed" in catalogue.NOT_COMPARED
    assert set(catalogue.PER_OPTIMIZER) == {
        "beta1",
        "beta2",
        "eps",
        "momentum",
        "nesterov",
        "weight_decay_mode",
        "clip_value",
        "coupled_scale_exp",
    }
    assert FIELDS["dataset"].default == "classics-bpe8k" and FIELDS["eval_tokens"].default == 2**16


@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class Execution2(ExecutionConfig):
    """The execution section with a field added after run_ids were first made."""

    new_knob: str = spec("off", absent="off")


@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class Run2(RunConfig):
    """A run config whose execution section has grown."""

    execution: Execution2


def test_run_id_is_computed_once_and_cached(monkeypatch: pytest.MonkeyPatch) -> None:
    run = make_run(optimizer="adamw")
    first = run.run_id
    assert len(first) == 16
    calls: list[object] = []
    monkeypatch.setattr("harness.core.config.content_hash", lambda v: calls.append(v) or "x")
    assert run.run_id == first and calls == []  # the cached id; no second hash
    assert make_run(optimizer="adamw").run_id == "x" and len(calls) == 1  # a new run hashes


def test_a_field_added_later_changes_no_earlier_run_id() -> None:
    """A later field declares the value that means "absent"; at that value it is not hashed."""
    run = make_run(optimizer="adamw")
    fields = {f.name: getattr(run.execution, f.name) for f in dataclasses.fields(run.execution)}
    given = {f.name: getattr(run, f.name) for f in dataclasses.fields(run) if f.init}
    same = Run2(**given | {"execution": Execution2(**fields)})
    assert "new_knob" not in hashed_values(same)
    assert catalogue.content_hash(hashed_values(same)) == run.run_id
    other = dataclasses.replace(same, execution=Execution2(**fields, new_knob="on"))
    assert catalogue.content_hash(hashed_values(other)) != run.run_id


@pytest.mark.parametrize(
    "point",
    [
        {"optimizer": "adamw"},
        {"optimizer": "sgd"},
        {"optimizer": "adamw", "embedding_optimizer": "sgd"},
        {"optimizer": "sgd_cclip", "clip_value": 0.1},
    ],
)
def test_the_weight_decay_conventions_change_no_earlier_run_id(point: dict) -> None:
    """weight_decay_mode and decay_params came later: at today's behaviour (decoupled, matrices)
    they are not hashed, whether the optimizer reads the mode (sgd: "decoupled") or not (None);
    a run that computes differently (L2, another convention, no spike rule) gets another id."""
    run = make_run(**point)
    assert {"weight_decay_mode", "decay_params"}.isdisjoint(hashed_values(run))
    ids = {run.run_id}
    for change in (
        {"decay_params": "all_weights"},
        {"decay_params": "no_embedding"},
        {"diverge_rise": None},
    ):
        ids.add(make_run(**point, **change).run_id)
    if run.optim.weight_decay_mode is not None:
        ids.add(make_run(**point, weight_decay_mode="l2").run_id)
    assert make_run(**point, weight_decay_mode="decoupled").run_id == run.run_id
    assert len(ids) == 5 if run.optim.weight_decay_mode else len(ids) == 4


def test_every_metric_is_declared_once_and_rows_refuse_undeclared_ones(tmp_path: Path) -> None:
    assert METRICS["val_loss"].goal is Goal.MIN and METRICS["iso"].goal is Goal.MAX
    row_metrics = [f.name for f in row_schema() if f.name in METRICS]
    assert row_metrics == list(METRICS)  # every metric is a column, in catalogue order
    run = make_run(optimizer="adamw")
    with pytest.raises(ValueError, match=r"undeclared metrics \['sharpness'\]"):
        make_row(run, RunResult(status=STATUSES[0], metrics={"sharpness": 1.0}), {})


# --- a new optimizer hyperparameter: one declaration plus the optimizer's code -------------------

_GAMMA_MODULE = '''
import torch


class AdamGamma(torch.optim.Optimizer):
    """Sign descent whose step is scaled by gamma (a toy rule, but a real optimizer)."""

    def __init__(self, params, lr=1e-3, gamma=0.5, weight_decay=0.0):
        super().__init__(params, {"lr": lr, "gamma": gamma, "weight_decay": weight_decay})

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.add_(p.grad.sign(), alpha=-group["lr"] * group["gamma"])
'''


def test_a_new_optimizer_with_a_new_hyperparameter_is_one_declaration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "gamma_opt.py").write_text(_GAMMA_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    before = make_run(optimizer="adamw").run_id
    spec = OptimizerSpec(
        cls="gamma_opt:AdamGamma",
        hyperparameters=(Hyperparameter(name="gamma", type=float, default=0.5),),
    )
    with OPTIMIZERS.temporarily("adam_gamma", spec):
        grid = tmp_path / "gamma.yaml"
        grid.write_text(
            textwrap.dedent("""
            name: gamma
            base: {model: tiny, dataset: classics-bpe8k, seq_len: 16, batch_size: 2, tokens: 64}
            grid:
              optimizer:
                adam_gamma: {lr: [1.0e-3], gamma: [0.1, 0.3]}
                adamw: {lr: [1.0e-3]}
        """)
        )
        runs = load_grid(grid, vocab=vocab_lookup(tmp_path)).runs
        assert make_run(optimizer="adamw").run_id == before  # nothing else changed
        gamma = [r for r in runs if r.optim.optimizer == "adam_gamma"]
        assert [r.optim.hyperparameters.as_dict() for r in gamma] == [
            {"gamma": 0.1},
            {"gamma": 0.3},
        ]
        assert len({r.run_id for r in runs}) == 3
        assert "gamma" not in flat(runs[-1])  # adamw reads no gamma
        write_manifest(tmp_path, "gamma", runs)
        table = pq.read_table(tmp_path / "gamma" / "manifest.parquet")
        assert str(table.schema.field("gamma").type) == "double"  # a typed column
        back = read_manifest(tmp_path, "gamma")
        assert {r.run_id for r in back.values()} == {r.run_id for r in runs}
        opt = build_optimizer(make_model(make_run(optimizer="adamw")), gamma[1])
        assert type(opt).__name__ == "AdamGamma"
        assert {g["gamma"] for g in opt.param_groups} == {0.3}


def test_a_tied_head_is_decided_in_one_place() -> None:
    """Only ``core/lm.py`` tests ``head is None``; the model, routing and counting ask it."""
    root = Path(__file__).resolve().parents[2] / "harness"
    deciding = sorted(
        str(p.relative_to(root))
        for p in root.rglob("*.py")
        if re.search(r"\.head is (not )?None|head_layer is None", p.read_text())
    )
    assert deciding == ["core/lm.py"]


@pytest.mark.slow
def test_the_cli_reaches_the_store_only_through_the_api(tree_copy: Path) -> None:
    # ``harness status`` reading the store itself: what harness.api.status is for.
    status = tree_copy / "harness" / "cli" / "status.py"
    original = status.read_text()
    status.write_text(original + "\nfrom harness.store.status import grid_status  # noqa\n")
    try:
        broken = _lint_imports(tree_copy)
    finally:
        status.write_text(original)
    assert broken.returncode != 0
    assert "harness.cli.status -> harness.store.status" in broken.stdout
    assert "The CLI wraps the library" in broken.stdout
