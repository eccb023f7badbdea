"""The training loop: ``train(run) -> RunResult``. Knows nothing of SLURM, Parquet or the CLI.

It trains a workload (:class:`harness.workloads.base.Trained`, the GPT on tokens by default):
its model, batches, loss and evaluation. Per optimizer step: the workload's micro-batches (for
the GPT, ``batch_size`` sequences, a pure function of (seed, step), split into micro-batches and
across DDP ranks) accumulate their gradients, the global gradient norm is clipped, every group's
lr is set from the schedule and the optimizer steps. A non-finite loss, a non-finite gradient
norm, a loss above ``diverge_factor`` times the workload's reference loss (``ln(V)`` for the
GPT) or a logged loss more than ``diverge_rise`` nats above the run's best logged loss (an
exploding run) stops the run with status ``diverged``: a result, not an error. With
``diverge_factor`` and ``diverge_rise`` None only a non-finite loss or gradient norm stops a run;
a finite spike trains to the end (``max_loss_rise`` records it). Exceptions (OOM, bugs)
propagate to the caller, which records them. What an optimizer declares beyond ``step()``
(:class:`harness.optim.spec.Hooks`: a backward with ``create_graph``, methods called every k
steps) is done here; a closure or modes are found by Protocols (:mod:`harness.optim.modes`).
"""

from __future__ import annotations

import math
import random
import resource
import time
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist

from harness.core.config import RunConfig
from harness.core.files import os_error_line
from harness.core.result import RunResult, Status
from harness.model.gpt import trainable_params
from harness.optim.build import build_optimizer, hooks_of
from harness.optim.hooks import call_periodic
from harness.optim.modes import needs_closure, to_train_mode
from harness.optim.schedule import lr_at
from harness.train import checkpoint as ckpt
from harness.train.checkpoint import Checkpointing, LoopState
from harness.train.device import Placement, mfu, place
from harness.workloads.base import Trained
from harness.workloads.bound import bind


class TrainingInterrupted(Exception):
    """Raised after a checkpoint was written because ``should_stop()`` asked the run to stop."""


class StoppedBeforeFirstStep(TrainingInterrupted):
    """``should_stop()`` asked a run that had not taken a step to stop: it wrote no checkpoint
    (there was nothing to keep)."""


class TrainingFailed(Exception):
    """Raised by :func:`train` when an error stopped the training once it began: the error
    (also the ``__cause__``) and what the run had done (steps, tokens, loss curve, wall time;
    status ``failed``)."""

    def __init__(self, error: Exception, partial: RunResult) -> None:
        super().__init__(f"{type(error).__name__}: {error}")
        self.error = error
        self.partial = partial


def _rank_world() -> tuple[int, int]:
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def _seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def train(
    run: RunConfig,
    *,
    data_root: Path,
    checkpoint: Checkpointing | None = None,
    should_stop: Callable[[], bool] | None = None,
    log: Callable[[str], None] | None = print,
    on_point: Callable[[dict[str, Any]], None] | None = None,
) -> RunResult:
    """Train ``run`` to completion (or divergence) and evaluate it.

    Args:
        run: the resolved run config.
        data_root: where registered datasets are prepared (user paths are absolute).
        checkpoint: where and how often to checkpoint (resuming from it when it exists); None:
            no checkpointing.
        should_stop: polled once per step; when it returns True the run checkpoints and raises
            :class:`TrainingInterrupted` (preemption, time limit).
        log: receives a progress line per logging interval; None silences it.
        on_point: called (on rank 0) with each loss-curve point as it is logged, plus
            ``steps`` (planned) and ``tokens_per_s``: what a live view shows (the caller
            decides where it goes).

    Returns:
        The run's result (status ``completed`` or ``diverged``).

    Raises:
        TrainingInterrupted: ``should_stop()`` asked the run to stop (after a checkpoint).
        TrainingFailed: an error (OOM, a bug) stopped the training; it carries the error and
            what the run had done.
        Exception: whatever failed before training began (building the model, reading data).
    """
    trainer = _Trainer(run, data_root, checkpoint, log, on_point)
    try:
        return trainer.fit(should_stop)
    except TrainingInterrupted:
        raise
    except Exception as exc:
        raise TrainingFailed(exc, trainer.partial()) from exc


class _Trainer:
    def __init__(
        self,
        run: RunConfig,
        data_root: Path,
        checkpoint: Checkpointing | None,
        log: Callable[[str], None] | None,
        on_point: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        self.run, self.checkpoint, self.log, self.on_point = run, checkpoint, log, on_point
        self.rank, self.world = _rank_world()
        local_rank = (
            self.rank % max(1, torch.cuda.device_count()) if torch.cuda.is_available() else 0
        )
        ex = run.execution
        self.placement: Placement = place(ex.precision, ex.compile, local_rank)
        _seed_everything(ex.seed)
        self.workload: Trained = bind(
            run, data_root, self.placement.device, self.placement.autocast, self.rank, self.world
        )
        self.device = self.workload.device
        self.model = self.workload.build()
        self._scale = self.workload.reference_loss(self.model)
        self.optimizer = build_optimizer(self.model, run)
        self.closure = needs_closure(self.optimizer)
        self.hooks = hooks_of(run)  # a second-order backward, periodic calls
        self.state = LoopState()
        self._restore()
        to_train_mode(self.optimizer)  # schedule-free: steps are taken in train mode
        self.forward = self._wrap(self.model)
        self.tokens_per_step = run.data.tokens_per_step
        self._attempt_start = time.time()
        self._progress_warned = False

    def _wrap(self, model: torch.nn.Module) -> torch.nn.Module:
        if self.world > 1:
            ids = [self.placement.device.index] if self.placement.device.type == "cuda" else None
            model = torch.nn.parallel.DistributedDataParallel(model, device_ids=ids)
        if self.placement.compile:
            model = torch.compile(model)  # type: ignore[assignment]  # an OptimizedModule (a Module); the stub says Callable
        return model

    # --- checkpoints ---------------------------------------------------------------------
    def _restore(self) -> None:
        saved = ckpt.load(self.checkpoint.path) if self.checkpoint else None
        if saved is None and self.checkpoint and self.checkpoint.start_from:
            saved = ckpt.load(self.checkpoint.start_from)  # a branch: its parent's state
        if saved is None:
            return
        self.model.load_state_dict(saved["model"])
        self.optimizer.load_state_dict(saved["optimizer"])
        self.state = LoopState(**saved["loop"])
        ckpt.set_rng_state(saved["rng"])

    def _save(self, attempt_start: float) -> None:
        """Checkpoint; a file system that refuses (full, read-only) costs a warning, not the run:
        the previous checkpoint stays in place."""
        if self.checkpoint is None or self.rank != 0:
            return
        try:
            self._write_checkpoint(attempt_start)
        except OSError as e:
            if self.log:
                self.log(f"[{self.run.run_id}] warning: checkpoint not written: {os_error_line(e)}")

    def _save_branch_point(self, attempt_start: float) -> None:
        """A parent: its state once it has done a branch's first steps, in that branch's
        ``start_from`` file (written like a checkpoint, marked as the branch's origin)."""
        points = dict(self.checkpoint.branch_points) if self.checkpoint else {}
        where = points.get(self.state.step)
        if where is None or self.rank != 0:
            return
        mark = {"branch_of": self.run.run_id, "branched_at": self.state.step}
        try:
            self._write_checkpoint(attempt_start, where, mark)
        except OSError as e:
            if self.log:
                why = os_error_line(e)
                self.log(f"[{self.run.run_id}] warning: branch point not written: {why}")

    def _write_checkpoint(
        self, attempt_start: float, path: Path | None = None, mark: dict[str, Any] | None = None
    ) -> None:
        assert self.checkpoint is not None  # the caller checked
        loop = {**self.state.__dict__, "wall_s": self.state.wall_s + time.time() - attempt_start}
        loop |= mark or {}
        loop["interval_loss"] = self._interval_loss.item()
        loop["interval_steps"] = self._interval_steps
        state = {
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "loop": loop,
            "rng": ckpt.rng_state(),
        }
        ckpt.save(path or self.checkpoint.path, state)

    def _keep_weights(self) -> None:
        """Write the final weights where :attr:`Checkpointing.weights` says (rank 0)."""
        where = self.checkpoint.weights if self.checkpoint else None
        if where is not None and self.rank == 0:
            ckpt.save_weights(where, self.model)

    def _record_progress(self) -> None:
        """Rewrite the progress file (:attr:`Checkpointing.progress`); a file system that
        refuses costs a warning once, not the run."""
        where = self.checkpoint.progress if self.checkpoint else None
        if where is None or self.rank != 0:
            return
        try:
            ckpt.write_progress(where, self.state.step, self.state.curve)
        except OSError as e:
            if self.log and not self._progress_warned:
                self.log(f"[{self.run.run_id}] warning: progress not written: {os_error_line(e)}")
            self._progress_warned = True

    # --- the loop ------------------------------------------------------------------------
    def fit(self, should_stop: Callable[[], bool] | None) -> RunResult:
        st, steps, log_every = self.state, self.run.data.steps, self.run.execution.log_every
        start = self._attempt_start = time.time()
        last_save = time.time()
        factor = self.run.execution.diverge_factor
        limit = math.inf if factor is None else factor * self._scale
        self._interval_loss = torch.full((), st.interval_loss, device=self.device)
        self._interval_steps = st.interval_steps
        first = True
        while st.step < steps:
            if should_stop is not None and should_stop():
                if st.step == 0:  # asked while it was being built (a slow constructor)
                    raise StoppedBeforeFirstStep("stopped before its first step")
                self._save(start)
                raise TrainingInterrupted(f"stopped at step {st.step}")
            # a log step: its mean loss is read (a sync) and its optimizer step timed
            log_step = (st.step + 1) % log_every == 0 or st.step + 1 == steps
            t = time.perf_counter()
            loss, gnorm = self._step(st.step, log_step)
            self._interval_loss += loss
            self._interval_steps += 1
            st.step += 1
            if log_step or first:
                mean = (self._interval_loss / self._interval_steps).item()  # this interval's sync
                bad = self._divergence(mean, gnorm, limit)
                if bad:
                    return self._diverged(start, mean, bad)
            dt = time.perf_counter() - t
            if first:
                self._first_step(dt)
                first = False
            else:
                st.timed_s += dt
                st.timed_tokens += self.tokens_per_step
                if log_step:
                    st.profiled_s += dt
            if log_step:
                self._log_point(mean, start)
                self._interval_loss.zero_()
                self._interval_steps = 0
            self._save_branch_point(start)
            if self.checkpoint is not None and time.time() - last_save > self.checkpoint.every_s:
                self._save(start)
                last_save = time.time()
        return self._finish(start)

    def _step(self, step: int, log_step: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
        st = self.state
        lr = lr_at(step, self.run)
        for g in self.optimizer.param_groups:
            g["lr"] = lr * g.get("lr_scale", 1.0)
        t_data = time.perf_counter()
        micro = self.workload.micro_batches(step)
        st.data_wait_s += time.perf_counter() - t_data
        total = self._forward_backward(micro)
        if self.world > 1:  # ranks saw different rows: log, test and checkpoint the global mean
            dist.all_reduce(total)
            total /= self.world
        gnorm = None
        clip = self.run.optim.grad_clip
        if clip is not None:
            gnorm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), clip)
        if log_step:
            self._sync()
            t_opt = time.perf_counter()
        if self.closure:  # the SAM family: a second forward and backward on the same batch
            # torch types the closure as returning float; SAM-family optimizers take the loss tensor
            self.optimizer.step(lambda: self._again(micro))  # type: ignore[arg-type,return-value]
        else:
            self.optimizer.step()
        call_periodic(self.optimizer, self.hooks, step + 1)  # with this step's gradients
        self.optimizer.zero_grad(set_to_none=True)
        if log_step:
            self._sync()
            st.opt_s += time.perf_counter() - t_opt
        return total, gnorm

    def _forward_backward(self, micro: Any) -> torch.Tensor:
        """Accumulate the gradients of one batch's micro-batches; their mean loss."""
        total: torch.Tensor | None = None
        for i, batch in enumerate(micro):
            sync = i == len(micro) - 1 or self.world == 1
            no_sync = not sync and hasattr(self.forward, "no_sync")
            with self.forward.no_sync() if no_sync else nullcontext():  # type: ignore[operator]  # DDP's (checked above)
                loss = self.workload.loss(self.forward, batch) / len(micro)
            loss.backward(create_graph=self.hooks.create_graph)
            if total is None:  # at least float32, and the loss's own precision if higher
                dtype = torch.promote_types(torch.get_default_dtype(), loss.dtype)
                total = torch.zeros((), device=self.device, dtype=dtype)
            total += loss.detach()
        return torch.zeros((), device=self.device) if total is None else total

    def _again(self, micro: Any) -> torch.Tensor:
        """An optimizer's closure: the loss and gradients of the same batch, recomputed at the
        parameters as they are now (one more forward and backward pass, counted)."""
        self.optimizer.zero_grad(set_to_none=True)
        self.state.extra_passes += 1
        return self._forward_backward(micro)

    def _sync(self) -> None:
        if self.placement.device.type == "cuda":
            torch.cuda.synchronize(self.placement.device)

    def _divergence(self, loss: float, gnorm: torch.Tensor | None, limit: float) -> str | None:
        if not math.isfinite(loss):
            return f"non-finite training loss {loss} at step {self.state.step}"
        if loss > limit:
            return f"training loss {loss:.3f} above {limit:.3f} at step {self.state.step}"
        best = min((p["train_loss"] for p in self.state.curve), default=math.inf)
        rise = self.run.execution.diverge_rise
        if rise is not None and loss > best + rise:
            return (
                f"training loss {loss:.3f} rose more than {rise} above its best "
                f"{best:.3f} at step {self.state.step}"
            )
        if gnorm is not None and not torch.isfinite(gnorm).item():
            return f"non-finite gradient norm at step {self.state.step}"
        return None

    def _first_step(self, dt: float) -> None:
        if self.placement.compile:
            self.state.compile_s = dt  # refined in _finish by subtracting a typical step

    def _point(self, train_loss: float, val_loss: float | None, start: float) -> dict[str, Any]:
        """The loss-curve point after the steps done so far (``CURVE_COLUMNS``)."""
        st = self.state
        return {
            "step": st.step,
            "tokens": st.step * self.tokens_per_step,
            "train_loss": train_loss,
            "lr": lr_at(st.step - 1, self.run),
            "val_loss": val_loss,
            "elapsed_s": st.wall_s + time.time() - start,
        }

    def _log_point(self, mean: float, start: float) -> None:
        run, st = self.run, self.state
        val: float | None = None
        tracked: dict[str, float | None] = {}
        every = run.execution.eval_every
        if every and st.step % every == 0 and st.step < run.data.steps:
            val, tracked = self.workload.evaluate(self.model, self.forward, self.optimizer)
        point = self._point(mean, val, start) | tracked
        st.curve.append(point)
        self._record_progress()
        rate = st.timed_tokens / st.timed_s if st.timed_s else 0.0
        if self.on_point is not None and self.rank == 0:
            self.on_point({**point, "steps": run.data.steps, "tokens_per_s": rate or None})
        if self.log and self.rank == 0:
            self.log(
                f"[{run.run_id}] step {st.step}/{run.data.steps} loss {mean:.4f} "
                f"lr {point['lr']:.3g} {rate:,.0f} tok/s"
            )

    # --- outcomes ------------------------------------------------------------------------
    def partial(self) -> RunResult:
        """What the run has done so far, as a ``failed`` result (its caller fills the error)."""
        st = self.state
        return RunResult(
            status=Status.FAILED,
            params=trainable_params(self.model),
            steps_done=st.step,
            tokens_seen=st.step * self.tokens_per_step,
            device=self.placement.name,
            metrics={"wall_s": st.wall_s + time.time() - self._attempt_start},
            curve=list(st.curve),
            branch_of=st.branch_of,
            steps_trained=st.step - st.branched_at,
        )

    def _result(
        self, status: Status, start: float, metrics: dict[str, float | None], error: str | None
    ) -> RunResult:
        """The run's result with the training metrics every outcome carries, plus ``metrics``."""
        st = self.state
        rate = st.timed_tokens / st.timed_s if st.timed_s > 0 else None
        steps_timed = st.timed_tokens / self.tokens_per_step if st.timed_tokens else 0
        if st.compile_s is not None and steps_timed:
            st.compile_s = max(0.0, st.compile_s - st.timed_s / steps_timed)
        passes = 1 + st.extra_passes / st.step if st.step else 1.0  # the closures' passes
        per_token = self.workload.flops_per_token()
        fpt = None if per_token is None else per_token * passes
        measured: dict[str, float | None] = {
            "train_loss": st.curve[-1]["train_loss"] if st.curve else None,
            "wall_s": st.wall_s + time.time() - start,
            "tokens_per_s": rate,
            "mfu": None if fpt is None else mfu(rate, fpt, self.placement.peak_flops(), self.world),
            "peak_mem_gb": _peak_mem_gb(self.placement),
            "compile_s": st.compile_s,
            "data_wait_s": st.data_wait_s,
            "optimizer_step_frac": st.opt_s / st.profiled_s if st.profiled_s else None,
            "max_loss_rise": max_loss_rise([p["train_loss"] for p in st.curve]),
            "passes_per_step": passes,
            "train_flops": None if fpt is None else fpt * st.step * self.tokens_per_step,
        }
        return RunResult(
            status=status,
            params=trainable_params(self.model),
            steps_done=st.step,
            tokens_seen=st.step * self.tokens_per_step,
            error=error,
            device=self.placement.name,
            metrics=measured | metrics,
            curve=st.curve,
            branch_of=st.branch_of,
            steps_trained=st.step - st.branched_at,
        )

    def _diverged(self, start: float, loss: float, reason: str) -> RunResult:
        self.state.curve.append(self._point(loss, None, start))
        return self._result(Status.DIVERGED, start, {}, reason)

    def _finish(self, start: float) -> RunResult:
        end = self.workload.final(self.model, self.forward, self.optimizer, self._keep_weights)
        val = end.val_loss
        if self.state.curve:
            self.state.curve[-1]["val_loss"] = val
            self.state.curve[-1] |= end.tracked
        if val is None or not math.isfinite(val):
            return self._result(Status.DIVERGED, start, end.metrics, f"validation loss {val}")
        return self._result(Status.COMPLETED, start, end.metrics, None)


def max_loss_rise(losses: list[float]) -> float | None:
    """The largest rise (nats) of a logged training loss above the lowest one logged before it:
    0 for a loss that never rose, large for a spike (kept when ``diverge_rise`` is None), inf
    for a non-finite loss; None with fewer than two points."""
    if len(losses) < 2:
        return None
    best, rise = losses[0], 0.0
    for loss in losses[1:]:
        rise = max(rise, loss - best) if math.isfinite(loss) else math.inf
        best = min(best, loss)
    return rise


def _peak_mem_gb(placement: Placement) -> float:
    if placement.device.type == "cuda":
        return torch.cuda.max_memory_allocated(placement.device) / 1e9
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6  # KiB on Linux -> GB
