"""The built-in optimizers, registered by name. A new optimizer adds one ``register`` call.

Classes are named by import path (``module:Class``), so resolving a grid imports no torch.
Defaults are torch's where torch has the optimizer, else the defining paper's. Choices:

- ``sgd``: momentum 0.9 by default (the paper's Sec. 6.2 embedding SGD, and the usual choice);
  weight decay is decoupled (see ``harness.optim.sgd``).
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

from harness.optim.spec import REQUIRED, OptimizerSpec, register

_ADAM_FIELDS = {"beta1": 0.9, "beta2": 0.999, "eps": 1e-8}
_NOT_MUON = {"muon": False}

register("adamw", OptimizerSpec(cls="harness.optim.adam:AdamW", fields=dict(_ADAM_FIELDS)))
register("adam", OptimizerSpec(cls="harness.optim.adam:Adam", fields=dict(_ADAM_FIELDS)))
register(
    "rmsprop", OptimizerSpec(cls="harness.optim.adam:RMSprop", fields={"beta2": 0.999, "eps": 1e-8})
)
register(
    "sgd", OptimizerSpec(cls="harness.optim.sgd:SGD", fields={"momentum": 0.9, "nesterov": False})
)
register(
    "sgd_cclip",
    OptimizerSpec(
        cls="harness.optim.sgd:SGDCClip",
        fields={"momentum": 0.9, "nesterov": False, "clip_value": REQUIRED},
    ),
)
register("signsgd", OptimizerSpec(cls="harness.optim.sign:SignSGD"))
register("signum", OptimizerSpec(cls="harness.optim.sign:Signum", fields={"beta1": 0.9}))
register("lion", OptimizerSpec(cls="harness.optim.sign:Lion", fields={"beta1": 0.9, "beta2": 0.99}))
register(
    "coupled_adam",
    OptimizerSpec(
        cls="harness.optim.adam:CoupledAdam",
        fields={**_ADAM_FIELDS, "coupled_scale_exp": 0.0},
        group_options={"embedding": {"coupled": True}, "head": {"coupled": True}},
    ),
)
register(
    "muon",
    OptimizerSpec(
        cls="harness.optim.muon:Muon",
        fields={"momentum": 0.95, "nesterov": True, **_ADAM_FIELDS},
        group_options={"embedding": _NOT_MUON, "head": _NOT_MUON, "vector": _NOT_MUON},
    ),
)
