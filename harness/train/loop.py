"""The training loop: ``train(run) -> RunResult``. Knows nothing of SLURM, Parquet or the CLI.

Per optimizer step: the global batch (``batch_size`` sequences, a pure function of (seed, step))
is split into micro-batches (and across DDP ranks), gradients are accumulated, the global gradient
norm is clipped, every group's lr is set from the schedule and the optimizer steps. A non-finite
loss, a non-finite gradient norm, a loss above ``diverge_factor * ln(V)`` or a logged loss more than
``diverge_rise`` nats above the run's best logged loss (an exploding run) stops the run with
status ``diverged``: a result, not an error. With ``diverge_factor`` and ``diverge_rise`` None only
a non-finite loss or gradient norm stops a run; a finite spike trains to the end (``max_loss_rise``
records it). Exceptions (OOM, bugs) propagate to the caller,
which records them.
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
from harness.core.errors import UserError
from harness.core.files import os_error_line
from harness.core.result import RunResult, Status
from harness.data.batches import TokenData
from harness.data.catalogue import resolve_dataset
from harness.metrics.final import final_metrics
from harness.metrics.frequency import BucketLosses, frequency_buckets
from harness.model.build import build_model, training_flops_per_token
from harness.model.gpt import cross_entropy, trainable_params
from harness.optim.build import build_optimizer
from harness.optim.modes import evaluating, needs_closure, to_train_mode
from harness.optim.routing import split_parameters
from harness.optim.schedule import lr_at
from harness.train import checkpoint as ckpt
from harness.train.checkpoint import Checkpointing, LoopState
from harness.train.device import Placement, mfu, place
from harness.train.tracking import Tracker
from harness.workloads.base import Workload
from harness.workloads.compat import problem
from harness.workloads.registry import get_workload


class TrainingInterrupted(Exception):
    """Raised after a checkpoint was written because ``should_stop()`` asked the run to stop."""


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
    kind = _Trainer if run.arch.workload is None else _WorkloadTrainer
    trainer = kind(run, data_root, checkpoint, log, on_point)
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
        self.device = self.placement.device
        _seed_everything(ex.seed)
        self.model = self._build(data_root)
        self.optimizer = build_optimizer(self.model, run)
        self.closure = needs_closure(self.optimizer)
        self.state = LoopState()
        self._restore()
        to_train_mode(self.optimizer)  # schedule-free: steps are taken in train mode
        self.forward = self._wrap(self.model)
        self.tokens_per_step = run.data.tokens_per_step
        self._attempt_start = time.time()
        self._progress_warned = False

    def _build(self, data_root: Path) -> torch.nn.Module:
        """The GPT on the run's tokens: data, model (on the device) and tracked metrics."""
        run = self.run
        self.data = TokenData(resolve_dataset(run.data.dataset, data_root))
        self.tracker = Tracker(run.execution.tracked, self.data, self.placement.device)
        return build_model(run.arch, run.data.seq_len).to(self.placement.device)

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

    def _write_checkpoint(self, attempt_start: float) -> None:
        assert self.checkpoint is not None  # the caller checked
        loop = {**self.state.__dict__, "wall_s": self.state.wall_s + time.time() - attempt_start}
        loop["interval_loss"] = self._interval_loss.item()
        loop["interval_steps"] = self._interval_steps
        state = {
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "loop": loop,
            "rng": ckpt.rng_state(),
        }
        ckpt.save(self.checkpoint.path, state)

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
        limit = math.inf if factor is None else factor * self._loss_scale()
        self._interval_loss = torch.full((), st.interval_loss, device=self.device)
        self._interval_steps = st.interval_steps
        first = True
        while st.step < steps:
            if should_stop is not None and should_stop():
                self._save(start)
                raise TrainingInterrupted(f"stopped at step {st.step}")
            profile = (st.step + 1) % log_every == 0 or st.step + 1 == steps
            t = time.perf_counter()
            loss, gnorm = self._step(st.step, profile)
            self._interval_loss += loss
            self._interval_steps += 1
            st.step += 1
            if profile or first:
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
                if profile:
                    st.profiled_s += dt
            if profile:
                self._log_point(mean, start)
                self._interval_loss.zero_()
                self._interval_steps = 0
            if self.checkpoint is not None and time.time() - last_save > self.checkpoint.every_s:
                self._save(start)
                last_save = time.time()
        return self._finish(start)

    def _step(self, step: int, profile: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
        st = self.state
        lr = lr_at(step, self.run)
        for g in self.optimizer.param_groups:
            g["lr"] = lr * g.get("lr_scale", 1.0)
        t_data = time.perf_counter()
        micro = self._batch(step)
        st.data_wait_s += time.perf_counter() - t_data
        total = self._forward_backward(micro)
        if self.world > 1:  # ranks saw different rows: log, test and checkpoint the global mean
            dist.all_reduce(total)
            total /= self.world
        gnorm = None
        clip = self.run.optim.grad_clip
        if clip is not None:
            gnorm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), clip)
        if profile:
            self._sync()
            t_opt = time.perf_counter()
        if self.closure:  # the SAM family: a second forward and backward on the same batch
            # torch types the closure as returning float; SAM-family optimizers take the loss tensor
            self.optimizer.step(lambda: self._again(micro))  # type: ignore[arg-type,return-value]
        else:
            self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        if profile:
            self._sync()
            st.opt_s += time.perf_counter() - t_opt
        return total, gnorm

    def _loss_scale(self) -> float:
        """The loss a diverging run exceeds ``diverge_factor`` times: ``ln(V)``, a uniform
        prediction's."""
        return math.log(self.run.arch.vocab_size)

    def _batch(self, step: int) -> Any:
        """This rank's micro-batches of step ``step``: (inputs, targets) pairs."""
        data = self.run.data
        return list(
            self.data.micro_batches(
                step, self.run.execution.seed, data.batch_size, data.micro_batch_size,
                data.seq_len, self.rank, self.world,
            )
        )  # fmt: skip

    def _forward_backward(self, micro: Any) -> torch.Tensor:
        """Accumulate the gradients of one batch's micro-batches; their mean loss."""
        total = torch.zeros((), device=self.placement.device)
        for i, (x, y) in enumerate(micro):
            x, y = self._to_device(x), self._to_device(y)
            sync = i == len(micro) - 1 or self.world == 1
            no_sync = not sync and hasattr(self.forward, "no_sync")
            with (
                self.forward.no_sync() if no_sync else nullcontext(),  # type: ignore[operator]  # DDP's (checked above)
                self.placement.autocast(),
            ):
                loss = self._loss(x, y) / len(micro)
            loss.backward()
            total += loss.detach()
        return total

    def _again(self, micro: Any) -> torch.Tensor:
        """An optimizer's closure: the loss and gradients of the same batch, recomputed at the
        parameters as they are now (one more forward and backward pass, counted)."""
        self.optimizer.zero_grad(set_to_none=True)
        self.state.extra_passes += 1
        return self._forward_backward(micro)

    def _loss(self, x: torch.Tensor, y: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
        """Cross-entropy of the model's logits (B, T, V) for targets y (B, T), computed in
        float32 (safe under bf16 autocast): their mean, or each token's (B * T,) with
        ``reduction="none"``."""
        return cross_entropy(self.forward(x), y, reduction)  # logits (B, T, V)

    def _to_device(self, t: torch.Tensor) -> torch.Tensor:
        """Host batch -> device; on CUDA through pinned memory, so the copy is asynchronous."""
        if self.placement.device.type != "cuda":
            return t
        return t.pin_memory().to(self.placement.device, non_blocking=True)

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
            val, tracked = self._evaluate_point()
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

    def _evaluate_point(self) -> tuple[float, dict[str, float | None]]:
        """The validation loss and the tracked metrics at an evaluation point."""
        buckets = self.tracker.buckets()
        val = self.evaluate(buckets)
        return val, self.tracker.measure(self.model, buckets)

    @torch.no_grad()
    def evaluate(self, buckets: BucketLosses | None = None) -> float:
        """Mean loss over the fixed held-out tokens (the same windows for every run); with
        ``buckets``, also each token's loss added to its target's frequency bucket."""
        data = self.run.data
        self.model.eval()
        total = torch.zeros((), device=self.placement.device, dtype=torch.float64)
        count = 0
        with evaluating(self.optimizer):  # schedule-free: at the evaluated point
            for x, y in self.data.eval_batches(
                data.eval_tokens, data.seq_len, data.micro_batch_size
            ):
                x, y = self._to_device(x), self._to_device(y)
                with self.placement.autocast():
                    per_token = self._loss(x, y, reduction="none")  # (B * T,)
                if buckets is not None:
                    buckets.add(per_token, y)
                loss = per_token.mean()
                total += loss.double() * y.numel()
                count += y.numel()
        self.model.train()
        return (total / count).item()

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
        per_token = self._flops_per_token()
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
        )

    def _flops_per_token(self) -> float | None:
        """Training FLOPs per token of one forward and backward pass (None: not counted)."""
        return training_flops_per_token(self.run.arch, self.run.data.seq_len)

    def _diverged(self, start: float, loss: float, reason: str) -> RunResult:
        self.state.curve.append(self._point(loss, None, start))
        return self._result(Status.DIVERGED, start, {}, reason)

    def _finish(self, start: float) -> RunResult:
        counts = self.data.unigram_counts()
        buckets = BucketLosses(frequency_buckets(counts), self.placement.device)
        val = self.evaluate(buckets)
        if self.state.curve:
            self.state.curve[-1]["val_loss"] = val
        with evaluating(self.optimizer):  # the embedding metrics of the evaluated point
            metrics = final_metrics(self.model, self.optimizer, self.data)
            if math.isfinite(val):
                self._keep_weights()
        if not math.isfinite(val):
            return self._result(Status.DIVERGED, start, metrics, f"validation loss {val}")
        metrics |= {"val_loss": val, "val_ppl": math.exp(val), **buckets.result()}
        if self.state.curve:
            self.state.curve[-1] |= self.tracker.final(metrics)
        return self._result(Status.COMPLETED, start, metrics, None)


class _WorkloadTrainer(_Trainer):
    """The loop on a workload other than the GPT (:mod:`harness.workloads`): its model, batches,
    loss and evaluation, on the CPU, in one process; everything else (schedule, clipping,
    divergence, checkpoints, the curve) as for the GPT."""

    def _build(self, data_root: Path) -> torch.nn.Module:
        run = self.run
        if self.world > 1:
            raise UserError(f"workload {run.arch.workload!r} runs in one process")
        spec = get_workload(str(run.arch.workload))
        self.workload: Workload = spec.build(run.optim.hyperparameters.as_dict())
        self.device = torch.device("cpu")
        model = self.workload.model(run.execution.seed)
        present = [g for g, ps in split_parameters(model).items() if ps]
        why = problem(run, present)
        if why is not None:
            raise UserError(why)
        self._scale = self.workload.reference_loss(model)
        return model

    def _loss_scale(self) -> float:
        return self._scale

    def _batch(self, step: int) -> Any:
        return self.workload.batch(self.run.execution.seed, step, self.run.data.batch_size)

    def _forward_backward(self, micro: Any) -> torch.Tensor:
        loss = self.workload.loss(self.model, micro)
        loss.backward()
        return loss.detach()

    def _measure(self) -> dict[str, float]:
        with evaluating(self.optimizer):  # schedule-free: at the evaluated point
            return self.workload.evaluate(self.model)

    def _evaluate_point(self) -> tuple[float, dict[str, float | None]]:
        metrics = self._measure()
        return metrics["val_loss"], {n: metrics.get(n) for n in self.run.execution.tracked}

    def _flops_per_token(self) -> float | None:
        return None

    def _finish(self, start: float) -> RunResult:
        metrics: dict[str, float | None] = dict(self._measure())
        val = metrics["val_loss"]
        if self.state.curve:
            self.state.curve[-1]["val_loss"] = val
            self.state.curve[-1] |= {n: metrics.get(n) for n in self.run.execution.tracked}
        if val is None or not math.isfinite(val):
            return self._result(Status.DIVERGED, start, metrics, f"validation loss {val}")
        return self._result(Status.COMPLETED, start, metrics, None)


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
