"""A GPT in one readable file (nanoGPT-style), covering the two recipes the harness studies.

- The talk's plainLM-style recipe: RMSNorm pre-norm, SwiGLU MLP, RoPE on a fraction of each head's
  dimensions (GPT-NeoX partial rotary), untied output head, no biases.
- The paper's GPT-2 recipe: LayerNorm pre-norm, GeLU MLP, learned absolute positions, output head
  tied to the input embedding, biases.

Choices written down once, here:

- SwiGLU and GeLU hidden width = ``mlp_ratio * d_model`` rounded to the nearest multiple of 64
  (at least 64): 8/3 * 768 = 2048 exactly; 8/3 * 1024 = 2730.7 -> 2752; 4 * 768 = 3072.
- RoPE rotates the first ``rotary_dims = 2 * round(rotary_frac * head_dim / 2)`` dimensions of each
  head with base 10,000 (NeoX's "rotate half" pairing: dim i with dim i + rotary_dims / 2).
- Init: every Linear and Embedding weight ~ N(0, INIT_STD), biases 0, norm gains 1; with
  ``scaled_init`` the residual output projections (``attn.proj``, ``mlp.proj``) get
  std = INIT_STD / sqrt(2 * n_layer) (GPT-2). Deterministic given torch's global RNG.
- The loss is the mean cross-entropy computed on float32 logits, so bf16 autocast is safe. A
  micro-batch of more than ``GPT.loss_chunk_rows`` tokens never holds its logits at once: they
  are computed, upcast and differentiated chunk by chunk (:func:`linear_cross_entropy`); up to
  that many tokens (every CPU test run) the loss is the one-piece computation, bit for bit.

The model is built from a run's architecture section and its sequence length:
``GPT(run.arch, run.data.seq_len)``.

Parameter names matter to ``harness.optim.routing``: the token embedding is ``embedding``, the
untied head is ``head`` (None when tied), learned positions are ``pos_embedding`` (the only
parameter with "pos" in its name).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import cast

import torch
import torch.nn.functional as F
from torch import nn

from harness.core.config import Architecture, CompleteArchitecture
from harness.core.lm import output_weight

ROPE_BASE = 10_000.0
"""RoPE frequency base (GPT-NeoX / Pythia)."""
INIT_STD = 0.02
"""Standard deviation of the normal init of Linear and Embedding weights (GPT-2)."""

# --- building blocks ---------------------------------------------------------------------------

NORMS: dict[str, Callable[[CompleteArchitecture], nn.Module]] = {
    "rmsnorm": lambda c: nn.RMSNorm(c.d_model, eps=1e-6),
    "layernorm": lambda c: nn.LayerNorm(c.d_model, eps=1e-5, bias=c.bias),
}


class Rotary(nn.Module):
    """Partial rotary position embedding (GPT-NeoX): rotates the first ``rotary_dims`` dims."""

    def __init__(self, cfg: CompleteArchitecture, seq_len: int) -> None:
        super().__init__()
        self.dims = cfg.rotary_dims
        half = torch.arange(0, self.dims, 2, dtype=torch.float32)  # (r/2,)
        inv_freq = 1.0 / ROPE_BASE ** (half / max(self.dims, 1))  # (r/2,)
        t = torch.arange(seq_len, dtype=torch.float32)  # (T_max,)
        freqs = torch.outer(t, inv_freq)  # (T_max, r/2)
        self.cos: torch.Tensor
        self.sin: torch.Tensor
        self.register_buffer("cos", freqs.cos(), persistent=False)
        self.register_buffer("sin", freqs.sin(), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Rotate ``x`` of shape (B, nh, T, hs); computed in float32, returned in x's dtype."""
        if self.dims == 0:
            return x
        T, r = x.size(-2), self.dims
        cos, sin = self.cos[:T], self.sin[:T]  # (T, r/2)
        x1, x2 = x[..., :r].float().chunk(2, dim=-1)  # (B, nh, T, r/2) each
        rotated = torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)  # (B, nh, T, r)
        return torch.cat((rotated.type_as(x), x[..., r:]), dim=-1)  # (B, nh, T, hs)


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention through ``F.scaled_dot_product_attention``."""

    def __init__(self, cfg: CompleteArchitecture) -> None:
        super().__init__()
        self.n_head, self.head_dim = cfg.n_head, cfg.head_dim
        d = cfg.d_model
        self.q = nn.Linear(d, d, bias=cfg.bias)
        self.k = nn.Linear(d, d, bias=cfg.bias)
        self.v = nn.Linear(d, d, bias=cfg.bias)
        self.proj = nn.Linear(d, d, bias=cfg.bias)  # residual output projection

    def forward(self, x: torch.Tensor, rotary: Rotary | None) -> torch.Tensor:
        B, T, C = x.shape  # (B, T, d)
        shape = (B, T, self.n_head, self.head_dim)
        q = self.q(x).view(shape).transpose(1, 2)  # (B, nh, T, hs)
        k = self.k(x).view(shape).transpose(1, 2)  # (B, nh, T, hs)
        v = self.v(x).view(shape).transpose(1, 2)  # (B, nh, T, hs)
        if rotary is not None:
            q, k = rotary(q), rotary(k)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, nh, T, hs)
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # (B, T, d)
        out: torch.Tensor = self.proj(y)  # nn.Module calls are typed Any
        return out


class GeluMLP(nn.Module):
    """GPT-2 MLP: proj(gelu(fc(x)))."""

    def __init__(self, cfg: CompleteArchitecture) -> None:
        super().__init__()
        self.fc = nn.Linear(cfg.d_model, cfg.mlp_hidden, bias=cfg.bias)
        self.proj = nn.Linear(cfg.mlp_hidden, cfg.d_model, bias=cfg.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.proj(F.gelu(self.fc(x)))  # (B, T, h) -> (B, T, d)
        return out


class SwiGLU(nn.Module):
    """SwiGLU MLP (Shazeer 2020): proj(silu(gate(x)) * up(x))."""

    def __init__(self, cfg: CompleteArchitecture) -> None:
        super().__init__()
        self.gate = nn.Linear(cfg.d_model, cfg.mlp_hidden, bias=cfg.bias)
        self.up = nn.Linear(cfg.d_model, cfg.mlp_hidden, bias=cfg.bias)
        self.proj = nn.Linear(cfg.mlp_hidden, cfg.d_model, bias=cfg.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.proj(F.silu(self.gate(x)) * self.up(x))  # (B, T, h) -> (B, T, d)
        return out


MLPS: dict[str, type[GeluMLP | SwiGLU]] = {"gelu": GeluMLP, "swiglu": SwiGLU}


class Block(nn.Module):
    """Pre-norm transformer block: x + attn(norm(x)), then x + mlp(norm(x))."""

    def __init__(self, cfg: CompleteArchitecture) -> None:
        super().__init__()
        self.attn_norm = NORMS[cfg.norm](cfg)
        self.attn = CausalSelfAttention(cfg)
        self.mlp_norm = NORMS[cfg.norm](cfg)
        self.mlp = MLPS[cfg.activation](cfg)

    def forward(self, x: torch.Tensor, rotary: Rotary | None) -> torch.Tensor:
        x = x + self.attn(self.attn_norm(x), rotary)  # (B, T, d)
        out: torch.Tensor = x + self.mlp(self.mlp_norm(x))  # (B, T, d)
        return out


# --- the model ---------------------------------------------------------------------------------


class GPT(nn.Module):
    """Decoder-only transformer language model."""

    loss_chunk_rows: int | None = 8192
    """Tokens per chunk of the training loss (:func:`linear_cross_entropy`); None: the logits of
    the whole micro-batch at once. 8192 x 50,304 float32 logits are 1.6 GB (a 16 x 2048
    micro-batch's are 6.6 GB)."""

    def __init__(self, cfg: Architecture, seq_len: int) -> None:
        super().__init__()
        self.cfg, self.seq_len = cfg, seq_len
        c = cfg.complete()  # a preset's architecture: every field set
        self.embedding = nn.Embedding(c.vocab_size, c.d_model)
        learned = c.positions == "learned"
        self.pos_embedding = nn.Embedding(seq_len, c.d_model) if learned else None
        self.rotary = Rotary(c, seq_len) if c.positions == "rope" else None
        self.blocks = nn.ModuleList(Block(c) for _ in range(c.n_layer))
        self.norm = NORMS[c.norm](c)
        self.head = None if c.tie_weights else nn.Linear(c.d_model, c.vocab_size, bias=False)
        self._init_weights()

    def _init_weights(self) -> None:
        std = INIT_STD
        for module in self.modules():
            if isinstance(module, nn.Linear | nn.Embedding):
                nn.init.normal_(module.weight, mean=0.0, std=std)
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.zeros_(module.bias)
        if self.cfg.scaled_init:
            scaled = std / math.sqrt(2 * self.cfg.complete().n_layer)
            for block in cast("list[Block]", self.blocks):
                for proj in (block.attn.proj, block.mlp.proj):
                    nn.init.normal_(proj.weight, mean=0.0, std=scaled)

    def output_weight(self) -> torch.Tensor:
        """The (V, d) matrix mapping the final hidden state to logits (the embedding if tied)."""
        weight: torch.Tensor = output_weight(self)  # torch-free helper, typed Any
        return weight

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None) -> torch.Tensor:
        """Logits (B, T, V) for token ids ``idx`` (B, T); with ``targets`` (B, T), the mean
        cross-entropy (a float32 scalar) instead."""
        T = idx.shape[1]
        assert self.seq_len >= T, f"sequence of {T} tokens > seq_len {self.seq_len}"
        x = self.embedding(idx)  # (B, T, d)
        if self.pos_embedding is not None:
            x = x + self.pos_embedding(torch.arange(T, device=idx.device))  # (B, T, d)
        for block in self.blocks:
            x = block(x, self.rotary)  # (B, T, d)
        x = self.norm(x)  # (B, T, d)
        if targets is None:
            return F.linear(x, self.output_weight())  # (B, T, V); the head has no bias
        return linear_cross_entropy(x, self.output_weight(), targets, self.loss_chunk_rows)


def linear_cross_entropy(
    x: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor, chunk_rows: int | None
) -> torch.Tensor:
    """The mean float32 cross-entropy of the logits ``x @ weight.T`` (x (B, T, d), weight (V, d))
    for ``targets`` (B, T). With more than ``chunk_rows`` tokens, chunk by chunk: each chunk's
    logits are computed (in autocast's dtype), upcast, and, when gradients are wanted,
    differentiated at once (:class:`_ChunkedLinearCrossEntropy`), so that no more than
    ``chunk_rows`` x V logits exist at a time; else in one piece, as :func:`cross_entropy`."""
    n = targets.numel()
    if chunk_rows is None or n <= chunk_rows:
        return cross_entropy(F.linear(x, weight), targets)
    kind = x.device.type
    dtype = torch.get_autocast_dtype(kind) if torch.is_autocast_enabled(kind) else x.dtype
    flat_x = x.reshape(n, x.size(-1)).to(dtype)  # (N, d), as autocast's linear casts it
    flat_t = targets.reshape(n)  # (N,)
    w = weight.to(dtype)  # (V, d)
    if not torch.is_grad_enabled():
        total = torch.zeros((), dtype=torch.float32, device=x.device)
        with torch.autocast(kind, enabled=False):
            for i in range(0, n, chunk_rows):
                total += _chunk_loss(flat_x[i : i + chunk_rows], w, flat_t[i : i + chunk_rows])[2]
        return total / n
    apply = cast(
        "Callable[..., torch.Tensor]", _ChunkedLinearCrossEntropy.apply
    )  # untyped in torch
    loss = apply(flat_x, w, flat_t, chunk_rows)
    return loss


def _chunk_loss(
    x: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One chunk's float32 logits (c, V), their log-sum-exp (c,) and summed cross-entropy."""
    logits = (x @ weight.T).float()  # (c, V)
    lse = torch.logsumexp(logits, dim=-1)  # (c,)
    return logits, lse, (lse - logits.gather(1, targets[:, None]).squeeze(1)).sum()


class _ChunkedLinearCrossEntropy(torch.autograd.Function):
    """``mean(cross_entropy(float(x @ w.T), t))`` whose forward also computes the gradients, chunk
    by chunk, so that only one chunk's logits ever exist; backward scales them."""

    @staticmethod
    def forward(
        ctx: torch.autograd.function.FunctionCtx,
        x: torch.Tensor,  # (N, d), the matmul dtype
        weight: torch.Tensor,  # (V, d), the matmul dtype
        targets: torch.Tensor,  # (N,)
        chunk_rows: int,
    ) -> torch.Tensor:
        n = x.shape[0]
        total = torch.zeros((), dtype=torch.float32, device=x.device)
        grad_x = torch.empty_like(x)  # (N, d)
        grad_w = torch.zeros(weight.shape, dtype=torch.float32, device=x.device)  # (V, d)
        with torch.autocast(x.device.type, enabled=False):
            for i in range(0, n, chunk_rows):
                xc, tc = x[i : i + chunk_rows], targets[i : i + chunk_rows]  # (c, d), (c,)
                logits, lse, loss = _chunk_loss(xc, weight, tc)  # (c, V), (c,), ()
                total += loss
                grad = torch.exp_(logits.sub_(lse[:, None]))  # softmax, in place: (c, V)
                grad.scatter_add_(1, tc[:, None], torch.full_like(lse[:, None], -1.0))
                grad = grad.div_(n).to(x.dtype)  # d mean / d logits
                grad_x[i : i + chunk_rows] = grad @ weight  # (c, d)
                grad_w += (grad.T @ xc).float()  # (V, d)
        ctx.save_for_backward(grad_x, grad_w.to(weight.dtype))
        return total / n

    @staticmethod
    def backward(
        ctx: torch.autograd.function.FunctionCtx, grad_out: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, None, None]:
        grad_x, grad_w = ctx.saved_tensors  # type: ignore[attr-defined]  # set in forward
        return grad_x * grad_out, grad_w * grad_out, None, None


def cross_entropy(
    logits: torch.Tensor, targets: torch.Tensor, reduction: str = "mean"
) -> torch.Tensor:
    """Cross-entropy of ``logits`` (B, T, V) for ``targets`` (B, T), computed in float32 (safe
    under bf16 autocast): the mean, or each token's (B * T,) with ``reduction="none"``."""
    flat = logits.float().view(-1, logits.size(-1))  # (B * T, V)
    return F.cross_entropy(flat, targets.reshape(-1), reduction=reduction)


# --- counting ----------------------------------------------------------------------------------


def trainable_params(model: nn.Module) -> int:
    """Trainable parameters of a built model; tied weights once (of a config, without building:
    :func:`harness.model.build.count_params`)."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
