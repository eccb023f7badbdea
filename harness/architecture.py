"""GPT architecture as data, without torch: :class:`GPTConfig`, the model presets, and parameter
and FLOP counts by formula.

Planning a grid (a dry run of 10,000 runs, compute estimates) needs these but not the model, so
this module imports no torch; :mod:`harness.model` builds the ``nn.Module`` from a ``GPTConfig``.
The rounding rules (MLP width, rotary dimensions) are written down in :mod:`harness.model`.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

from harness.errors import UserError, unknown_choice

NORMS = ("rmsnorm", "layernorm")
"""Valid values of ``GPTConfig.norm`` (``harness.model.NORMS`` builds each)."""

ACTIVATIONS = ("swiglu", "gelu")
"""Valid values of ``GPTConfig.activation`` (``harness.model.MLPS`` builds each)."""

POSITIONS = ("rope", "learned")
"""Valid values of ``GPTConfig.positions``."""


@dataclass(frozen=True, kw_only=True, slots=True)
class GPTConfig:
    """Architecture of one GPT; hashable, so derived counts are cached per config."""

    n_layer: int
    """Number of transformer blocks."""
    n_head: int
    """Attention heads per block; ``d_model`` must be divisible by it."""
    d_model: int
    """Residual stream width."""
    vocab_size: int
    """Rows of the embedding matrix (the tokenizer's vocabulary, possibly padded)."""
    seq_len: int
    """Maximum sequence length (positions table / RoPE cache size)."""
    norm: str
    """``rmsnorm`` or ``layernorm`` (pre-norm, plus a final norm before the head)."""
    activation: str
    """``swiglu`` or ``gelu`` MLP."""
    positions: str
    """``rope`` (rotary on ``rotary_frac`` of each head's dims) or ``learned`` absolute."""
    rotary_frac: float
    """Fraction of each head's dims RoPE rotates, rounded to an even count (unused if learned)."""
    tie_weights: bool
    """Output head shares the input embedding matrix (logits = x @ E^T)."""
    mlp_ratio: float
    """MLP hidden width / d_model, rounded to a multiple of 64 (see ``mlp_hidden``)."""
    scaled_init: bool
    """Residual output projections init std = init_std / sqrt(2 * n_layer)."""
    init_std: float = 0.02
    """Standard deviation of the normal init of Linear and Embedding weights."""
    bias: bool = False
    """Biases in Linear layers (not the head) and LayerNorms."""

    def __post_init__(self) -> None:
        if self.norm not in NORMS:
            raise unknown_choice("norm", self.norm, NORMS)
        if self.activation not in ACTIVATIONS:
            raise unknown_choice("activation", self.activation, ACTIVATIONS)
        if self.positions not in POSITIONS:
            raise unknown_choice("positions", self.positions, POSITIONS)
        if min(self.n_layer, self.n_head, self.d_model, self.vocab_size, self.seq_len) <= 0:
            raise UserError(f"model sizes must be positive, got {self}")
        if self.d_model % self.n_head:
            raise UserError(f"d_model {self.d_model} is not divisible by n_head {self.n_head}")
        if not 0.0 <= self.rotary_frac <= 1.0:
            raise UserError(f"rotary_frac {self.rotary_frac} is not in [0, 1]")

    @property
    def head_dim(self) -> int:
        """Dimensions per attention head."""
        return self.d_model // self.n_head

    @property
    def rotary_dims(self) -> int:
        """Dimensions of each head that RoPE rotates (even; 0 for learned positions)."""
        if self.positions != "rope":
            return 0
        return 2 * math.floor(self.rotary_frac * self.head_dim / 2 + 0.5)

    @property
    def mlp_hidden(self) -> int:
        """MLP hidden width: ``mlp_ratio * d_model`` to the nearest multiple of 64, >= 64."""
        return max(64, 64 * math.floor(self.mlp_ratio * self.d_model / 64 + 0.5))


# --- presets -----------------------------------------------------------------------------------

#: The architecture fields a preset sets; each is a ``RunConfig`` field of the same name.
ARCH_FIELDS = (
    "n_layer",
    "n_head",
    "d_model",
    "norm",
    "activation",
    "positions",
    "rotary_frac",
    "tie_weights",
    "mlp_ratio",
    "scaled_init",
    "bias",
)

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


#: Model presets: name -> architecture fields (vocab_size and seq_len come from the run).
PRESETS: dict[str, dict[str, Any]] = {
    "tiny": {**_sizes(2, 4, 128), **_TALK},  # CPU seconds; the laptop default
    "tiny-gpt2": {**_sizes(2, 4, 128), **_GPT2},  # laptop-scale tied model for embedding studies
    "160m": {**_sizes(12, 12, 768), **_TALK},  # talk: 1 A100, ~5.8 h for 3.2B tokens
    "410m": {**_sizes(24, 16, 1024), **_TALK},  # talk: 8 A100s, DDP
    "gpt2-124m": {**_sizes(12, 12, 768), **_GPT2},  # paper Tab. 6: lr 6e-4
    "gpt2-350m": {**_sizes(24, 16, 1024), **_GPT2},  # paper Tab. 6: lr 3e-4
    "gpt2-760m": {**_sizes(24, 16, 1536), **_GPT2},  # paper Tab. 6: lr 2.5e-4
}


def preset_fields(name: str) -> dict[str, Any]:
    """The architecture fields of preset ``name`` (a copy).

    Raises:
        UserError: ``name`` is not in ``PRESETS``.
    """
    if name not in PRESETS:
        raise unknown_choice("model preset", name, PRESETS)
    return dict(PRESETS[name])


def model_config(run: Any) -> GPTConfig:
    """The :class:`GPTConfig` of a resolved ``harness.config.RunConfig``."""
    arch = {f: getattr(run, f) for f in ARCH_FIELDS}
    return GPTConfig(**arch, vocab_size=run.vocab_size, seq_len=run.seq_len)


#: Linear layers per block's MLP (weights) and the bias sizes they carry, per activation.
_MLP_MATS = {"gelu": 2, "swiglu": 3}


@functools.cache
def _counts(cfg: GPTConfig) -> tuple[int, int]:
    """(all parameters, Linear weights + the head) of ``GPT(cfg)``, by formula (no tensors;
    ``tests/test_model.py`` checks it against instantiated models of every preset)."""
    d, h, V, b = cfg.d_model, cfg.mlp_hidden, cfg.vocab_size, int(cfg.bias)
    norm = d + (d * b if cfg.norm == "layernorm" else 0)
    mats = _MLP_MATS[cfg.activation]
    attn = 4 * d * d + 4 * d * b
    mlp = mats * d * h + b * ((mats - 1) * h + d)
    block = 2 * norm + attn + mlp
    pos = cfg.seq_len * d if cfg.positions == "learned" else 0
    head = 0 if cfg.tie_weights else V * d
    total = V * d + pos + cfg.n_layer * block + norm + head
    linear = cfg.n_layer * (4 * d * d + mats * d * h) + V * d
    return total, linear


def param_count_from_config(cfg: GPTConfig) -> int:
    """Parameters of ``GPT(cfg)`` without building it (cached per config)."""
    return _counts(cfg)[0]


def matmul_params(cfg: GPTConfig) -> int:
    """Weights of all matrix multiplies per token: every Linear and the output head (counted even
    when tied); no embeddings, positions, norms or biases."""
    return _counts(cfg)[1]


def flops_per_token(cfg: GPTConfig) -> float:
    """Training FLOPs per token (forward + backward), the MFU convention (PaLM App. B):
    ``6 * matmul_params + 12 * n_layer * d_model * seq_len`` (the last term is attention)."""
    return float(6 * matmul_params(cfg) + 12 * cfg.n_layer * cfg.d_model * cfg.seq_len)
