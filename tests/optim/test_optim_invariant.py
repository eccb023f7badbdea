"""The paper's key invariant (Sec. 2, Eqs. 8-17), on the real GPT of ``harness.model.gpt``.

With only the language-model head's gradient of a softmax cross-entropy, the gradients of the
output-embedding rows sum to zero over the vocabulary, so the mean output embedding
mu = (1/V) sum_i e_i stays fixed under SGD (with momentum) and Coupled Adam, and moves under
AdamW. Tied model: the rows are the input embedding; untied: the head matrix's rows.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from harness.optim.build import build_optimizer
from tests.optim_runs import SEQ, VOCAB, make_model, make_run

STEPS = 8


def mean_shift(optimizer: str, model: str) -> tuple[float, float]:
    """(||mu_T - mu_0||, max row change) after STEPS head-only steps, in float64."""
    run = make_run(model=model, optimizer=optimizer, lr=0.05, weight_decay=0.1)
    net = make_model(run).double()
    opt = build_optimizer(net, run)
    W = net.output_weight()  # (V, d): the embedding when tied, else the head
    hidden: list[torch.Tensor] = []
    net.norm.register_forward_hook(lambda mod, inp, out: hidden.append(out.detach()))
    w0 = W.detach().clone()
    gen = torch.Generator().manual_seed(0)
    for _ in range(STEPS):
        x = torch.randint(0, VOCAB, (4, SEQ), generator=gen)
        y = torch.randint(0, VOCAB, (4, SEQ), generator=gen)
        hidden.clear()
        with torch.no_grad():
            net(x)  # the trunk's final hidden states h, (4, SEQ, d), no gradient
        logits = F.linear(hidden[0], W)  # only the LM head sees the gradient
        F.cross_entropy(logits.view(-1, VOCAB), y.view(-1)).backward()
        assert all(p.grad is None for p in net.parameters() if p is not W)
        opt.step()
        opt.zero_grad(set_to_none=True)
    shift = float((W.detach().mean(dim=0) - w0.mean(dim=0)).norm())
    moved = float((W.detach() - w0).abs().max())
    return shift, moved


@pytest.mark.parametrize("model", ["tiny-gpt2", "tiny"], ids=["tied", "untied"])
@pytest.mark.parametrize("optimizer", ["sgd", "coupled_adam"])
def test_mean_embedding_fixed(optimizer: str, model: str) -> None:
    shift, moved = mean_shift(optimizer, model)
    assert moved > 1e-3  # the rows did move ...
    assert shift < 1e-14  # ... but not their mean


@pytest.mark.parametrize("model", ["tiny-gpt2", "tiny"], ids=["tied", "untied"])
def test_mean_embedding_moves_under_adamw(model: str) -> None:
    shift, moved = mean_shift("adamw", model)
    assert moved > 1e-3
    assert shift > 1e-3
