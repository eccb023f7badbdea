"""Workloads beyond the GPT (harness.workloads): the toy problems' analytic answers through the
real ``train(run)`` path, naming a workload three ways, its typed columns, skip, resume, every
optimizer of the zoo, and the errors a bad name or parameter gives."""

from __future__ import annotations

import contextlib
import json
import math
import textwrap
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import torch
import torch.nn.functional as F
from click.testing import CliRunner

from harness.cli import main
from harness.core.errors import UserError
from harness.grid.load import load_grid
from harness.grid.resolve import Resolver
from harness.optim.registry import OPTIMIZERS
from harness.train.checkpoint import Checkpointing
from harness.train.loop import TrainingInterrupted, train
from harness.workloads.bound import Bound, bind
from harness.workloads.imbalance import Imbalance
from harness.workloads.quadratic import Quadratic
from harness.workloads.registry import DEFAULT
from tests.inprocess import runs_in_process  # noqa: F401  # the fixture, by name
from tests.runs import tiny_run

GD = {"optimizer": "sgd", "momentum": 0.0, "grad_clip": None, "schedule": "constant"}
"""Plain gradient descent: no momentum, no clipping, a constant lr."""

pytestmark = pytest.mark.usefixtures("one_thread", "runs_in_process")  # runs in this process


def _run(**point):
    return Resolver("wl", "full", lambda name: 1, "test").resolve(point, "test run")


def _quadratic_gap(q: Quadratic, seed: int, lr: float, t: int) -> float:
    """The closed form f(x_t) - f* = 1/2 sum_i lambda_i (1 - lr lambda_i)^(2t) c_i^2 of gradient
    descent, c = Q^T (x_0 - x*) in each block's eigenbasis, x_0 the run's initial point."""
    x0 = q.model(seed).blocks
    total = 0.0
    for x, q_k, lam, star in zip(x0, q.rotations, q.eigenvalues, q.minimiser, strict=True):
        c = q_k.T @ (x.detach() - star)
        total += float(0.5 * (lam * (1 - lr * lam) ** (2 * t) * c**2).sum())
    return total


@pytest.mark.parametrize("spectrum", ["heterogeneous", "homogeneous"])
def test_quadratic_minimum_is_the_closed_form(spectrum):
    q = Quadratic(spectrum=spectrum, blocks=3, block_dim=5, condition=100.0)
    f_star = 0.0  # -1/2 b^T H^-1 b in the eigenbasis: -1/2 sum_i (q_i^T b)^2 / lambda_i
    for q_k, lam, b in zip(q.rotations, q.eigenvalues, q.linear, strict=True):
        f_star -= float(0.5 * ((q_k.T @ b) ** 2 / lam).sum())
    assert q.f_star == pytest.approx(f_star, rel=1e-12)
    at_min = q.model(0)
    with torch.no_grad():
        for p, star in zip(at_min.blocks, q.minimiser, strict=True):
            p.copy_(star)
    assert q.evaluate(at_min) == {"val_loss": 0.0, "log10_gap": -300.0}
    somewhere = q.model(5)  # the gap's exact form is f(x) - f*
    gap = q.evaluate(somewhere)
    f_x = float(q.objective(somewhere).detach())
    assert gap["val_loss"] == pytest.approx(f_x - f_star, rel=1e-9)
    assert gap["log10_gap"] == pytest.approx(math.log10(gap["val_loss"]), rel=1e-12)
    q.loss(at_min, None).backward()
    assert max(float(p.grad.abs().max()) for p in at_min.blocks) < 1e-9  # a stationary point
    everything = torch.cat(q.eigenvalues).sort().values  # both spectra: the same eigenvalues
    assert torch.allclose(everything, torch.logspace(0, 2, 15, dtype=torch.float64))
    spread = [float(e.max() / e.min()) for e in q.eigenvalues]
    if spectrum == "heterogeneous":  # contiguous slices: each block narrow
        assert max(spread) < 5
    else:  # interleaved: each block spans nearly the whole range
        assert min(spread) > 20


@pytest.mark.parametrize("spectrum", ["heterogeneous", "homogeneous"])
def test_quadratic_gradient_descent_follows_the_closed_form_through_train(tmp_path, spectrum):
    lr, steps = 0.015, 30  # < 2 / lambda_max = 0.02: every mode contracts
    run = _run(
        workload="quadratic",
        spectrum=spectrum,
        blocks=2,
        block_dim=4,
        condition=100.0,
        steps=steps,
        lr=lr,
        log_every=1,
        eval_every=10,
        seed=3,
        **GD,
    )
    result = train(run, data_root=tmp_path, log=None)
    assert result.status == "completed", result.error
    q = Quadratic(spectrum=spectrum, blocks=2, block_dim=4, condition=100.0)
    for point in result.curve:  # the logged loss of step t is f at the point before it: x_{t-1}
        expected = _quadratic_gap(q, 3, lr, point["step"] - 1)
        assert point["train_loss"] == pytest.approx(expected, rel=1e-5), point["step"]
    evaluated = {p["step"]: p["val_loss"] for p in result.curve if p["val_loss"] is not None}
    assert sorted(evaluated) == [10, 20, 30]
    for step, value in evaluated.items():  # exact (float64) at the evaluation points
        assert value == pytest.approx(_quadratic_gap(q, 3, lr, step), rel=1e-10), step
    assert result.metrics["val_loss"] == evaluated[30]
    assert result.tokens_seen == steps  # one example (the whole problem) per step


def test_quadratic_noise_changes_the_gradient_not_the_loss_value():
    q = Quadratic(blocks=2, block_dim=3, noise=0.5)
    x = q.model(0)
    batch = q.batch(7, 4, 1)
    assert all(torch.equal(a, b) for a, b in zip(batch, q.batch(7, 4, 1), strict=True))
    loss = q.loss(x, batch)
    assert float(loss.detach()) == pytest.approx(q.evaluate(x)["val_loss"], rel=1e-12)
    loss.backward()
    for p, h, b, xi in zip(x.blocks, q.hessians, q.linear, batch, strict=True):
        assert torch.allclose(p.grad, h @ p.detach() - b + 0.5 * xi)


def _imbalance_gradient(w: Imbalance) -> torch.Tensor:
    """The gradient at zero of the population loss, row k: (1/C) sum_j p_j x_j - p_k x_k."""
    mean = (w.frequencies[:, None] * w.inputs).sum(0) / w.classes
    return mean[None, :] - w.frequencies[:, None] * w.inputs


def test_imbalance_at_zero_loss_is_ln_c_and_gradient_scales_with_frequency():
    w = Imbalance(classes=16, alpha=1.0, dim=8)
    model = w.model(0)
    metrics = w.evaluate(model)
    assert set(metrics) == {"val_loss", "val_loss_q1", "val_loss_q2", "val_loss_q3", "val_loss_q4"}
    for value in metrics.values():  # uniform predictions: every class, every group
        assert value == pytest.approx(math.log(16), rel=1e-12)
    w.loss(model, None).backward()
    assert torch.allclose(model.weight.grad, _imbalance_gradient(w), atol=1e-15)
    # groups hold equal shares of the examples: the most frequent group has the fewest classes
    sizes = torch.bincount(w.groups).tolist()
    assert sizes == sorted(sizes) and sizes[0] < sizes[-1]
    shares = [float(w.frequencies[w.groups == k].sum()) for k in range(4)]
    assert shares[0] >= 0.2 and shares[-1] >= 0.2


def test_imbalance_label_noise_is_the_expected_loss_over_labels_and_keeps_ln_c_at_zero():
    w = Imbalance(classes=6, dim=3, label_noise=0.3, init_scale=0.5)
    model = w.model(4)
    logits = model(w.inputs).detach()
    every = -torch.log_softmax(logits, dim=1)  # CE(z_k, j) for every class k and label j
    expected = 0.7 * every.diagonal() + 0.3 * every.mean(dim=1)
    assert torch.allclose(w.class_losses(model).detach(), expected, rtol=1e-12)
    assert not torch.equal(model.weight, w.model(5).weight)  # the seed draws the start
    zero = Imbalance(classes=6, dim=3, label_noise=0.3)
    assert zero.evaluate(zero.model(0))["val_loss"] == pytest.approx(math.log(6), rel=1e-12)
    batch = Imbalance(classes=6, dim=3, label_noise=0.3, stochastic=True).batch(1, 2, 4000)
    classes, labels = batch
    changed = float((classes != labels).double().mean())  # noise 0.3, 1/6 of it lands on k
    assert changed == pytest.approx(0.3 * 5 / 6, abs=0.03)


@pytest.mark.parametrize(("optimizer", "direction"), [("sgd", "gradient"), ("signsgd", "sign")])
def test_imbalance_one_step_through_train_is_gradient_or_sign(tmp_path, optimizer, direction):
    lr = 0.5
    setup = (
        {**GD, "optimizer": optimizer}
        if optimizer == "sgd"
        else {"optimizer": optimizer, "grad_clip": None, "schedule": "constant"}
    )
    run = _run(workload="imbalance", classes=16, dim=8, steps=1, lr=lr, log_every=1, **setup)
    result = train(run, data_root=tmp_path, log=None)
    w = Imbalance(classes=16, alpha=1.0, dim=8)
    g = _imbalance_gradient(w)
    model = w.model(0)
    with torch.no_grad():
        model.weight.copy_(-lr * (g if direction == "gradient" else g.sign()))
    expected = w.evaluate(model)
    for name, value in expected.items():
        assert result.metrics[name] == pytest.approx(value, rel=1e-9), name
    assert result.curve[0]["train_loss"] == pytest.approx(math.log(16), rel=1e-6)


def test_gradient_descent_learns_rare_classes_slower_than_sign_descent(tmp_path):
    out = {}
    for optimizer, lr in (("sgd", 3.0), ("signsgd", 0.02)):
        extra = {"momentum": 0.0} if optimizer == "sgd" else {}
        run = _run(
            workload="imbalance",
            steps=60,
            lr=lr,
            optimizer=optimizer,
            grad_clip=None,
            schedule="constant",
            log_every=10,
            **extra,
        )
        out[optimizer] = train(run, data_root=tmp_path, log=None).metrics
    gd, sign = out["sgd"], out["signsgd"]
    # GD: frequent classes far ahead of rare ones; sign descent: the gap much smaller
    assert gd["val_loss_q4"] - gd["val_loss_q1"] > 2 * (sign["val_loss_q4"] - sign["val_loss_q1"])


@pytest.mark.parametrize("workload", ["quadratic", "imbalance"])
@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
def test_every_optimizer_of_the_zoo_trains_or_refuses_in_one_line(tmp_path, workload, optimizer):
    extra = {"clip_value": 0.01} if optimizer == "sgd_cclip" else {}
    run = _run(workload=workload, steps=4, optimizer=optimizer, lr=1e-3, log_every=2, **extra)
    refuses = optimizer == "coupled_adam" or (optimizer == "muon" and workload == "quadratic")
    if refuses:
        with pytest.raises(Exception, match=rf"optimizer '{optimizer}' .* workload") as e:
            train(run, data_root=tmp_path, log=None)
        assert "\n" not in str(e.value)
        return
    result = train(run, data_root=tmp_path, log=None)
    assert result.status == "completed", result.error
    assert math.isfinite(result.metrics["val_loss"]) and result.steps_done == 4


@pytest.mark.parametrize("workload", ["quadratic", "imbalance"])
@pytest.mark.parametrize(
    "optimizer",
    [
        "tests.user_optimizers:EveryPattern",  # every constructor pattern
        "tests.user_optimizers:TwoPassSAM",  # needs the closure: a second pass per step
        "schedulefree:AdamWScheduleFree",  # train/eval modes, from PyPI as it is
    ],
)
def test_users_optimizers_train_a_workload(tmp_path, workload, optimizer):
    run = _run(
        workload=workload, steps=4, optimizer=optimizer, lr=1e-3, log_every=2, schedule="constant"
    )
    result = train(run, data_root=tmp_path, log=None)
    assert result.status == "completed", result.error
    assert math.isfinite(result.metrics["val_loss"])
    assert result.metrics["passes_per_step"] == (2.0 if "SAM" in optimizer else 1.0)


USER_WORKLOAD = '''
import torch
from torch import nn


class Line:
    """Least squares on one weight: loss = 1/2 (w - target)^2."""

    def __init__(self, target: float = 2.0) -> None:
        self.target = target

    def model(self, seed):
        line = nn.Linear(1, 1, bias=False, dtype=torch.float64)
        nn.init.zeros_(line.weight)
        return line

    def batch(self, seed, step, size):
        return None

    def loss(self, model, batch):
        return 0.5 * (model.weight.sum() - self.target) ** 2

    def evaluate(self, model):
        return {"val_loss": float(self.loss(model, None).detach())}

    def reference_loss(self, model):
        return max(1.0, float(self.loss(model, None).detach()))


class Partial:
    def model(self, seed):
        return nn.Linear(1, 1)

    def batch(self, seed, step, size):
        return None

    def loss(self, model, batch):
        return model.weight.sum()
'''

GRID = """
name: wl
base: {{workload: {workload}, optimizer: sgd, momentum: 0.0, lr: 0.001, steps: 8, log_every: 2,
        grad_clip: null, schedule: constant}}
grid: {{{axis}}}
seeds: [0, 1]
"""


@pytest.mark.parametrize(
    ("workload", "axis", "key"),
    [
        ("quadratic", "spectrum: [heterogeneous, homogeneous]", "spectrum"),
        ("harness.workloads.imbalance:Imbalance", "alpha: [0.5, 1.0]", "alpha"),
        ("./line.py:Line", "target: [1.0, 3.0]", "target"),
    ],
)
def test_a_grid_names_a_workload_by_name_reference_or_file(tmp_path, workload, axis, key):
    (tmp_path / "line.py").write_text(USER_WORKLOAD)
    (tmp_path / "wl.yaml").write_text(GRID.format(workload=workload, axis=axis))
    runs = load_grid(tmp_path / "wl.yaml", vocab=lambda name: 1).runs
    assert len(runs) == 4 and len({r.run_id for r in runs}) == 4
    assert len({r.optim.hyperparameters.as_dict()[key] for r in runs}) == 2
    result = train(runs[0], data_root=tmp_path, log=None)
    assert result.status == "completed", result.error
    if workload.endswith("Line"):  # GD on 1/2 (w - t)^2 from 0: w_T - t = -(1 - lr)^T t
        target = runs[0].optim.hyperparameters.as_dict()["target"]
        expected = 0.5 * (1 - 0.001) ** (2 * 8) * target**2
        assert result.metrics["val_loss"] == pytest.approx(expected, rel=1e-12)


def _cli(*args: object, code: int = 0, stdout: bool = False) -> str:
    r = CliRunner().invoke(main, [str(a) for a in args])
    assert r.exit_code == code, r.output
    return r.stdout if stdout else r.output


@pytest.mark.slow
def test_rows_are_typed_skipped_on_resubmit_and_analysed(tmp_path):
    (tmp_path / "wl.yaml").write_text(
        GRID.replace("seeds: [0, 1]", "seeds: [0]").format(
            workload="quadratic", axis="spectrum: [heterogeneous, homogeneous]"
        )
    )
    common = ["--results", tmp_path / "results"]
    argv = ["submit", tmp_path / "wl.yaml", "--launcher", "local", *common, "--data", tmp_path]
    _cli(*argv)
    files = sorted((tmp_path / "results" / "wl" / "runs").glob("*.parquet"))
    rows = [pq.read_table(f).to_pylist()[0] for f in files]
    assert len(rows) == 2 and {r["status"] for r in rows} == {"completed"}
    schema = pq.read_schema(files[0])
    types = {n: str(schema.field(n).type) for n in ("spectrum", "blocks", "condition", "rotate")}
    assert types == {
        "spectrum": "string",
        "blocks": "int64",
        "condition": "double",
        "rotate": "bool",
    }
    assert {r["workload"] for r in rows} == {"quadratic"}
    assert {r["workload_parameters"] for r in rows} == {
        "spectrum,blocks,block_dim,condition,noise,rotate"
    }
    assert {r["own_hyperparameters"] for r in rows} == {None}  # none is the optimizer's own
    assert "skipped 2 with a result" in _cli(*argv)
    best = _cli(
        "analyze",
        "best",
        tmp_path / "wl.yaml",
        "--by",
        "spectrum",
        "--metric",
        "val_loss",
        "--format",
        "json",
        *common,
        stdout=True,
    )
    cells = json.loads(best)
    assert sorted(c["spectrum"] for c in cells) == ["heterogeneous", "homogeneous"]
    assert all(c["n"] == 1 for c in cells)
    default = _cli("analyze", "best", tmp_path / "wl.yaml", "--metric", "val_loss", *common)
    assert "cells by spectrum too" in default  # a condition: a cell by default, never tuned over
    for figure in ("loss_curves", "metric_vs_tokens"):  # a workload has no perplexity
        _cli("figures", tmp_path / "wl.yaml", "--figure", figure, "--metric", "val_loss", *common)
        assert (tmp_path / "results" / "wl" / "figures" / f"{figure}-val_loss.png").is_file()


@pytest.mark.slow
def test_a_workload_grid_analyses_and_confirms_on_its_loss_without_metric(tmp_path):
    # a workload has no val_ppl: the default metric falls back to val_loss (and says so)
    (tmp_path / "wl.yaml").write_text(
        GRID.format(workload="quadratic", axis="lr: [0.0001, 0.001]").replace(
            "seeds: [0, 1]", "seeds: {tune: [0], confirm: [1]}"
        )
    )
    common = ["--results", tmp_path / "results"]
    argv = ["submit", tmp_path / "wl.yaml", "--launcher", "local", *common, "--data", tmp_path]
    _cli(*argv)
    out = _cli(*argv, "--confirm", "--dry-run")  # selected by val_loss, as the analysis does
    assert "confirm lr=0.001 on seed(s) 1" in out, out
    best = CliRunner().invoke(
        main, ["analyze", "best", str(tmp_path / "wl.yaml"), "--format", "json", *map(str, common)]
    )
    assert best.exit_code == 0, best.output
    assert json.loads(best.stdout)[0]["lr"] == 0.001
    assert "metric val_loss: no run has val_ppl" in best.stderr
    figures = _cli("figures", tmp_path / "wl.yaml", "--figure", "lr_sensitivity", *common)
    assert "metric val_loss: no run has val_ppl" in figures
    assert (tmp_path / "results" / "wl" / "figures" / "lr_sensitivity-val_loss.png").is_file()


@pytest.mark.parametrize("optimizer", ["adam", "signum"])
def test_resume_from_checkpoint_equals_uninterrupted(tmp_path, optimizer):
    run = _run(
        workload="imbalance",
        stochastic=True,
        batch_size=16,
        steps=8,
        optimizer=optimizer,
        lr=0.05,
        log_every=1,
    )
    whole = train(run, data_root=tmp_path, log=None)
    ckpt = Checkpointing(tmp_path / "run.pt", every_s=600.0)
    calls = {"n": 0}

    def stop_after_three() -> bool:
        calls["n"] += 1
        return calls["n"] == 4

    with pytest.raises(TrainingInterrupted):
        train(run, data_root=tmp_path, checkpoint=ckpt, should_stop=stop_after_three, log=None)
    torch.manual_seed(1234)
    resumed = train(run, data_root=tmp_path, checkpoint=ckpt, log=None)
    assert [p["train_loss"] for p in resumed.curve] == [p["train_loss"] for p in whole.curve]
    assert resumed.metrics["val_loss"] == whole.metrics["val_loss"]
    assert resumed.metrics["val_loss_q4"] == whole.metrics["val_loss_q4"]


def test_weight_decay_on_a_workload_without_decayed_parameters_refuses(tmp_path):
    run = _run(workload="quadratic", steps=2, optimizer="adamw", lr=1e-3, weight_decay=0.1)
    with pytest.raises(Exception, match=r"weight_decay 0\.1: workload 'quadratic' has no param"):
        train(run, data_root=tmp_path, log=None)
    decayed = _run(workload="imbalance", steps=2, optimizer="adamw", lr=1e-3, weight_decay=0.1)
    assert train(decayed, data_root=tmp_path, log=None).status == "completed"  # W is a matrix


BAD = [
    ("nope", "", "unknown workload 'nope'; valid choices: imbalance, quadratic"),
    ("./line.py:Partial", "", "has no method evaluate, reference_loss"),
    ("quadratic", "spectrum: [flat]", "spectrum: 'flat' is not one of 'heterogeneous'"),
    ("quadratic", "blocks: [many]", "blocks: expected int, got the string 'many'"),
    ("quadratic", "classes: [4]", "unknown key 'classes'"),
    ("./line.py:Nope", "", "has no attribute 'Nope'"),
]


@pytest.mark.parametrize(("workload", "axis", "message"), BAD)
def test_a_bad_workload_or_parameter_is_one_line_exit_2_nothing_written(
    tmp_path, workload, axis, message
):
    (tmp_path / "line.py").write_text(USER_WORKLOAD)
    (tmp_path / "bad.yaml").write_text(
        textwrap.dedent(f"""
        name: bad
        base: {{workload: "{workload}", optimizer: sgd, lr: 0.01, steps: 4}}
        grid: {{{axis}}}
        """)
    )
    argv = ["submit", tmp_path / "bad.yaml", "--launcher", "local", "--results", tmp_path / "res"]
    r = CliRunner().invoke(main, [str(a) for a in argv])
    assert r.exit_code == 2, r.output
    assert message in r.output
    assert len([ln for ln in r.output.splitlines() if ln.startswith("error:")]) == 1
    assert "Traceback" not in r.output and not (tmp_path / "res").exists()


@pytest.mark.slow
def test_the_preflight_refuses_an_optimizer_the_workload_cannot_take(tmp_path):
    (tmp_path / "g.yaml").write_text(
        "name: g\nbase: {workload: quadratic, lr: 0.01, steps: 4}\n"
        "grid: {optimizer: [adamw, muon, coupled_adam]}\n"
    )
    argv = [
        "submit",
        tmp_path / "g.yaml",
        "--launcher",
        "local",
        "--results",
        tmp_path / "res",
        "--dry-run",
        "--check",
    ]
    r = CliRunner().invoke(main, [str(a) for a in argv])
    assert r.exit_code == 2, r.output
    assert "optimizer 'muon' acts on matrix parameters only" in r.output
    assert "optimizer 'coupled_adam' is defined on the embedding and head" in r.output
    assert "adamw" not in r.output.split("failed", 1)[1].split("muon")[0]
    assert not (tmp_path / "res").exists()


@pytest.mark.parametrize(("name", "runs"), [("toy_quadratic", 114), ("toy_imbalance", 42)])
def test_the_toy_studies_grids_expand(name, runs):
    grid = Path(__file__).resolve().parents[2] / "analysis" / "studies" / f"{name}.yaml"
    planned = load_grid(grid, vocab=lambda dataset: 1, local=True).runs
    assert len(planned) == runs and {r.arch.workload for r in planned} == {name.split("_")[1]}


def test_the_gpt_is_the_default_workload_behind_the_same_interface(prepared_data):
    """A run that names no workload trains the registry's default, the GPT, through the loop's
    one interface (``Trained``) as a toy does through ``Bound``: micro-batches that are a pure
    function of (seed, step), a loss that is the logits' cross-entropy, one process for a toy."""
    cpu, plain = torch.device("cpu"), contextlib.nullcontext
    gpt = bind(tiny_run(prepared_data, micro_batch_size=4), prepared_data, cpu, plain, 0, 1)
    assert f"{type(gpt).__module__}:{type(gpt).__qualname__}" == DEFAULT
    first, again = gpt.micro_batches(3), gpt.micro_batches(3)
    assert len(first) == 2  # batch_size 8 in micro-batches of 4
    for (x1, y1), (x2, y2) in zip(first, again, strict=True):
        assert torch.equal(x1, x2) and torch.equal(y1, y2)
    assert not torch.equal(first[0][0], gpt.micro_batches(4)[0][0])
    model = gpt.build()
    x, y = first[0]
    logits = model(x).float()
    expected = F.cross_entropy(logits.view(-1, logits.size(-1)), y.reshape(-1))
    assert gpt.loss(model, first[0]).item() == pytest.approx(expected.item(), rel=1e-6)
    toy = bind(_run(workload="quadratic", **GD, lr=0.1, steps=2), prepared_data, cpu, plain, 0, 1)
    assert isinstance(toy, Bound) and len(toy.micro_batches(0)) == 1
    with pytest.raises(UserError, match="one process"):
        bind(_run(workload="quadratic", **GD, lr=0.1, steps=2), prepared_data, cpu, plain, 0, 2)
