"""The run configuration: one frozen, fully resolved record per training run, in sections.

A grid YAML expands (``harness.grid``) into a manifest of :class:`RunConfig` objects. Every field
is resolved before a run starts (no defaults are looked up at run time), so the manifest row *is*
the experiment, and ``run_id`` is a content hash of it. Grids, rows and the ``manifest`` table see
the fields flat (``lr``, ``n_layer``, ``batch_size``: names are unique across sections); code sees
them by section (``run.optim.lr``, ``run.arch.n_layer``). The architecture section *is* the
model's config: ``harness.model.build.build_model(run.arch, seq_len)`` builds it.

Each field is declared once, here, with :func:`~harness.core.fields.spec` (unit, choices, sweep
scale, how analysis treats it); :mod:`harness.core.catalogue` derives every table from these
declarations. A field that does not apply to a run (``momentum`` for AdamW) is None (SQL NULL).
An optimizer's own hyperparameters (those it declares beyond the fields here) travel in
``run.optim.hyperparameters`` and become columns of their own names.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, cast

from harness.core.errors import UserError
from harness.core.fields import (
    Role,
    Scale,
    cache,
    check_choices,
    content_hash,
    extras,
    hashed_values,
    spec,
)
from harness.core.registry import is_reference, location_free


def _positive(**values: float) -> None:
    for name, value in values.items():
        if value <= 0:
            raise UserError(f"{name}: must be positive, got {value}")


NORMS = ("rmsnorm", "layernorm")
ACTIVATIONS = ("swiglu", "gelu")
POSITIONS = ("rope", "learned")
WEIGHT_DECAY_MODES = ("decoupled", "l2")
"""Values of ``OptimConfig.weight_decay_mode``."""
DECAY_PARAMS = ("matrices", "all_weights", "no_embedding")
"""Values of ``OptimConfig.decay_params`` (which parameters weight decay applies to)."""
DECAY_SHAPES = ("linear", "cosine", "1-sqrt")
"""Values of ``OptimConfig.decay_shape`` (the final decay of the ``wsd`` schedule)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Architecture:
    """The model a run trains (``harness.model.build``). For the harness's GPT, ``model`` names a
    preset, which fills every field but ``vocab_size`` (the dataset's); for a user's model,
    ``model`` references its builder (``my_module:build``) and the fields it does not take are
    None."""

    ROLE: ClassVar[Role] = Role.ARCHITECTURE

    model: str = spec()
    """Model preset (``harness.model.architecture.PRESETS``) whose values fill the fields below,
    or a user's builder (``module:function``, ``path/to/file.py:function``)."""
    n_layer: int | None = spec()
    """Number of transformer blocks."""
    n_head: int | None = spec()
    """Attention heads per block; ``d_model`` must be divisible by it."""
    d_model: int | None = spec()
    """Residual stream width."""
    vocab_size: int = spec()
    """Rows of the embedding matrix (the tokenizer's vocabulary, possibly padded)."""
    norm: str | None = spec(choices=NORMS)
    """``rmsnorm`` or ``layernorm`` (pre-norm, plus a final norm before the head)."""
    activation: str | None = spec(choices=ACTIVATIONS)
    """``swiglu`` or ``gelu`` MLP."""
    positions: str | None = spec(choices=POSITIONS)
    """``rope`` (rotary, on ``rotary_frac`` of each head's dims) or ``learned`` absolute."""
    rotary_frac: float | None = spec()
    """Fraction of each head's dims RoPE rotates, rounded to an even count (unused if learned)."""
    tie_weights: bool | None = spec()
    """Output head shares the input embedding matrix (logits = x @ E^T)."""
    mlp_ratio: float | None = spec()
    """MLP hidden width / d_model, rounded to a multiple of 64 (see ``mlp_hidden``)."""
    scaled_init: bool | None = spec()
    """Residual output projections init std = 0.02 / sqrt(2 * n_layer) (GPT-2)."""
    bias: bool | None = spec()
    """Biases in Linear layers (not the head) and LayerNorms (GPT-2 style) or none (plainLM)."""
    workload: str | None = spec(None, absent=None, sparse=True)
    """What the run trains when it is not the GPT on tokens (:mod:`harness.workloads`): a
    built-in workload's name (``quadratic``, ``imbalance``), ``module:Class`` or
    ``path/to/file.py:Class``; its own parameters are grid keys and columns of their names. Such
    a run's ``model`` is the workload's name, its ``dataset`` too, ``vocab_size`` is 1, and the
    architecture fields are None. None: the GPT on tokens (every run before workloads existed).
    """

    def __post_init__(self) -> None:
        check_choices(self)
        unset = [
            f.name
            for f in dataclasses.fields(self)
            if getattr(self, f.name) is None and f.name != "workload"
        ]
        if unset and not is_reference(self.model) and self.workload is None:
            raise UserError(f"model {self.model}: no value for {', '.join(unset)}")
        sizes = {"n_layer": self.n_layer, "n_head": self.n_head, "d_model": self.d_model}
        _positive(vocab_size=self.vocab_size, **{k: v for k, v in sizes.items() if v is not None})
        if self.d_model and self.n_head and self.d_model % self.n_head:
            raise UserError(f"d_model {self.d_model} is not divisible by n_head {self.n_head}")
        if self.rotary_frac is not None and not 0.0 <= self.rotary_frac <= 1.0:
            raise UserError(f"rotary_frac {self.rotary_frac} is not in [0, 1]")

    @property
    def head_dim(self) -> int:
        """Dimensions per attention head."""
        c = self.complete()
        return c.d_model // c.n_head

    @property
    def rotary_dims(self) -> int:
        """Dimensions of each head that RoPE rotates (even; 0 for learned positions)."""
        if self.positions != "rope":
            return 0
        return 2 * math.floor(self.complete().rotary_frac * self.head_dim / 2 + 0.5)

    @property
    def mlp_hidden(self) -> int:
        """MLP hidden width: ``mlp_ratio * d_model`` to the nearest multiple of 64, >= 64."""
        c = self.complete()
        return max(64, 64 * math.floor(c.mlp_ratio * c.d_model / 64 + 0.5))

    def complete(self) -> CompleteArchitecture:
        """This architecture, typed with every field set: a preset's (the harness's GPT).

        Raises:
            UserError: a field is None (a user's builder does not take it).
        """
        unset = [
            f.name
            for f in dataclasses.fields(self)
            if getattr(self, f.name) is None and f.name != "workload"
        ]
        if unset:
            raise UserError(f"model {self.model}: no value for {', '.join(unset)}")
        return cast(CompleteArchitecture, self)


class CompleteArchitecture(Protocol):
    """An :class:`Architecture` with every field set (``Architecture.complete()``): what the
    harness's GPT and its parameter counts read. A type only; the object is the Architecture."""

    @property
    def model(self) -> str: ...
    @property
    def n_layer(self) -> int: ...
    @property
    def n_head(self) -> int: ...
    @property
    def d_model(self) -> int: ...
    @property
    def vocab_size(self) -> int: ...
    @property
    def norm(self) -> str: ...
    @property
    def activation(self) -> str: ...
    @property
    def positions(self) -> str: ...
    @property
    def rotary_frac(self) -> float: ...
    @property
    def tie_weights(self) -> bool: ...
    @property
    def mlp_ratio(self) -> float: ...
    @property
    def scaled_init(self) -> bool: ...
    @property
    def bias(self) -> bool: ...
    @property
    def head_dim(self) -> int: ...
    @property
    def rotary_dims(self) -> int: ...
    @property
    def mlp_hidden(self) -> int: ...


@dataclass(frozen=True, kw_only=True, slots=True)
class DataConfig:
    """What a run trains and is evaluated on, and how much of it."""

    ROLE: ClassVar[Role] = Role.DATA

    dataset: str = spec("classics-bpe8k")
    """A registered dataset name (``harness.data.catalogue.DATASETS``) or a directory holding a
    user's nanoGPT-style ``train.bin``/``val.bin`` and ``meta.json``."""
    seq_len: int = spec(unit="tokens")
    """Tokens per training sequence (context length)."""
    batch_size: int = spec(unit="sequences")
    """Global batch size in sequences per optimizer step."""
    micro_batch_size: int = spec(unit="sequences", compared=False)
    """Sequences per forward/backward pass; ``batch_size / micro_batch_size`` accumulation steps
    (default: ``batch_size``)."""
    tokens: int = spec(unit="tokens")
    """Training token budget."""
    steps: int = spec(unit="steps", compared=False)
    """Optimizer steps, derived: ``tokens // (batch_size * seq_len)`` (or given instead of
    ``tokens``, which is then derived)."""
    eval_tokens: int = spec(2**16, unit="tokens")
    """Held-out tokens evaluated at the end (a fixed prefix of ``val.bin``, same for all runs)."""

    def __post_init__(self) -> None:
        _positive(
            seq_len=self.seq_len,
            batch_size=self.batch_size,
            micro_batch_size=self.micro_batch_size,
        )
        if self.batch_size % self.micro_batch_size:
            raise UserError(
                f"batch_size {self.batch_size} is not a multiple of micro_batch_size "
                f"{self.micro_batch_size}"
            )
        if self.steps < 1:
            raise UserError(
                f"tokens {self.tokens} is less than one batch ({self.batch_size} x {self.seq_len})"
            )

    @property
    def tokens_per_step(self) -> int:
        """Training tokens per optimizer step."""
        return self.batch_size * self.seq_len


@dataclass(frozen=True, slots=True)
class Hyperparameters:
    """An optimizer's own hyperparameters: those it declares beyond the fields of
    :class:`OptimConfig` (SOAP's preconditioning frequency, a new optimizer's ``gamma``).

    Each is a column of its own name. A hyperparameter left at None is absent (not stored).
    """

    items: tuple[tuple[str, bool | int | float | str], ...] = ()
    """(name, value) pairs sorted by name; values are typed by the optimizer's declaration."""

    @classmethod
    def of(cls, values: dict[str, Any]) -> Hyperparameters:
        """From a name -> value dict (None values dropped)."""
        return cls(tuple(sorted((k, v) for k, v in values.items() if v is not None)))

    def as_dict(self) -> dict[str, Any]:
        """name -> value."""
        return dict(self.items)


@dataclass(frozen=True, kw_only=True, slots=True)
class OptimConfig:
    """The optimizer, its hyperparameters, and the learning-rate schedule."""

    ROLE: ClassVar[Role] = Role.OPTIMIZER

    optimizer: str = spec()
    """Optimizer name (``harness.optim`` registry)."""
    lr: float = spec(tuned=True, scale=Scale.LOG)
    """Peak learning rate."""
    beta1: float | None = spec(None, per_optimizer=True, tuned=True, scale=Scale.DECAY)
    """First-moment decay (Adam family, Lion, Signum's beta)."""
    beta2: float | None = spec(None, per_optimizer=True, tuned=True, scale=Scale.DECAY)
    """Second-moment decay (Adam family, Lion)."""
    eps: float | None = spec(None, per_optimizer=True, tuned=True, scale=Scale.LOG)
    """Denominator epsilon (Adam family)."""
    momentum: float | None = spec(None, per_optimizer=True, tuned=True, scale=Scale.DECAY)
    """Heavy-ball momentum (SGD family, Muon)."""
    nesterov: bool | None = spec(None, per_optimizer=True, tuned=True)
    """Nesterov momentum (SGD family, Muon)."""
    weight_decay: float = spec(0.0, tuned=True, scale=Scale.LOG)
    """Weight decay coefficient lambda: decoupled (``w <- w - lr * lambda * w``) unless
    ``weight_decay_mode`` is ``l2``; applied to the parameters ``decay_params`` names."""
    weight_decay_mode: str | None = spec(
        None, choices=WEIGHT_DECAY_MODES, per_optimizer=True, absent=(None, "decoupled")
    )
    """How the SGD family (``sgd``, ``sgd_cclip``) applies ``weight_decay``: ``decoupled``
    (default; ``w <- w - lr * lambda * w``, the talk's Table 1 text) or ``l2`` (``g <- g +
    lambda * w`` before momentum, as ``torch.optim.SGD`` and the talk's base code plainLM do;
    under momentum m the steady-state shrink is 1/(1 - m) = 10x that of decoupled at m = 0.9).
    None for the other optimizers, whose convention is their definition: ``adamw``, ``rmsprop``,
    ``coupled_adam``, the sign methods and ``muon`` decouple, ``adam`` is L2."""
    decay_params: str = spec("matrices", choices=DECAY_PARAMS, absent="matrices")
    """Which parameters ``weight_decay`` applies to (``harness.optim.routing``): ``matrices``
    (hidden >= 2-D weights only; not embedding, head, learned positions, norms, biases),
    ``all_weights`` (plainLM, the talk's base code: everything but biases and norm gains, so the
    embedding and head too) or ``no_embedding`` (nanoGPT, the Coupled Adam paper's code: every
    >= 2-D weight but the token embedding and the head tied to it, so learned positions and an
    untied head too)."""
    clip_value: float | None = spec(None, per_optimizer=True, tuned=True, scale=Scale.LOG)
    """Coordinate-wise clip threshold c of ``sgd_cclip``."""
    coupled_scale_exp: float | None = spec(None, per_optimizer=True, tuned=True)
    """``coupled_adam``: the coupled second moment is multiplied by 2^-n (paper Eq. 29)."""
    embedding_optimizer: str | None = spec(None)
    """Optional optimizer for the embedding group (e.g. ``sgd``, paper Sec. 6.2); None: same as
    ``optimizer``. The fields it reads (``momentum`` for ``sgd``) are resolved like the main
    optimizer's, and a field both read has one value."""
    embedding_lr_factor: float | None = spec(None, tuned=True, scale=Scale.LOG)
    """Embedding-group lr = ``lr * embedding_lr_factor`` (the paper's f)."""
    schedule: str = spec("cosine", tuned=True)
    """Learning-rate schedule after warmup (``harness.optim.schedule.SCHEDULES``)."""
    warmup_steps: int = spec(0, unit="steps", tuned=True)
    """Linear warmup steps from 0 to ``lr``."""
    lr_min: float = spec(0.0, tuned=True, scale=Scale.LOG)
    """Floor of the decay (absolute learning rate)."""
    decay_frac: float | None = spec(None, tuned=True, absent=None, sparse=True)
    """``wsd`` schedule: the fraction of all steps, at the end, over which the lr decays from
    ``lr`` to ``lr_min`` (after warmup and a constant phase); in (0, 1]. None for the other
    schedules (``harness.optim.schedule.SCHEDULE_FIELDS`` fills wsd's default)."""
    decay_shape: str | None = spec(None, choices=DECAY_SHAPES, tuned=True, absent=None, sparse=True)
    """``wsd`` schedule: the shape of the final decay, ``linear``, ``cosine`` or ``1-sqrt``
    (Haegele et al. 2024); None for the other schedules."""
    grad_clip: float | None = spec(1.0)
    """Global gradient-norm clip; None disables it."""
    hyperparameters: Hyperparameters = extras(Hyperparameters())  # noqa: RUF009 (frozen value)
    """The optimizer's own hyperparameters (declared by it, not by this class)."""

    def __post_init__(self) -> None:
        _positive(lr=self.lr)
        check_choices(self)
        if self.decay_frac is not None and not 0.0 < self.decay_frac <= 1.0:
            raise UserError(f"decay_frac {self.decay_frac} is not in (0, 1]")


@dataclass(frozen=True, kw_only=True, slots=True)
class ExecutionConfig:
    """How a run executes: seed, logging, divergence rules, precision and devices."""

    ROLE: ClassVar[Role] = Role.EXECUTION

    seed: int = spec(0, compared=False)
    """Seeds model init and data order."""
    log_every: int = spec(10, unit="steps", compared=False)
    """Steps between loss-curve points (and the only host syncs on GPU)."""
    eval_every: int = spec(0, unit="steps", compared=False)
    """Steps between intermediate validation evaluations; 0: only at the end."""
    diverge_factor: float | None = spec(1.5)
    """A run diverges (stops, scored worst) when its loss is not finite or exceeds
    ``diverge_factor * ln(vocab_size)``; None: only a non-finite loss or gradient stops it."""
    diverge_rise: float | None = spec(1.0, unit="nats")
    """A run diverges when its logged training loss (a mean over ``log_every`` steps) exceeds the
    lowest one logged so far by more than this many nats (a loss that explodes slowly); None:
    a finite run that spikes trains to the end and keeps its value (the talk's beta table
    reports such runs: ppl 262, 5797), its spike recorded in the metric ``max_loss_rise``."""
    precision: str = spec("auto", choices=("auto", "bf16", "fp32"))
    """``auto`` (bf16 autocast on GPU, fp32 on CPU), ``bf16`` or ``fp32``."""
    compile: str = spec("auto", choices=("auto", "on", "off"), compared=False)
    """``auto`` (torch.compile on GPU only), ``on`` or ``off``."""
    gpus_per_run: int = spec(1, compared=False)
    """Processes (GPUs) one run uses through DDP."""
    track: str | None = spec(None, compared=False, absent=None, sparse=True)
    """Metrics recorded at every evaluation point (``eval_every``) and at the end, beside the
    validation loss, as curve columns: comma-separated names of
    ``harness.metrics.catalogue.TRACKABLE`` (a grid gives a list, of metrics or of the groups
    ``embedding``, ``head``, ``buckets``); None: none."""

    keep_weights: bool | None = spec(None, compared=False, absent=(None, False), sparse=True)
    """Keep the run's final weights (at the evaluated point) once it completes, under
    ``harness.core.paths.weights_path``, for downstream evaluation (``harness eval``); None or
    False: only a checkpoint of an unfinished run is kept."""

    def __post_init__(self) -> None:
        check_choices(self)
        _positive(gpus_per_run=self.gpus_per_run)

    @property
    def tracked(self) -> tuple[str, ...]:
        """The names in ``track`` (empty when None)."""
        return tuple(self.track.split(",")) if self.track else ()


SCALES = ("full", "local")
"""Values of ``RunConfig.scale``."""


@dataclass(frozen=True, kw_only=True, slots=True)
class RunConfig:
    """One training run, fully resolved. Units are in each field's declaration."""

    grid: str = spec(role=Role.IDENTITY)
    """Name of the grid this run belongs to; results live under ``results/<grid>/``."""
    scale: str = spec("full", choices=SCALES, role=Role.IDENTITY)
    """``full`` for the grid as written, ``local`` when its ``local:`` overrides were applied."""
    label: str | None = spec(None, role=Role.LABEL)
    """Free name of the arm for tables and figures (``SGD+Gclip``); not part of ``run_id``."""
    extend_round: int | None = spec(None, role=Role.IDENTITY, absent=None, sparse=True)
    """The round of ``harness submit --extend`` that added the run (1, 2, ...): a value beyond an
    open edge of a tuned axis; None for the grid's own runs. Not part of ``run_id``."""
    confirm: bool | None = spec(None, role=Role.IDENTITY, absent=None, sparse=True)
    """True for a confirmation run: a cell's selected configuration trained on a fresh seed
    (``seeds: {tune: N, confirm: M}``, ``harness submit --confirm``), which analysis reports
    instead of the tuning seeds; None for the others. Not part of ``run_id``."""
    grid_dir: str | None = spec(None, role=Role.IDENTITY, absent=None, sparse=True)
    """Absolute folder of the grid file, for a run that names an optimizer or model by file (its
    references hold absolute paths, so the run loads them wherever it starts); such a reference
    enters ``run_id`` by its path relative to this folder (``opts/my_opt.py:Opt``), so a project
    moved with its results keeps its ids. None for a run naming no file (and for results written
    before it was recorded, whose ids hashed the absolute paths). Not part of ``run_id``."""
    arch: Architecture
    """The model."""
    data: DataConfig
    """Data and budget."""
    optim: OptimConfig
    """Optimizer and schedule."""
    execution: ExecutionConfig
    """Seed, logging, precision, devices."""
    _run_id: str | None = cache()

    def __post_init__(self) -> None:
        check_choices(self)
        data, optim = self.data, self.optim
        if not 0 <= optim.warmup_steps <= data.steps:
            raise UserError(f"warmup_steps {optim.warmup_steps} not in [0, steps={data.steps}]")
        gpus = self.execution.gpus_per_run
        if data.batch_size % (data.micro_batch_size * gpus):
            raise UserError(
                f"batch_size {data.batch_size} must be a multiple of micro_batch_size x "
                f"gpus_per_run ({data.micro_batch_size} x {gpus})"
            )

    @property
    def run_id(self) -> str:
        """Content hash of every field that changes what the run computes (16 hex chars; see
        :func:`harness.core.fields.hashed_values`); computed once per run."""
        run_id = self._run_id
        if run_id is None:  # frozen: the cache is filled behind the dataclass's back
            base = self.grid_dir
            values = {k: location_free(v, base) for k, v in hashed_values(self).items()}
            run_id = content_hash(values)
            object.__setattr__(self, "_run_id", run_id)
        return run_id
