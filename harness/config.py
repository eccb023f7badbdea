"""The run configuration: one frozen, flat, fully resolved record per training run.

A grid YAML expands (``harness.grid``) into a manifest of :class:`RunConfig` objects. Every field
is resolved before a run starts (no defaults are looked up at run time), so the manifest row *is*
the experiment, and ``run_id`` is a content hash of it. The record is flat on purpose: each field
becomes a column of the result row and of the ``manifest`` table in DuckDB.

A field that does not apply to a run (``momentum`` for AdamW, ``beta1`` for SGD) is ``None`` and
becomes SQL NULL.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import operator
from dataclasses import dataclass
from typing import Any

#: Fields that name or place a run but do not change what it computes; excluded from ``run_id``.
IDENTITY_FIELDS = ("grid", "scale", "label")


@dataclass(frozen=True, kw_only=True, slots=True)
class RunConfig:
    """One training run, fully resolved. Units are in each field's docstring."""

    # --- identity -------------------------------------------------------------------------
    grid: str
    """Name of the grid this run belongs to; results live under ``results/<grid>/``."""
    scale: str = "full"
    """``full`` for the grid as written, ``local`` when its ``local:`` overrides were applied."""
    label: str | None = None
    """Free name of the arm for tables and figures (``SGD+Gclip``); not part of ``run_id``."""

    # --- model ----------------------------------------------------------------------------
    model: str
    """Model preset (``harness.architecture.PRESETS``); the fields below are its resolved values."""
    n_layer: int
    """Number of transformer blocks."""
    n_head: int
    """Attention heads per block; ``d_model`` must be divisible by it."""
    d_model: int
    """Residual stream width."""
    vocab_size: int
    """Rows of the embedding matrix (the tokenizer's vocabulary, possibly padded)."""
    norm: str
    """``rmsnorm`` or ``layernorm`` (pre-norm)."""
    activation: str
    """``swiglu`` or ``gelu`` MLP."""
    positions: str
    """``rope`` (rotary, on ``rotary_frac`` of each head's dims) or ``learned`` positions."""
    rotary_frac: float
    """Fraction of each head's dimensions that RoPE rotates (ignored for learned positions)."""
    tie_weights: bool
    """Share the input embedding with the output head."""
    mlp_ratio: float
    """MLP hidden width / d_model (8/3 is the usual SwiGLU choice, 4 for GeLU)."""
    scaled_init: bool
    """Scale residual output projections' init std by 1/sqrt(2 * n_layer) (GPT-2)."""
    bias: bool
    """Biases in linear layers and norms (GPT-2 style) or none (plainLM style)."""

    # --- data and budget ------------------------------------------------------------------
    dataset: str
    """A registered dataset name (``harness.data.DATASETS``) or a directory holding a user's
    nanoGPT-style ``train.bin``/``val.bin`` and ``meta.json``."""
    seq_len: int
    """Tokens per training sequence (context length)."""
    batch_size: int
    """Global batch size in sequences per optimizer step."""
    micro_batch_size: int
    """Sequences per forward/backward pass; ``batch_size / micro_batch_size`` accumulation steps."""
    tokens: int
    """Training token budget."""
    steps: int
    """Optimizer steps, derived: ``tokens // (batch_size * seq_len)``."""
    eval_tokens: int
    """Held-out tokens evaluated at the end (a fixed prefix of ``val.bin``, same for all runs)."""

    # --- optimizer ------------------------------------------------------------------------
    optimizer: str
    """Optimizer name (``harness.optim.OPTIMIZERS``)."""
    lr: float
    """Peak learning rate."""
    beta1: float | None = None
    """First-moment decay (Adam family, Lion, Signum's beta)."""
    beta2: float | None = None
    """Second-moment decay (Adam family, Lion)."""
    eps: float | None = None
    """Denominator epsilon (Adam family)."""
    momentum: float | None = None
    """Heavy-ball momentum (SGD family, Muon)."""
    nesterov: bool | None = None
    """Nesterov momentum (SGD family, Muon)."""
    weight_decay: float = 0.0
    """Decoupled weight decay, applied to matrices only (never norms, biases or embeddings)."""
    clip_value: float | None = None
    """Coordinate-wise clip threshold c of ``sgd_cclip``."""
    coupled_scale_exp: float | None = None
    """``coupled_adam``: the coupled second moment is multiplied by 2^-n (paper Eq. 29)."""
    embedding_optimizer: str | None = None
    """Optional optimizer for the embedding group (e.g. ``sgd``, paper Sec. 6.2); None: same as
    ``optimizer``. The fields it reads (``momentum`` for ``sgd``) are resolved like the main
    optimizer's, and a field both read has one value."""
    embedding_lr_factor: float | None = None
    """Embedding-group lr = ``lr * embedding_lr_factor`` (the paper's f)."""

    # --- schedule -------------------------------------------------------------------------
    schedule: str = "cosine"
    """Learning-rate schedule after warmup (``harness.schedule.SCHEDULES``)."""
    warmup_steps: int = 0
    """Linear warmup steps from 0 to ``lr``."""
    lr_min: float = 0.0
    """Floor of the decay (absolute learning rate)."""
    grad_clip: float | None = 1.0
    """Global gradient-norm clip; None disables it."""

    # --- execution ------------------------------------------------------------------------
    seed: int = 0
    """Seeds model init and data order."""
    log_every: int = 10
    """Steps between loss-curve points (and the only host syncs on GPU)."""
    eval_every: int = 0
    """Steps between intermediate validation evaluations; 0: only at the end."""
    diverge_factor: float = 1.5
    """A run diverges when its loss is not finite or exceeds ``diverge_factor * ln(vocab_size)``."""
    diverge_rise: float = 1.0
    """A run diverges when its logged training loss (a mean over ``log_every`` steps) exceeds the
    lowest one logged so far by more than this many nats (a loss that explodes slowly)."""
    precision: str = "auto"
    """``auto`` (bf16 autocast on GPU, fp32 on CPU), ``bf16`` or ``fp32``."""
    compile: str = "auto"
    """``auto`` (torch.compile on GPU only), ``on`` or ``off``."""
    gpus_per_run: int = 1
    """Processes (GPUs) one run uses through DDP."""

    # --- derived identity -----------------------------------------------------------------
    @property
    def run_id(self) -> str:
        """Content hash of every field that changes what the run computes (16 hex chars)."""
        return config_hash(self)

    def to_dict(self) -> dict[str, Any]:
        """All fields as a plain dict (JSON- and Parquet-friendly)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RunConfig:
        """Inverse of :meth:`to_dict`; extra keys (``run_id``, result columns) are ignored."""
        names = field_names()
        return cls(**{k: _clean(v) for k, v in d.items() if k in names})

    @property
    def accum_steps(self) -> int:
        """Gradient-accumulation steps per optimizer step."""
        return self.batch_size // self.micro_batch_size


def _clean(v: Any) -> Any:
    """NaN read back from Parquet/pandas for a NULL becomes None."""
    if isinstance(v, float) and math.isnan(v):
        return None
    if hasattr(v, "item"):  # numpy scalar
        return v.item()
    return v


def field_names() -> tuple[str, ...]:
    """Names of all :class:`RunConfig` fields, in declaration order."""
    return tuple(f.name for f in dataclasses.fields(RunConfig))


def field_types() -> dict[str, str]:
    """Field name -> annotation string (``"float | None"``), used to validate YAML values."""
    return {f.name: str(f.type) for f in dataclasses.fields(RunConfig)}


#: The hashed fields in sorted order, and one getter for all of them (hashing is on the hot path
#: of expanding and submitting 10,000-run grids).
_HASHED = tuple(
    sorted(f.name for f in dataclasses.fields(RunConfig) if f.name not in IDENTITY_FIELDS)
)
_GET_HASHED = operator.attrgetter(*_HASHED)


def config_hash(run: RunConfig) -> str:
    """Stable 16-hex-digit hash of the run's science fields (canonical JSON, sorted keys)."""
    d = dict(zip(_HASHED, _GET_HASHED(run), strict=True))
    blob = json.dumps(d, separators=(",", ":"), default=repr)  # keys already sorted
    return hashlib.sha256(blob.encode()).hexdigest()[:16]
