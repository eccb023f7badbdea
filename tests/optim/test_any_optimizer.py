"""Any optimizer as it is (issue 18): every constructor signature real optimizers have becomes
grid keys and typed columns (a user's file with every pattern; pytorch-optimizer, schedulefree
and prodigyopt as they are on PyPI), collisions are namespaced, an argument no grid can set is
left at its default and said so, and a refusal lists every problem of a grid at once."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.grid.load import load_grid
from harness.optim.build import build_optimizer
from harness.optim.registry import get_spec
from harness.optim.signature import spec_from_class
from tests.inprocess import runs_in_process  # noqa: F401  # the fixture, by name
from tests.optim_runs import make_model

pytestmark = pytest.mark.usefixtures("runs_in_process")  # runs train in the test's process

TESTS = Path(__file__).resolve().parents[1]
VOCAB = {"classics-bpe8k": 64}.__getitem__  # a small vocabulary: SOAP preconditions each matrix


@pytest.fixture
def project(tmp_path: Path) -> Path:
    shutil.copy(TESTS / "user_optimizers.py", tmp_path / "user_optimizers.py")
    return tmp_path


def _grid(project: Path, body: str, name: str = "any") -> Path:
    path = project / f"{name}.yaml"
    path.write_text(
        f"name: {name}\n"
        "base: {model: tiny, seq_len: 16, batch_size: 4, steps: 4, lr: 1.0e-3, "
        "eval_tokens: 1024, log_every: 2}\n" + textwrap.dedent(body)
    )
    return path


def _cli(*args: object, code: int = 0) -> str:
    r = CliRunner().invoke(main, [str(a) for a in args])
    assert r.exit_code == code, r.output
    return r.output


def test_every_signature_pattern_is_a_typed_key_or_left_at_its_default(project: Path) -> None:
    ref = f"{project / 'user_optimizers.py'}:EveryPattern"
    spec = get_spec(ref)
    assert dict(spec.fields) == {"beta1": 0.9, "beta2": 0.99}
    own = {h.name: (h.type.__name__, h.default) for h in spec.hyperparameters}
    assert own == {
        "beta3": ("float", 0.999),
        "clip_range1": ("float", -1.0),
        "clip_range2": ("float", 1.0),
        "opt_scale": ("float", None),  # run fields: namespaced
        "anneal": ("object", None),  # no annotation, None: any scalar
        "mode": ("str", "fast"),
        "opt_label": ("str", "plain"),
        "centered": ("bool", False),
        "flips": ("bool", False),
        "period": ("int", 10),
        "every": ("int", 5),
        "gamma": ("float", 0.5),
        "decay": ("float", 0.9),
        "base": ("str", "torch.optim.sgd:SGD"),
        "transform": ("str", "user_optimizers.py:identity"),
        "opt_warmup_steps": ("int", 0),
        "opt_steps": ("int", 3),
    }
    assert next(h for h in spec.hyperparameters if h.name == "mode").choices == ("fast", "slow")
    assert dict(spec.packed) == {
        "betas": ("beta1", "beta2", "beta3"),
        "clip_range": ("clip_range1", "clip_range2"),
    }
    assert dict(spec.renamed) == {
        "opt_scale": "scale",
        "opt_label": "label",
        "opt_warmup_steps": "warmup_steps",
        "opt_steps": "steps",
    }
    assert dict(spec.left_at_default) == {"table": "annotated dict | None"}


def test_the_grid_sets_each_pattern_and_the_constructor_receives_it(project: Path) -> None:
    path = _grid(
        project,
        """
        grid:
          optimizer:
            ./user_optimizers.py:EveryPattern:
              beta3: [0.95, 0.999]
              clip_range2: [2.0]
              anneal: [cosine]
              mode: [slow]
              flips: [true]
              every: [7]
              base: ["torch.optim:AdamW"]
              transform: ["./user_optimizers.py:halve"]
              opt_warmup_steps: [2]
        """,
    )
    runs = load_grid(path, vocab=VOCAB).runs
    assert [r.optim.hyperparameters.as_dict()["beta3"] for r in runs] == [0.95, 0.999]
    assert runs[0].optim.warmup_steps == 0  # the run's own warmup is untouched
    model = make_model(runs[0])
    got = build_optimizer(model, runs[0]).received
    import torch

    assert got["betas"] == (0.9, 0.99, 0.95) and got["clip_range"] == (-1.0, 2.0)
    assert got["anneal"] == "cosine" and got["mode"] == "slow" and got["flips"] is True
    assert got["every"] == 7 and got["warmup_steps"] == 2 and got["steps"] == 3
    assert got["base"] is torch.optim.AdamW and got["transform"].__name__ == "halve"
    assert got["table"] is None and got["scale"] is None and got["label"] == "plain"


def test_an_unrepresentable_argument_is_said_by_the_dry_run_and_refused_when_set(project):
    ok = _grid(project, "grid: {optimizer: [./user_optimizers.py:EveryPattern]}\n")
    out = _cli("submit", ok, "--dry-run", "--launcher", "local")
    assert "note: optimizer EveryPattern: argument 'table' (annotated dict | None) is left at "
    assert "its default" in out and "table" in out
    bad = _grid(project, "grid: {optimizer: [./user_optimizers.py:EveryPattern], table: [1]}\n")
    refused = _cli("submit", bad, "--dry-run", "--launcher", "local", code=2)
    assert "argument 'table' is annotated dict | None; no grid can set it" in refused


def test_a_refusal_lists_every_problem_of_the_grid(project: Path) -> None:
    path = _grid(
        project,
        """
        grid:
          optimizer:
            adamw: {alpha: [5.0]}
            pytorch_optimizer:AdEMAMix: {alpha: [five], mode: [x]}
            pytorch_optimizer:Ademamix: {}
            ./user_optimizers.py:EveryPattern: {mode: [medium]}
        """,
    )
    out = _cli("submit", path, "--dry-run", "--launcher", "local", code=2)
    assert "4 problems" in out or "problems:" in out
    assert "'alpha' is set under the arm 'adamw', which does not take it" in out
    assert "did you mean AdEMAMix" in out  # the misspelt class
    assert "unknown key 'mode'" not in out or "'mode' is set under the arm" in out
    path = _grid(
        project,
        """
        grid:
          optimizer:
            pytorch_optimizer:AdEMAMix: {alpha: [five, 5.0]}
            ./user_optimizers.py:EveryPattern: {mode: [medium]}
        """,
    )
    out = _cli("submit", path, "--dry-run", "--launcher", "local", code=2)
    assert "alpha: expected float, got the string 'five'" in out
    assert "mode: 'medium' is not one of 'fast', 'slow'" in out
    assert len([ln for ln in out.splitlines() if ln.startswith("error:")]) == 1


PACKAGES = [
    ("pytorch_optimizer:AdEMAMix", {"beta3": 0.9999, "alpha": 5.0, "t_alpha_beta3": None}),
    ("pytorch_optimizer:SOAP", {"data_format": "channels_first", "precondition_frequency": 10}),
    ("pytorch_optimizer:Lion", {"weight_decouple": True}),
    ("schedulefree:AdamWScheduleFree", {"opt_warmup_steps": 0, "r": 0.0}),
    ("prodigyopt:Prodigy", {"beta3": None, "d_coef": 1.0}),
]


@pytest.mark.parametrize(("ref", "defaults"), PACKAGES)
@pytest.mark.slow
def test_pypi_optimizers_as_they_are(project: Path, ref: str, defaults: dict) -> None:
    spec = get_spec(ref)
    assert {k: spec.defaults()[k] for k in defaults} == defaults
    path = _grid(project, f"grid: {{optimizer: ['{ref}'], lr: [1.0e-3, 3.0e-3]}}\n")
    runs = load_grid(path, vocab=VOCAB).runs
    assert len(runs) == 2
    model = make_model(runs[0])
    opt = build_optimizer(model, runs[0])
    if ref == "pytorch_optimizer:AdEMAMix":
        assert opt.param_groups[0]["betas"] == (0.9, 0.999, 0.9999)  # not cut to two
    if ref.startswith("schedulefree"):
        opt.train()
    import torch

    x = torch.randint(0, 64, (2, 16))
    model(x, x).backward()
    opt.step()  # constructs and steps as it is


def test_betas_third_element_is_a_grid_axis_of_ademamix(project: Path) -> None:
    path = _grid(
        project, "grid: {optimizer: ['pytorch_optimizer:AdEMAMix'], beta3: [0.999, 0.9999]}\n"
    )
    out = _cli("submit", path, "--dry-run", "--launcher", "local", "--format", "csv")
    header = out.splitlines()[0].split(",")
    assert "beta3" in header and "alpha" in header
    assert {line.split(",")[header.index("beta3")] for line in out.splitlines()[1:]} == {
        "0.999",
        "0.9999",
    }


def test_a_hand_written_spec_named_like_a_run_field_points_to_the_convention() -> None:
    from harness.optim.spec import Hyperparameter, OptimizerSpec

    spec = OptimizerSpec(
        cls="torch.optim:SGD", hyperparameters=(Hyperparameter(name="steps", type=int),)
    )
    with pytest.raises(ValueError, match="opt_steps"):
        spec.check("mine")


def test_signature_problems_are_listed_together() -> None:
    import torch

    class Bad(torch.optim.Optimizer):
        def __init__(self, params, rate=1.0, *, table: dict, model: torch.nn.Module):
            super().__init__(params, {})

    from harness.core.errors import UserError

    with pytest.raises(UserError) as e:
        spec_from_class(Bad, "m:Bad")
    text = str(e.value)
    assert "3 problems" in text and "no 'lr'" in text
    assert "'table' has no default" in text and "'model' has no default" in text


@pytest.mark.parametrize("name", sorted(__import__("harness.optim.builtin").optim.builtin.BUILTIN))
def test_each_builtins_recorded_defaults_are_its_constructors(name: str) -> None:
    """A run that names a built-in optimizer and sets nothing of it records its constructor's
    defaults (one declaration: the constructor), read here from the signature itself."""
    import inspect

    from harness.core.registry import load_object
    from harness.optim.builtin import BUILTIN
    from tests.optim_runs import make_run

    run = make_run(optimizer=name)
    own = run.optim.hyperparameters.as_dict()
    signature = inspect.signature(load_object(BUILTIN[name].cls).__init__).parameters
    for p in list(signature.values())[2:]:
        if p.name in ("lr", "weight_decay") or p.default is p.empty:
            continue
        if p.name == "betas":
            recorded = (run.optim.beta1, run.optim.beta2)
        elif p.name in BUILTIN[name].reads:
            recorded = getattr(run.optim, BUILTIN[name].reads[p.name])
        else:
            recorded = own[p.name] if p.name in own else getattr(run.optim, p.name)
        assert recorded == p.default, (name, p.name)


@pytest.mark.parametrize("name", sorted(__import__("harness.optim.builtin").optim.builtin.BUILTIN))
def test_each_builtins_declaration_read_from_source_is_the_imported_classs(name: str) -> None:
    """Planning reads a built-in's constructor from its source (torch-free); the declaration is
    the one the imported class gives, field for field."""
    from harness.core.registry import load_object
    from harness.optim import static
    from harness.optim.builtin import BUILTIN

    b = BUILTIN[name]
    init = static.constructor(b.cls)
    assert init is not None, f"{b.cls}: not readable from its source"
    options = {"reads": b.reads, "group_options": b.group_options, "takes": b.takes}
    from harness.optim.signature import spec_from_constructor

    assert spec_from_constructor(init, b.cls, **options) == spec_from_class(
        load_object(b.cls), b.cls, **options
    )


def test_muons_newton_schulz_steps_are_a_grid_key() -> None:
    from tests.optim_runs import make_model, make_run

    run = make_run(optimizer="muon", ns_steps=3)
    opt = build_optimizer(make_model(run), run)
    assert {g["ns_steps"] for g in opt.param_groups} == {3}


@pytest.mark.slow
def test_preflight_refuses_a_failing_constructor_or_step_before_anything_is_queued(project):
    path = _grid(
        project,
        """
        grid:
          optimizer:
            ./user_optimizers.py:Fragile: {depth: [1, 3, 5]}
            adamw: {}
        """,
    )
    results = project / "results"
    for extra in (["--dry-run", "--check"], []):  # its cost: benchmarks/RESULTS.md
        out = _cli("submit", path, "--launcher", "local", "--results", results, *extra, code=2)
        assert "preflight" in out and "depth=5: ValueError: depth 5 is too deep" in out
        assert "depth=3: RuntimeError: not enough values to unpack" in out
        assert "depth=1" not in out and "arm adamw" not in out
        assert not (results / "any" / "manifest.parquet").exists()  # nothing queued
    ok = _grid(project, "grid: {optimizer: {./user_optimizers.py:Fragile: {depth: [1, 2]}}}\n")
    out = _cli("submit", ok, "--launcher", "local", "--dry-run", "--check")
    assert "preflight: 2 optimizer configuration(s) built and stepped" in out


def test_preflight_builds_the_runs_real_model_unless_it_is_over_the_budget(prepared_data):
    """Item 5: the run's real model (every layer) up to REAL_MODEL_BUDGET parameters (160m is
    real); a larger preset gets one block, and says why (the preflight's line names it). The
    models are built in the preflight's child process, so the choice is checked here, where it
    is made."""
    from harness.launch.preflight import model_to_build
    from tests.runs import tiny_run

    runs = [tiny_run(prepared_data, model=m, vocab_size=50304) for m in ("160m", "410m")]
    built = [model_to_build(r) for r in runs]
    assert [(a.model, a.n_layer) for a, _ in built] == [("160m", 12), ("410m", 1)]
    assert [why for _, why in built] == [None, "410m: 407M params > 400M"]
