"""The built-in optimizers. Each one's constructor is its declaration (read by
:mod:`harness.optim.signature`, as for any optimizer): its arguments are the grid keys, its
defaults the defaults. This table keeps only what a signature cannot say: run fields a
constructor reads under another name, parameter-group options, and the groups it takes.

Classes are named by import path (``module:Class``) and imported when a grid names them.
Defaults (each in its constructor) are torch's where torch has the optimizer, else the defining
paper's:

- ``adamw``, ``adam``, ``coupled_adam``: betas (0.9, 0.999), eps 1e-8 (torch);
  ``coupled_scale_exp`` 0 (the paper's unscaled coupled second moment, Eq. 29).
- ``rmsprop``: beta2 0.999 (Adam's second moment without momentum, as the talk's RMSprop), eps
  1e-8.
- ``sgd``, ``sgd_cclip``: momentum 0.9, not torch's 0 (the paper's Sec. 6.2 embedding SGD, the
  usual choice, and the value every grid naming ``sgd`` without a momentum has run with),
  nesterov off, weight decay decoupled (``weight_decay_mode: l2`` for torch's L2; see
  ``harness.optim.sgd``).
- ``sgd_cclip``: ``clip_value`` has no accepted default and must be set in the grid.
- ``signsgd``: nothing beyond lr; ``signum``: beta 0.9 (the run field ``beta1``).
- ``lion``: betas (0.9, 0.99) (the Lion paper).
- ``coupled_adam``: the embedding group (which holds the head when tied) and the untied output
  head are coupled. The paper's derivation (Sec. 2) is about the rows that receive the LM-head
  gradient - the output embeddings, whose gradients sum to zero over the vocabulary (Eq. 8) -
  so an untied head must be coupled for the mean-invariance to hold; the input embedding is
  coupled too because Coupled Adam is defined on "the embedding matrix" and its per-token
  second moments are just as unigram-dependent (Eq. 18).
- ``muon``: Muon on the ``matrix`` group only; embedding, head and vectors (norms, biases, learned
  positions) take AdamW steps (see ``harness.optim.muon`` for the lr convention). Momentum 0.95
  with Nesterov, ``ns_steps`` 5 and ``ns_dtype`` bfloat16 (Keller Jordan's Muon), AdamW's betas
  and eps for the rest; ``ns_steps`` and ``ns_dtype`` are grid keys like any own hyperparameter.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.core.registry import load_class


@dataclass(frozen=True, kw_only=True, slots=True)
class Builtin:
    """What a built-in optimizer's signature cannot say (the rest is its constructor's)."""

    cls: str
    """The ``torch.optim.Optimizer`` subclass, ``module:Class``."""
    reads: Mapping[str, str] = field(default_factory=dict)
    """Constructor keyword -> the run field it reads under that name (Signum's ``beta`` is
    ``beta1``)."""
    group_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """As :attr:`harness.optim.spec.OptimizerSpec.group_options`."""
    takes: tuple[str, ...] | None = None
    """As :attr:`harness.optim.spec.OptimizerSpec.takes`."""

    def load(self) -> type:
        """The ``torch.optim.Optimizer`` subclass (imports its module; that it subclasses
        ``Optimizer`` is checked where torch is, by :func:`harness.optim.build.build_optimizer`).

        Raises:
            UserError: ``cls`` cannot be imported or is not a class.
        """
        return load_class(self.cls, object)


_NOT_MUON = {"muon": False}

BUILTIN: dict[str, Builtin] = {
    "adamw": Builtin(cls="harness.optim.adam:AdamW"),
    "adam": Builtin(cls="harness.optim.adam:Adam"),
    "rmsprop": Builtin(cls="harness.optim.adam:RMSprop"),
    "sgd": Builtin(cls="harness.optim.sgd:SGD"),
    "sgd_cclip": Builtin(cls="harness.optim.sgd:SGDCClip"),
    "signsgd": Builtin(cls="harness.optim.sign:SignSGD"),
    "signum": Builtin(cls="harness.optim.sign:Signum", reads={"beta": "beta1"}),
    "lion": Builtin(cls="harness.optim.sign:Lion"),
    "coupled_adam": Builtin(
        cls="harness.optim.adam:CoupledAdam",
        group_options={"embedding": {"coupled": True}, "head": {"coupled": True}},
    ),
    "muon": Builtin(
        cls="harness.optim.muon:Muon",
        group_options={"embedding": _NOT_MUON, "head": _NOT_MUON, "vector": _NOT_MUON},
    ),
}
"""Name -> what the constructor of each built-in optimizer cannot say."""
