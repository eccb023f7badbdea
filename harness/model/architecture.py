"""Model presets and parameter and FLOP counts by formula, without torch.

Planning a grid (a dry run of 10,000 runs, compute estimates) needs these but not the model, so
this module imports no torch; :mod:`harness.model.gpt` builds the ``nn.Module`` from the run's
architecture section (:class:`harness.core.config.Architecture`). The rounding rules (MLP width,
rotary dimensions) are the section's properties.
"""

from __future__ import annotations

import functools
from typing import Any

from harness.core.config import Architecture
from harness.core.registry import Registry

_TALK = dict(  # plainLM-style (Orvieto talk): RoPE 25%, RMSNorm, SwiGLU, untied, no biases
    norm="rmsnorm",
    activation="swiglu",
    positions="rope",
    rotary_frac=0.25,
    tie_weights=False,
    mlp_ratio=8 / 3,
    scaled_init=True,
    bias=False,
)
_GPT2 = dict(  # nanoGPT / GPT-2 (Coupled Adam paper, small scale): tied, learned positions
    norm="layernorm",
    activation="gelu",
    positions="learned",
    rotary_frac=0.0,
    tie_weights=True,
    mlp_ratio=4.0,
    scaled_init=True,
    bias=True,
)


def _sizes(n_layer: int, n_head: int, d_model: int) -> dict[str, int]:
    return dict(n_layer=n_layer, n_head=n_head, d_model=d_model)


PRESETS: Registry[dict[str, Any]] = Registry(
    "model preset",
    {
        "tiny": {**_sizes(2, 4, 128), **_TALK},  # CPU seconds; the laptop default
        "tiny-gpt2": {
            **_sizes(2, 4, 128),
            **_GPT2,
        },  # laptop-scale tied model for embedding studies
        "160m": {**_sizes(12, 12, 768), **_TALK},  # talk: 1 A100, ~5.8 h for 3.2B tokens
        "410m": {**_sizes(24, 16, 1024), **_TALK},  # talk: 8 A100s, DDP
        "gpt2-124m": {**_sizes(12, 12, 768), **_GPT2},  # paper Tab. 6: lr 6e-4
        "gpt2-350m": {**_sizes(24, 16, 1024), **_GPT2},  # paper Tab. 6: lr 3e-4
        "gpt2-760m": {**_sizes(24, 16, 1536), **_GPT2},  # paper Tab. 6: lr 2.5e-4
    },
)
"""Model presets: name -> architecture fields (``vocab_size`` comes from the dataset)."""


def preset_fields(name: str) -> dict[str, Any]:
    """The architecture fields of preset ``name`` (a copy).

    Raises:
        UserError: ``name`` is not in ``PRESETS``.
    """
    return dict(PRESETS[name])


#: Linear layers per block's MLP (weights) and the bias sizes they carry, per activation.
_MLP_MATS = {"gelu": 2, "swiglu": 3}


@functools.cache
def _counts(cfg: Architecture, seq_len: int) -> tuple[int, int]:
    """(all parameters, Linear weights + the head) of ``GPT(cfg, seq_len)``, by formula (no
    tensors; ``tests/model/test_model.py`` checks it against instantiated models of every
    preset)."""
    c = cfg.complete()  # a preset's architecture: every field set
    d, h, V, b = c.d_model, c.mlp_hidden, c.vocab_size, int(c.bias)
    norm = d + (d * b if c.norm == "layernorm" else 0)
    mats = _MLP_MATS[c.activation]
    attn = 4 * d * d + 4 * d * b
    mlp = mats * d * h + b * ((mats - 1) * h + d)
    block = 2 * norm + attn + mlp
    pos = seq_len * d if c.positions == "learned" else 0
    head = 0 if c.tie_weights else V * d
    total = V * d + pos + c.n_layer * block + norm + head
    linear = c.n_layer * (4 * d * d + mats * d * h) + V * d
    return total, linear


def param_count(cfg: Architecture, seq_len: int) -> int:
    """Parameters of ``GPT(cfg, seq_len)`` without building it (cached per architecture)."""
    return _counts(cfg, seq_len)[0]


def matmul_params(cfg: Architecture) -> int:
    """Weights of all matrix multiplies per token: every Linear and the output head (counted even
    when tied); no embeddings, positions, norms or biases."""
    return _counts(cfg, 1)[1]


def flops_per_token(cfg: Architecture, seq_len: int) -> float:
    """Training FLOPs per token (forward + backward), the MFU convention (PaLM App. B):
    ``6 * matmul_params + 12 * n_layer * d_model * seq_len`` (the last term is attention)."""
    c = cfg.complete()
    return float(6 * matmul_params(cfg) + 12 * c.n_layer * c.d_model * seq_len)
