"""What the preflight's child process does with one optimizer configuration
(:mod:`harness.launch.preflight`, run by :mod:`harness.launch.sandbox`): build the run's model
and optimizer on the CPU, take one step on a tiny batch as the training loop would (its closure,
its second-order backward, its periodic calls: :mod:`harness.optim.hooks`), and check that the
step left the learning rate to the harness (unless the run's schedule is constant without
warmup: the optimizer's own schedule is then the only one, as schedule-free's warmup may be).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch  # imported as the child starts, before the clock of its first item runs

from harness.core.config import Architecture, RunConfig
from harness.core.errors import UserError
from harness.launch.preflight import model_to_build
from harness.workloads.compat import problem
from harness.workloads.registry import get_workload

_MODELS: dict[tuple[Architecture, int], Any] = {}
"""One model per architecture in this process; its weights do not matter."""


def check(run: RunConfig) -> str | None:
    """Build and step ``run``'s optimizer: None when it works, else the problem in a line.

    Raises:
        Exception: what the user's optimizer raised (the sandbox reports it).
    """
    from harness.optim.build import build_optimizer, hooks_of
    from harness.optim.hooks import call_periodic
    from harness.optim.modes import needs_closure, to_train_mode

    hooks = hooks_of(run)
    try:
        model, loss_of = _model(run, hooks.create_graph)
    except UserError as e:  # an optimizer that refuses the run's workload
        return str(e)
    model.zero_grad(set_to_none=True)
    opt = build_optimizer(model, run)
    to_train_mode(opt)
    before = _lr_values(opt)

    def closure() -> torch.Tensor:  # the loss and gradients of the tiny batch
        opt.zero_grad(set_to_none=True)
        loss: torch.Tensor = loss_of()
        return loss

    closure()
    if needs_closure(opt):
        opt.step(closure)  # type: ignore[arg-type]  # a SAM-family closure returns the loss tensor
    else:
        opt.step()
    if hooks.every:  # each periodic call once (at a multiple of every period), so that it shows
        call_periodic(opt, hooks, math.lcm(*hooks.every.values()))
    if run.optim.schedule == "constant" and not run.optim.warmup_steps:
        return None  # the optimizer's own schedule is the only one (schedule-free's warmup)
    return _own_schedule(before, _lr_values(opt))


def _model(run: RunConfig, create_graph: bool) -> tuple[Any, Callable[[], Any]]:
    """The run's model (a workload's, or the GPT as :func:`model_to_build` says) and the
    function computing the tiny batch's loss and gradients."""
    import torch.nn.functional as F

    from harness.model.build import build_model
    from harness.optim.routing import split_parameters

    if run.arch.workload is not None:
        workload = get_workload(str(run.arch.workload)).build(run.optim.hyperparameters.as_dict())
        model = workload.model(run.execution.seed)
        why = problem(run, [g for g, ps in split_parameters(model).items() if ps])
        if why is not None:
            raise UserError(why)
        batch = workload.batch(run.execution.seed, 0, run.data.batch_size)

        def workload_loss() -> torch.Tensor:
            loss: torch.Tensor = workload.loss(model, batch)
            loss.backward(create_graph=create_graph)  # type: ignore[no-untyped-call]  # torch's stub
            return loss.detach()

        return model, workload_loss
    arch, _ = model_to_build(run)
    key = (arch, run.data.seq_len)
    if key not in _MODELS:
        _MODELS[key] = build_model(arch, run.data.seq_len)
    gpt = _MODELS[key]
    gen = torch.Generator().manual_seed(0)
    x = torch.randint(0, arch.vocab_size, (1, min(8, run.data.seq_len)), generator=gen)

    def gpt_loss() -> torch.Tensor:
        logits = gpt(x).float()  # (1, T, V)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), x.view(-1))
        loss.backward(create_graph=create_graph)  # type: ignore[no-untyped-call]  # torch's stub
        return loss.detach()

    return gpt, gpt_loss


APPLIED_LR = ("lr", "scheduled_lr", "current_lr")
"""The names of a learning rate an optimizer applies: a group's ``lr`` (set by the harness),
schedule-free's ``scheduled_lr`` (``lr`` times its own warmup, documented), Ranger21's
``current_lr``. Other floats whose names hold lr are statistics, not schedules (schedule-free's
``lr_max``, a running maximum starting at -1)."""


def _lr_values(opt: Any) -> dict[str, float]:
    """Every learning rate the optimizer applies (:data:`APPLIED_LR`), by where it is: each
    group's, and the optimizer's own attribute."""
    out: dict[str, float] = {}
    for i, g in enumerate(opt.param_groups):
        for k, v in g.items():
            if _is_lr(k, v):
                out[f"param group {i} {k}"] = float(v)
    for k, v in vars(opt).items():
        if _is_lr(k, v):
            out[f"optimizer.{k}"] = float(v)
    return out


def _is_lr(name: str, value: Any) -> bool:
    return isinstance(value, float | int) and not isinstance(value, bool) and name in APPLIED_LR


def _own_schedule(before: dict[str, float], after: dict[str, float]) -> str | None:
    """The problem when a step changed a learning rate the harness set, or set another one that
    differs from it: the optimizer schedules its own lr on top of the harness's schedule."""
    lr = next((v for k, v in before.items() if k.endswith(" lr")), None)
    changed: dict[str, float] = {}
    for k, v in after.items():
        same: float | None
        if k.endswith(" lr"):  # a group's lr, as the harness set it
            same = before.get(k, v)
        else:  # another lr it applies: its group's (the optimizer's: the first group's)
            same = before.get(k.rpartition(" ")[0] + " lr", lr) if " " in k else lr
        if same is not None and not math.isclose(v, same, rel_tol=1e-9):
            changed[k] = v
    if k_of_lr := [k for k in changed if k.endswith(" lr")]:
        said = f"{k_of_lr[0]} went from {before[k_of_lr[0]]:g} to {changed[k_of_lr[0]]:g}"
    elif changed:
        k = next(iter(changed))
        said = f"{k} = {changed[k]:g} after one step at lr {lr:g}"
    else:
        return None
    return (
        f"the optimizer schedules its own learning rate on top of the harness's schedule ({said}); "
        "turn its own schedule (warmup, warmdown) off in the grid, so that the run's schedule is "
        "the one applied, or set schedule: constant and warmup_steps: 0 to apply its own only "
        "(in a bench: the protocol's candidate: schedules, for this optimizer)"
    )
