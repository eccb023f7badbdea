"""The GPT's training loss in chunks (issue 43): a micro-batch of more than
``GPT.loss_chunk_rows`` tokens never holds its whole (B * T, V) float32 logits; the loss and every
gradient equal the one-piece computation's to float32 rounding, and up to ``loss_chunk_rows``
tokens it is the one-piece computation, bit for bit."""

from __future__ import annotations

import pytest
import torch

from harness.core.config import Architecture
from harness.model.architecture import preset_fields
from harness.model.gpt import GPT, cross_entropy, linear_cross_entropy

V, D = 96, 16


def _data(n_rows: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(2, n_rows // 2, D, generator=gen, requires_grad=True)  # (B, T, d)
    w = (torch.randn(V, D, generator=gen) * 0.5).requires_grad_()  # (V, d)
    t = torch.randint(0, V, (2, n_rows // 2), generator=gen)  # (B, T)
    return x, w, t


def _loss_and_grads(loss: torch.Tensor, *leaves: torch.Tensor) -> list[torch.Tensor]:
    return [loss.detach(), *torch.autograd.grad(loss, leaves)]


@pytest.mark.parametrize("chunk", [7, 16, 50])  # chunks that do and do not divide 100 rows
def test_chunked_loss_and_gradients_equal_the_one_piece_ones(chunk: int) -> None:
    x, w, t = _data(100)
    whole = _loss_and_grads(cross_entropy(x @ w.T, t), x, w)
    chunked = _loss_and_grads(linear_cross_entropy(x, w, t, chunk), x, w)
    for a, b in zip(chunked, whole, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-7)
    with torch.no_grad():  # evaluation: the same loss, no gradients computed
        torch.testing.assert_close(linear_cross_entropy(x, w, t, chunk), whole[0])


def test_a_scaled_loss_scales_the_gradients() -> None:
    """Gradient accumulation divides each micro-batch's loss: backward must scale."""
    x, w, t = _data(40)
    (gx,) = torch.autograd.grad(linear_cross_entropy(x, w, t, 8) / 4, x)
    (ref,) = torch.autograd.grad(cross_entropy(x @ w.T, t) / 4, x)
    torch.testing.assert_close(gx, ref, rtol=1e-5, atol=1e-8)


def test_no_chunk_holds_the_logits_of_the_whole_micro_batch() -> None:
    """What autograd keeps for backward: today's one-piece loss keeps (N, V) logits; the chunked
    one keeps only (N, d) and (V, d) gradients."""
    x, w, t = _data(100)
    assert any(s.numel() >= 100 * V for s in _saved_shapes(x, w, t, None))
    assert all(s.numel() < 100 * V for s in _saved_shapes(x, w, t, 10))


def _saved_shapes(
    x: torch.Tensor, w: torch.Tensor, t: torch.Tensor, chunk: int | None
) -> list[torch.Size]:
    saved: list[torch.Size] = []

    def pack(s: torch.Tensor) -> torch.Tensor:
        saved.append(s.shape)
        return s

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda s: s):
        linear_cross_entropy(x, w, t, chunk)
    return saved


def test_up_to_a_chunk_the_loss_is_the_one_piece_one_bit_for_bit() -> None:
    x, w, t = _data(100)
    assert torch.equal(linear_cross_entropy(x, w, t, 100), cross_entropy(x @ w.T, t))


def test_the_gpt_chunks_its_loss_and_compiles_in_one_graph(monkeypatch: pytest.MonkeyPatch) -> None:
    """The harness's GPT (tied and untied heads) with chunks of 24 of its 64 tokens: the same loss
    and parameter gradients as in one piece, also compiled as one graph (no break)."""
    for preset in ("tiny", "tiny-gpt2"):
        torch.manual_seed(0)
        fields = {**preset_fields(preset), "n_layer": 1, "d_model": 32}  # one layer: half the trace
        model = GPT(Architecture(model=preset, **fields, vocab_size=V), 32)
        gen = torch.Generator().manual_seed(1)
        idx, tgt = (torch.randint(0, V, (2, 32), generator=gen) for _ in range(2))
        params = list(model.parameters())
        monkeypatch.setattr(GPT, "loss_chunk_rows", None)
        whole = _loss_and_grads(model(idx, tgt), *params)
        monkeypatch.setattr(GPT, "loss_chunk_rows", 24)
        chunked = _loss_and_grads(model(idx, tgt), *params)
        compiled = torch.compile(model, backend="aot_eager", fullgraph=True)
        graph = _loss_and_grads(compiled(idx, tgt), *params)
        for a, b, c in zip(chunked, whole, graph, strict=True):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
            torch.testing.assert_close(c, a, rtol=1e-5, atol=1e-6)
