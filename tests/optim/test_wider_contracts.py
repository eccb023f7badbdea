"""Optimizers whose contract is wider than ``step()`` (issue 29, items 7 and 8), each with the
real PyPI package: given what it needs by a declaration (:func:`harness.optim.hooks.declare`, in
a file a grid names), or named by the dry run when it is not wired, never silently run as
another algorithm; a sentinel default is left to the constructor (heavyball); an optimizer that
schedules its own learning rate is refused by the preflight (Ranger21)."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from harness.cli import main
from harness.grid.resolve import Resolver
from harness.model.build import build_model
from harness.optim.build import build_optimizer
from harness.train.loop import train

DECLARATIONS = """\
from harness.optim.hooks import declare

SOPHIA = declare("sophia_opt:SophiaG", every={"update_hessian": 2})
ADAHESSIAN = declare("torch_optimizer:Adahessian", create_graph=True)
GALORE = declare(
    "pytorch_optimizer:GaLore",
    group_options={"matrix": {"rank": 2, "update_proj_gap": 2, "scale": 0.25,
                              "projection_type": "std"}},
)
ADAM_MINI = declare("adam_mini:Adam_mini", takes=("embedding", "head", "matrix"))
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "declared.py").write_text(DECLARATIONS)
    return tmp_path


def _grid(project: Path, body: str, base: str) -> Path:
    path = project / "wide.yaml"
    path.write_text(f"name: wide\nbase: {{{base}}}\n" + textwrap.dedent(body))
    return path


GPT = "model: tiny, seq_len: 16, batch_size: 2, steps: 4, lr: 1.0e-3, eval_tokens: 512"
QUADRATIC = "workload: quadratic, steps: 6, lr: 0.01, log_every: 1"


def _cli(*args: object, code: int = 0) -> str:
    r = CliRunner().invoke(main, [str(a) for a in args])
    assert r.exit_code == code, r.output
    return r.output


def _check(path: Path, code: int = 0) -> str:
    return _cli("submit", path, "--launcher", "local", "--dry-run", "--check", code=code)


def _named_then_wired(project: Path, plain: str, declared: str, base: str, note: str) -> None:
    """The dry run of a grid naming the class ``plain`` says ``note``; the grid naming the
    declaration ``declared`` says nothing of it, and its preflight passes."""
    path = _grid(project, f"grid: {{optimizer: {{{plain}: {{}}}}}}\n", base)
    assert note in _cli("submit", path, "--launcher", "local", "--dry-run")
    path = _grid(project, f"grid: {{optimizer: {{./declared.py:{declared}: {{}}}}}}\n", base)
    out = _check(path)
    assert note not in out and "built and stepped" in out


def _resolve(project: Path, **point: object):
    return Resolver("wide", "full", lambda name: 64, "test", project).resolve(point, "test run")


def _train(project: Path, **point: object):
    run = _resolve(project, **{"workload": "quadratic", "steps": 6, "log_every": 1, **point})
    result = train(run, data_root=project, log=None)
    assert result.status == "completed", result.error
    return result


def test_heavyball_sentinel_defaults_are_left_to_the_constructor_and_null_is_accepted(project):
    """Item 7: SOAP's ``palm=use_default`` (an object() annotated bool) is no longer validated as
    if the grid had set it; the dry run says so; a grid may still set it; PSGDKron's
    ``delayed: Optional[bool] = use_default`` accepts null."""
    path = _grid(project, "grid: {optimizer: {heavyball:SOAP: {}}}\n", GPT)
    out = _cli("submit", path, "--launcher", "local", "--dry-run")
    assert "note: optimizer SOAP: argument 'palm' (its default <object> is not a bool)" in out
    set_it = _grid(project, "grid: {optimizer: {heavyball:SOAP: {palm: [true]}}}\n", GPT)
    assert "1 runs" in _cli("submit", set_it, "--launcher", "local", "--dry-run")
    tiny = {"model": "tiny", "lr": 1e-3, "seq_len": 16, "batch_size": 2, "steps": 2}
    run = _resolve(project, **tiny, optimizer="heavyball:PSGDKron", delayed=None)
    assert "delayed" not in run.optim.hyperparameters.as_dict()  # null: the constructor's own
    palm = _resolve(project, **tiny, optimizer="heavyball:SOAP", palm=True)
    from harness.optim.registry import get_spec

    kwargs = get_spec("heavyball:SOAP").kwargs(palm)
    assert kwargs["palm"] is True and "promote" not in kwargs  # unset sentinels: not passed


@pytest.mark.slow
def test_ranger21_scheduling_its_own_lr_is_refused_until_its_schedule_is_off(project) -> None:
    """Item 8: Ranger21 warms up on top of the harness's schedule; the preflight sees the step
    change its lr and refuses, naming it; with its warmup off, or the harness's schedule constant
    (its own the only one), it passes."""
    keys = "num_epochs: [1], num_batches_per_epoch: [100]"  # 22 steps of its own warmup
    own = _grid(project, f"grid: {{optimizer: {{ranger21:Ranger21: {{{keys}}}}}}}\n", QUADRATIC)
    out = _check(own, code=2)
    assert "schedules its own learning rate on top of the harness's schedule" in out
    assert "optimizer.current_lr" in out
    alone = _grid(
        project,
        f"grid: {{optimizer: {{ranger21:Ranger21: {{{keys}}}}}}}\n",
        QUADRATIC + ", schedule: constant",
    )
    assert "built and stepped" in _check(alone)  # its own schedule is the only one: allowed
    off = f"{keys}, use_warmup: [false], warmdown_active: [false]"
    quiet = _grid(project, f"grid: {{optimizer: {{ranger21:Ranger21: {{{off}}}}}}}\n", QUADRATIC)
    assert "1 optimizer configuration(s) built and stepped" in _check(quiet)


def test_adam_mini_is_given_named_parameters(project: Path) -> None:
    """Item 8: Adam-mini takes ``named_parameters`` (before: "too many values to unpack"); on the
    GPT, declared to take the >= 2-D groups (its name rules split norm gains as MLP blocks)."""
    path = _grid(
        project, "grid: {optimizer: {adam_mini:Adam_mini: {dim: [16], n_heads: [1]}}}\n", QUADRATIC
    )
    assert "1 optimizer configuration(s) built and stepped" in _check(path)
    run = _resolve(
        project,
        model="tiny",
        optimizer="./declared.py:ADAM_MINI",
        lr=1e-3,
        seq_len=16,
        batch_size=2,
        steps=2,
        dim=128,
        n_heads=2,
    )
    model = build_model(run.arch, 16)
    opt = build_optimizer(model, run)
    x = torch.randint(0, 64, (1, 8))
    model(x).float().pow(2).mean().backward()
    matrix = model.blocks[0].attn.q.weight
    before = matrix.detach().clone()
    opt.step()
    names = {g.get("name") for g in opt.parts["main"].param_groups}
    assert "blocks.0.attn.q.weight" in names  # Adam-mini's own groups, named by parameter
    assert not torch.equal(before, matrix)


@pytest.mark.slow
def test_galore_projects_the_matrices_given_rank_through_group_options(project) -> None:
    """Item 8: GaLore without ``rank`` in a group is plain AdamW (the dry run says so); declared
    with the matrix group's options it projects every matrix and nothing else."""
    note = "note: optimizer GaLore projects only the groups that hold 'rank'"
    _named_then_wired(project, "pytorch_optimizer:GaLore", "GALORE", GPT, note)
    run = _resolve(
        project,
        model="tiny",
        optimizer="./declared.py:GALORE",
        lr=1e-3,
        seq_len=16,
        batch_size=2,
        steps=2,
    )
    model = build_model(run.arch, 16)
    opt = build_optimizer(model, run)
    model(torch.randint(0, 64, (1, 8))).float().pow(2).mean().backward()
    opt.step()
    projected = {
        g["name"]: ["projector" in opt.state[p] for p in g["params"]] for g in opt.param_groups
    }
    assert projected["matrix"] and all(p for p in projected["matrix"])
    assert not any(p for name, ps in projected.items() if name != "matrix" for p in ps)


@pytest.mark.slow
def test_adahessian_gets_a_second_order_backward_when_declared(project: Path) -> None:
    """Item 8: Adahessian needs ``create_graph=True`` in backward: unwired, the dry run names it
    and the preflight refuses it; declared, it trains."""
    plain = _grid(project, "grid: {optimizer: {torch_optimizer:Adahessian: {}}}\n", QUADRATIC)
    out = _check(plain, code=2)
    assert "note" not in out  # the preflight refused first
    assert "arm torch_optimizer:Adahessian" in out
    note = "Adahessian takes Hessian-vector products of the gradients"
    _named_then_wired(project, "torch_optimizer:Adahessian", "ADAHESSIAN", QUADRATIC, note)
    result = _train(project, optimizer="./declared.py:ADAHESSIAN", lr=0.05)
    losses = [p["train_loss"] for p in result.curve]
    assert all(math.isfinite(v) for v in losses) and losses[-1] < losses[0]


@pytest.mark.slow
def test_sophia_update_hessian_is_called_every_k_steps_when_declared(project: Path) -> None:
    """Item 8: SophiaG's ``update_hessian`` is never called by a plain loop (a sign-of-momentum
    step: the dry run names it); declared ``every={"update_hessian": 2}``, the loop calls it
    and the run trains another trajectory."""
    note = "SophiaG has an update_hessian() method that nothing calls"
    _named_then_wired(project, "sophia_opt:SophiaG", "SOPHIA", QUADRATIC, note)
    wired = _train(project, optimizer="./declared.py:SOPHIA", lr=0.01)
    unwired = _train(project, optimizer="sophia_opt:SophiaG", lr=0.01)
    first = [p["train_loss"] for p in wired.curve][:2]
    assert first == [p["train_loss"] for p in unwired.curve][:2]  # the same until the 1st call
    assert wired.curve[-1]["train_loss"] != unwired.curve[-1]["train_loss"]
