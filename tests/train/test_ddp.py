"""DDP on CPU: a run split over 2 processes (gloo) follows the loss curve of 1 process.

No SLURM needed: the test spawns the processes and initialises torch.distributed itself, as
``harness.launch.worker.distributed`` does inside a job of ``gpus_per_run`` tasks.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from harness.core.catalogue import flat, from_flat
from harness.launch.worker.distributed import any_rank, rendezvous_port
from harness.model.architecture import flops_per_token
from harness.train.device import Placement
from harness.train.loop import train
from tests.runs import tiny_run

# DDP on CPU over gloo, in exact float32 (tests/train/test_gpu.py checks the GPU path).
pytestmark = pytest.mark.usefixtures("on_the_cpu")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank: int, world: int, port: int, run: dict, data_root: str, out: str) -> None:
    """One rank: join the gloo group, train, and (rank 0) write the result."""
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world
    )
    torch.set_num_threads(1)
    try:
        stop_votes = [any_rank(rank == 1), any_rank(False)]  # one rank's flag reaches all
        # Under NCCL the vote goes through a gloo group of its own (no GPU sync per step):
        # the same votes through that path, with the default group's backend read as NCCL.
        gloo_backend, dist.get_backend = dist.get_backend, lambda group=None: "nccl"
        try:
            stop_votes += [any_rank(rank == 0), any_rank(False)]
        finally:
            dist.get_backend = gloo_backend
        Placement.peak_flops = lambda self: 1e12  # a pretend device peak, to check MFU's sum
        result = train(from_flat(run), data_root=Path(data_root), log=None)
        if rank == 0:
            doc = {
                "curve": result.curve,
                "val_loss": result.metrics["val_loss"],
                "votes": stop_votes,
            }
            doc |= {"mfu": result.metrics["mfu"], "tokens_per_s": result.metrics["tokens_per_s"]}
            Path(out).write_text(json.dumps(doc))
    finally:
        dist.destroy_process_group()


@pytest.mark.slow
def test_two_gloo_processes_match_one_process(tmp_path, prepared_data, one_thread):
    # Global batch 8 sequences: 1 process accumulates 2 micro-batches of 4; 2 ranks take 4 each.
    run = tiny_run(
        prepared_data,
        gpus_per_run=2,
        batch_size=8,
        micro_batch_size=4,
        tokens=8 * 32 * 10,
        log_every=2,
    )
    single = train(run, data_root=prepared_data, log=None)

    out = tmp_path / "ddp.json"
    args = (2, _free_port(), flat(run), str(prepared_data), str(out))
    mp.spawn(_worker, args=args, nprocs=2, join=True)
    ddp = json.loads(out.read_text())

    assert ddp["votes"] == [True, False, True, False]
    # MFU is the global batch's FLOP/s over the peak of both devices.
    fpt = flops_per_token(run.arch, run.data.seq_len)
    assert ddp["mfu"] == pytest.approx(ddp["tokens_per_s"] * fpt / (2 * 1e12), rel=1e-12)
    steps = [p["step"] for p in single.curve]
    assert steps == [2, 4, 6, 8, 10]
    assert [p["step"] for p in ddp["curve"]] == steps
    for a, b in zip(ddp["curve"], single.curve, strict=True):
        assert a["train_loss"] == pytest.approx(b["train_loss"], rel=1e-5, abs=1e-6)
    assert ddp["val_loss"] == pytest.approx(single.metrics["val_loss"], rel=1e-5)
    # The curve moved: a rank that trained on half the batch alone would not match this closely.
    assert single.curve[-1]["train_loss"] < single.curve[0]["train_loss"] - 0.3


def test_rendezvous_port_is_stable_and_in_range():
    assert rendezvous_port("123456") == rendezvous_port("123456")
    assert rendezvous_port("1") != rendezvous_port("2")
    assert all(20000 <= rendezvous_port(str(j)) < 40000 for j in (0, 1, 19999, 20000, 987654))
