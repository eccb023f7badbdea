"""torch.distributed for a run spread over the tasks of one SLURM job (``gpus_per_run: N``).

submitit starts one process per task (``tasks_per_node``); each reads its rank from the job
environment, and all meet at the first node of the job. NCCL on GPUs, gloo on CPUs. The training
loop then wraps the model in DDP and shards each global batch by rank (``harness.train.loop``).
"""

from __future__ import annotations

import datetime as dt
import os

import torch
import torch.distributed as dist

from harness.core.env import MASTER_ADDR, MASTER_PORT

PORT_BASE = 20000
"""Rendezvous ports are ``PORT_BASE + job id mod PORT_SPAN`` (distinct for concurrent jobs)."""
PORT_SPAN = 20000


def backend() -> str:
    """``nccl`` when CUDA is usable, else ``gloo``."""
    return "nccl" if torch.cuda.is_available() else "gloo"


def rendezvous_port(job_id: str) -> int:
    """A port derived from the (raw, numeric) SLURM job id."""
    digits = "".join(c for c in job_id if c.isdigit()) or "0"
    return PORT_BASE + int(digits) % PORT_SPAN


def init_from_job(timeout_s: float = 600.0) -> bool:
    """Initialise the process group from submitit's job environment when the job has more than
    one task; returns whether it did (a one-task job stays a plain process).
    """
    import submitit

    env = submitit.JobEnvironment()
    if env.num_tasks <= 1 or dist.is_initialized():
        return dist.is_initialized()
    os.environ.setdefault(MASTER_ADDR.name, env.hostnames[0])
    os.environ.setdefault(MASTER_PORT.name, str(rendezvous_port(env.raw_job_id)))
    os.environ["RANK"], os.environ["WORLD_SIZE"] = str(env.global_rank), str(env.num_tasks)
    os.environ["LOCAL_RANK"] = str(env.local_rank)
    if torch.cuda.is_available():
        torch.cuda.set_device(env.local_rank % torch.cuda.device_count())
    dist.init_process_group(
        backend(),
        rank=env.global_rank,
        world_size=env.num_tasks,
        timeout=dt.timedelta(seconds=timeout_s),
    )
    return True


def rank() -> int:
    """This process's rank (0 without a process group)."""
    return dist.get_rank() if dist.is_available() and dist.is_initialized() else 0


_flag_group: dist.ProcessGroup | None = None
"""The gloo group :func:`any_rank` votes in when the default group is NCCL (made on first use)."""


def any_rank(flag: bool) -> bool:
    """True on every rank when ``flag`` is True on any rank (all ranks must call it together).

    The vote is a CPU collective (gloo): the training loop polls it every step, and an NCCL
    all-reduce read back with ``.item()`` would make the host wait for the GPU every step.
    """
    global _flag_group
    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return flag
    group = None
    if dist.get_backend() != "gloo":
        if _flag_group is None:
            _flag_group = dist.new_group(backend="gloo")  # collective: every rank, first vote
        group = _flag_group
    t = torch.tensor([int(flag)], dtype=torch.int32)
    dist.all_reduce(t, op=dist.ReduceOp.MAX, group=group)
    return bool(t.item())


def shutdown() -> None:
    """Destroy the process groups if they exist."""
    global _flag_group
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()
    _flag_group = None
