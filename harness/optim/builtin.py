"""The built-in optimizers and the run fields each reads, with their defaults.

Classes are named by import path (``module:Class``), so resolving a grid imports no torch.
Defaults are torch's where torch has the optimizer, else the defining paper's. Choices:

- ``sgd``: momentum 0.9 by default (the paper's Sec. 6.2 embedding SGD, and the usual choice);
  weight decay is decoupled by default, L2 with ``weight_decay_mode: l2`` (see
  ``harness.optim.sgd``); the same for ``sgd_cclip``.
- ``sgd_cclip``: ``clip_value`` has no accepted default and must be set in the grid.
- ``coupled_adam``: the embedding group (which holds the head when tied) and the untied output
  head are coupled. The paper's derivation (Sec. 2) is about the rows that receive the LM-head
  gradient - the output embeddings, whose gradients sum to zero over the vocabulary (Eq. 8) -
  so an untied head must be coupled for the mean-invariance to hold; the input embedding is
  coupled too because Coupled Adam is defined on "the embedding matrix" and its per-token
  second moments are just as unigram-dependent (Eq. 18).
- ``muon``: Muon on the ``matrix`` group only; embedding, head and vectors (norms, biases, learned
  positions) take AdamW steps (see ``harness.optim.muon`` for the lr convention).
"""

from __future__ import annotations

from harness.optim.spec import REQUIRED, OptimizerSpec

_ADAM = {"beta1": 0.9, "beta2": 0.999, "eps": 1e-8}
_SGD = {"momentum": 0.9, "nesterov": False, "weight_decay_mode": "decoupled"}
_NOT_MUON = {"muon": False}

BUILTIN: dict[str, OptimizerSpec] = {
    "adamw": OptimizerSpec(cls="harness.optim.adam:AdamW", fields=_ADAM),
    "adam": OptimizerSpec(cls="harness.optim.adam:Adam", fields=_ADAM),
    "rmsprop": OptimizerSpec(
        cls="harness.optim.adam:RMSprop", fields={"beta2": 0.999, "eps": 1e-8}
    ),
    "sgd": OptimizerSpec(cls="harness.optim.sgd:SGD", fields=_SGD),
    "sgd_cclip": OptimizerSpec(
        cls="harness.optim.sgd:SGDCClip", fields={**_SGD, "clip_value": REQUIRED}
    ),
    "signsgd": OptimizerSpec(cls="harness.optim.sign:SignSGD"),
    "signum": OptimizerSpec(
        cls="harness.optim.sign:Signum", fields={"beta1": 0.9}, renamed={"beta1": "beta"}
    ),
    "lion": OptimizerSpec(cls="harness.optim.sign:Lion", fields={"beta1": 0.9, "beta2": 0.99}),
    "coupled_adam": OptimizerSpec(
        cls="harness.optim.adam:CoupledAdam",
        fields={**_ADAM, "coupled_scale_exp": 0.0},
        group_options={"embedding": {"coupled": True}, "head": {"coupled": True}},
    ),
    "muon": OptimizerSpec(
        cls="harness.optim.muon:Muon",
        fields={"momentum": 0.95, "nesterov": True, **_ADAM},
        group_options={"embedding": _NOT_MUON, "head": _NOT_MUON, "vector": _NOT_MUON},
    ),
}
"""Name -> spec of every built-in optimizer."""
