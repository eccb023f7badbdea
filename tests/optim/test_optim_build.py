"""Routing, ``build_optimizer``, the per-group optimizer override and exact resume.

Runs are resolved the way a grid resolves them (``harness.grid.resolve.Resolver``); models are the
real ``harness.model.gpt.GPT`` at a tiny size.
"""

from __future__ import annotations

import copy
import io
from typing import Any

import pytest
import torch

from harness.core.errors import UserError
from harness.optim.adam import AdamW, CoupledAdam
from harness.optim.build import build_optimizer
from harness.optim.composite import CompositeOptimizer
from harness.optim.registry import OPTIMIZERS, get_spec
from harness.optim.sgd import SGD
from tests.optim_runs import make_model, make_run, train_steps


def groups_by_name(opt: torch.optim.Optimizer) -> dict[str, dict[str, Any]]:
    return {g["name"]: g for g in opt.param_groups}


@pytest.mark.parametrize("model", ["tiny-gpt2", "tiny"])
def test_routing_weight_decay_on_matrices_only(model: str) -> None:
    run = make_run(model=model, optimizer="adamw")
    net = make_model(run)
    groups = groups_by_name(build_optimizer(net, run))
    tied = model == "tiny-gpt2"
    assert set(groups) == ({"embedding", "matrix", "vector"} | (set() if tied else {"head"}))
    assert groups["embedding"]["params"] == [net.embedding.weight]
    if not tied:
        assert groups["head"]["params"] == [net.head.weight]
    assert {name: g["weight_decay"] for name, g in groups.items()} == {
        name: (0.1 if name == "matrix" else 0.0) for name in groups
    }
    assert all(p.ndim == 2 for p in groups["matrix"]["params"])
    if tied:  # learned positions are 2-D but routed to the vectors (no weight decay)
        assert any(p is net.pos_embedding.weight for p in groups["vector"]["params"])
    routed = [p for g in groups.values() for p in g["params"]]
    assert len(routed) == len({id(p) for p in routed}) == len(list(net.parameters()))


def decayed_names(net: torch.nn.Module, opt: torch.optim.Optimizer) -> set[str]:
    names = {id(p): n for n, p in net.named_parameters()}
    return {names[id(p)] for g in opt.param_groups if g["weight_decay"] > 0 for p in g["params"]}


@pytest.mark.parametrize("model", ["tiny-gpt2", "tiny"])
def test_decay_params_conventions_decay_exactly_the_sources_tensors(model: str) -> None:
    """plainLM (``all_weights``) decays every parameter whose name has neither ``bias`` nor
    ``norm``; nanoGPT as the paper's code runs it (``no_embedding``) every >= 2-D tensor except
    the token embedding (= the tied head); ``matrices`` only the hidden weight matrices."""
    run = make_run(model=model, optimizer="adamw")
    net = make_model(run)
    names = [n for n, _ in net.named_parameters()]
    hidden = {n for n, p in net.named_parameters() if p.ndim >= 2 and "blocks." in n}
    plainlm = {n for n in names if "bias" not in n and "norm" not in n}
    nanogpt = {n for n, p in net.named_parameters() if p.ndim >= 2 and n != "embedding.weight"}
    expected = {"matrices": hidden, "all_weights": plainlm, "no_embedding": nanogpt}
    for convention, want in expected.items():
        r = make_run(model=model, optimizer="adamw", decay_params=convention)
        opt = build_optimizer(net, r)
        assert decayed_names(net, opt) == want, convention
        routed = [p for g in opt.param_groups for p in g["params"]]
        assert len(routed) == len({id(p) for p in routed}) == len(names)
    assert "embedding.weight" in plainlm and "embedding.weight" not in nanogpt
    if model == "tiny-gpt2":  # learned positions: decayed by nanoGPT, not by the default
        assert "pos_embedding.weight" in nanogpt - hidden
    else:  # untied head: decayed by both source conventions
        assert "head.weight" in plainlm & nanogpt


def test_sgd_l2_weight_decay_is_torch_sgd_and_differs_from_decoupled() -> None:
    """``weight_decay_mode: l2`` is torch.optim.SGD's weight decay (the talk's base code),
    bitwise; decoupled decay moves the weights differently."""
    torch.manual_seed(0)
    w0 = torch.randn(6, 5)
    grads = [torch.randn(6, 5) for _ in range(4)]

    def run(make) -> torch.Tensor:
        w = torch.nn.Parameter(w0.clone())
        opt = make([w])
        for g in grads:
            w.grad = g.clone()
            opt.step()
        return w.detach()

    kw = {"lr": 0.1, "momentum": 0.9, "weight_decay": 0.05}
    ours = run(lambda p: SGD(p, **kw, weight_decay_mode="l2"))
    theirs = run(lambda p: torch.optim.SGD(p, **kw, foreach=True))
    assert torch.equal(ours, theirs)
    decoupled = run(lambda p: SGD(p, **kw))
    assert not torch.allclose(decoupled, theirs, atol=1e-4)
    with pytest.raises(ValueError, match="weight_decay_mode"):
        SGD([torch.nn.Parameter(w0.clone())], weight_decay_mode="l1")


def test_weight_decay_mode_reaches_the_sgd_family_only() -> None:
    assert make_run(optimizer="sgd").optim.weight_decay_mode == "decoupled"
    run = make_run(optimizer="sgd_cclip", clip_value=1.0, weight_decay_mode="l2")
    (group, *_) = build_optimizer(make_model(run), run).param_groups
    assert group["weight_decay_mode"] == "l2"
    assert make_run(optimizer="adamw", weight_decay_mode="l2").optim.weight_decay_mode is None


@pytest.mark.parametrize("model", ["tiny-gpt2", "tiny"])
def test_coupled_adam_couples_embedding_and_untied_head(model: str) -> None:
    run = make_run(model=model, optimizer="coupled_adam", coupled_scale_exp=2)
    opt = build_optimizer(make_model(run), run)
    assert isinstance(opt, CoupledAdam)
    groups = groups_by_name(opt)
    assert {n: g["coupled"] for n, g in groups.items()} == {
        n: n in ("embedding", "head") for n in groups
    }
    assert all(g["coupled_scale_exp"] == 2.0 for g in groups.values())


def test_muon_only_on_matrix_group() -> None:
    run = make_run(model="tiny", optimizer="muon")
    groups = groups_by_name(build_optimizer(make_model(run), run))
    assert {n: g["muon"] for n, g in groups.items()} == {n: n == "matrix" for n in groups}


def test_spec_kwargs_use_torch_names() -> None:
    assert get_spec("adamw").kwargs(make_run(optimizer="adamw", beta2=0.95)) == {
        "betas": (0.9, 0.95),
        "eps": 1e-8,
    }
    assert get_spec("signum").kwargs(make_run(optimizer="signum", beta1=0.8)) == {"beta": 0.8}
    assert get_spec("rmsprop").kwargs(make_run(optimizer="rmsprop")) == {
        "beta2": 0.999,
        "eps": 1e-8,
    }
    run = make_run(optimizer="sgd_cclip", momentum=0.5, nesterov=True, clip_value=2.0)
    assert get_spec("sgd_cclip").kwargs(run) == {
        "momentum": 0.5,
        "nesterov": True,
        "weight_decay_mode": "decoupled",
        "clip_value": 2.0,
    }


def test_unknown_optimizer_lists_the_known_ones() -> None:
    with pytest.raises(UserError) as err:
        get_spec("adamww")
    assert "'adamww'" in str(err.value)
    assert all(name in str(err.value) for name in OPTIMIZERS)


def test_embedding_optimizer_override_is_sgd_with_lr_factor() -> None:
    """Paper Sec. 6.2: embedding by SGD (momentum 0.9) at lr * f, the rest by AdamW."""
    run = make_run(optimizer="adamw", embedding_optimizer="sgd", embedding_lr_factor=300)
    net = make_model(run)
    opt = build_optimizer(net, run)
    assert isinstance(opt, CompositeOptimizer)
    assert isinstance(opt.parts["main"], AdamW) and isinstance(opt.parts["embedding"], SGD)
    (emb_group,) = opt.parts["embedding"].param_groups
    assert emb_group["params"] == [net.embedding.weight]
    assert (emb_group["momentum"], emb_group["nesterov"], emb_group["lr_scale"]) == (
        0.9,
        False,
        300,
    )
    assert all(g["name"] != "embedding" for g in opt.parts["main"].param_groups)
    assert len(opt.param_groups) == sum(len(p.param_groups) for p in opt.parts.values())
    before = net.embedding.weight.detach().clone()
    train_steps(net, opt, range(1))
    # first SGD step: b = g, w <- w - lr * 300 * g (the trainer's lr reached the part's group)
    assert opt.state[net.embedding.weight].keys() == {"momentum_buffer"}
    step = before - net.embedding.weight.detach()
    torch.testing.assert_close(
        step, 1e-2 * 300 * opt.state[net.embedding.weight]["momentum_buffer"]
    )
    assert "exp_avg_sq" in opt.state[net.blocks[0].attn.proj.weight]


def test_embedding_optimizer_fields_are_resolved_and_settable() -> None:
    # adamw reads no momentum; the embedding optimizer sgd does: the grid's value reaches it.
    run = make_run(optimizer="adamw", embedding_optimizer="sgd", momentum=0.8, nesterov=True)
    assert (run.optim.momentum, run.optim.nesterov, run.optim.beta1) == (0.8, True, 0.9)
    (emb_group,) = build_optimizer(make_model(run), run).parts["embedding"].param_groups
    assert (emb_group["momentum"], emb_group["nesterov"]) == (0.8, True)
    # Unset, it is sgd's default, recorded in the run (and its run_id), not left NULL.
    assert make_run(optimizer="adamw", embedding_optimizer="sgd").optim.momentum == 0.9
    # Without an embedding optimizer that reads it, momentum is not a field of the run.
    assert make_run(optimizer="adamw", momentum=0.8).optim.momentum is None
    with pytest.raises(UserError, match="optimizer 'sgd_cclip' needs 'clip_value'"):
        make_run(optimizer="adamw", embedding_optimizer="sgd_cclip")


def test_embedding_optimizer_equal_to_main_only_scales_lr() -> None:
    run = make_run(optimizer="adamw", embedding_optimizer="adamw", embedding_lr_factor=3)
    opt = build_optimizer(make_model(run), run)
    assert isinstance(opt, AdamW)
    assert groups_by_name(opt)["embedding"]["lr_scale"] == 3.0


RESUME_CASES = [{"optimizer": name} for name in sorted(OPTIMIZERS)] + [
    {"optimizer": "adamw", "embedding_optimizer": "sgd", "embedding_lr_factor": 300},
    {"optimizer": "coupled_adam", "model": "tiny", "embedding_optimizer": "signum"},
]


@pytest.mark.parametrize("point", RESUME_CASES, ids=lambda p: "+".join(map(str, p.values())))
def test_resume_from_state_dict_is_bitwise_identical(point: dict[str, Any]) -> None:
    run = make_run(**point)
    net = make_model(run)
    opt = build_optimizer(net, run)
    train_steps(net, opt, range(3))
    buf = io.BytesIO()  # what a checkpoint does
    torch.save({"model": net.state_dict(), "optimizer": opt.state_dict()}, buf)
    saved_groups = copy.deepcopy(
        [{k: v for k, v in g.items() if k != "params"} for g in opt.param_groups]
    )
    train_steps(net, opt, range(3, 6))

    resumed = make_model(run, seed=123)  # different init: everything must come from the file
    opt2 = build_optimizer(resumed, run)
    buf.seek(0)
    saved = torch.load(buf, weights_only=True)
    resumed.load_state_dict(saved["model"])
    opt2.load_state_dict(saved["optimizer"])
    assert [
        {k: v for k, v in g.items() if k != "params"} for g in opt2.param_groups
    ] == saved_groups
    train_steps(resumed, opt2, range(3, 6))
    for (name, a), b in zip(net.named_parameters(), resumed.parameters(), strict=True):
        assert torch.equal(a, b), name
