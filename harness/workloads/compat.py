"""Which optimizers a workload's model can be trained with: an optimizer defined on parts of a
GPT that the model lacks refuses it, in one line naming the optimizer and the reason, rather
than silently becoming another optimizer (Coupled Adam without an embedding is Adam; Muon
without a matrix is AdamW). Torch-free: the caller says which routed groups the model has
(:func:`harness.optim.routing.split_parameters`)."""

from __future__ import annotations

from collections.abc import Collection

from harness.core.config import RunConfig
from harness.optim.registry import get_spec
from harness.optim.spec import DECAYED, GROUPS

_GPT_ONLY = ("embedding", "head")


def problem(run: RunConfig, present: Collection[str]) -> str | None:
    """Why the run's optimizer cannot train its workload's model, whose parameters fall in the
    routed groups ``present``; None when it can."""
    what = f"workload {run.arch.workload!r}"
    opt = run.optim
    for field in ("embedding_optimizer", "embedding_lr_factor"):
        if getattr(opt, field) is not None:
            return f"{field}: {what} has no embedding"
    if opt.weight_decay and not DECAYED[opt.decay_params] & set(present):
        return (
            f"weight_decay {opt.weight_decay}: {what} has no parameter that decay_params "
            f"{opt.decay_params!r} decays (it has {', '.join(sorted(present))})"
        )
    spec = get_spec(opt.optimizer)
    special = {g for g, o in spec.group_options.items() if any(o.values())}
    if special and special <= set(_GPT_ONLY) and not special & set(present):
        return (
            f"optimizer {opt.optimizer!r} is defined on the {' and '.join(sorted(special))}, "
            f"and {what} has neither"
        )
    native = {
        g
        for g in (spec.takes or GROUPS)
        if not any(v is False for v in spec.group_options.get(g, {}).values())
    }
    if not native & set(present):
        return (
            f"optimizer {opt.optimizer!r} acts on {', '.join(sorted(native))} parameters only "
            f"and {what} has none (it has {', '.join(sorted(present))})"
        )
    return None
