"""Does any node of the cluster fit a task's request? Read from ``sinfo`` before submitting, so
that an impossible request (more GPUs, CPUs or memory than any node has, an unknown partition)
is one clear error and nothing is queued."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from harness.core.errors import UserError
from harness.launch.slurm.scheduler import SchedulerError, run


@dataclass(frozen=True, slots=True)
class Node:
    """One node as one partition sees it."""

    name: str
    """Node name."""
    partition: str
    """Partition (without sinfo's ``*`` default marker)."""
    default: bool
    """Whether the partition is the cluster's default."""
    cpus: int
    """CPUs of the node."""
    mem_mb: int
    """Memory of the node in MB (``RealMemory``)."""
    gpus: int
    """GPUs in the node's gres."""
    features: frozenset[str]
    """Node features (matched by ``--constraint``)."""


@dataclass(frozen=True, slots=True)
class Request:
    """What one array task asks of one node."""

    partition: str | None
    """Partition; None: the default partition."""
    constraint: str | None
    """Feature constraint (a name, or names joined by ``&`` or ``|``)."""
    gpus: int
    """GPUs (``--gpus-per-node``)."""
    cpus: int
    """CPUs: cpus_per_task x tasks."""
    mem_mb: int | None
    """Memory in MB (``--mem``); None: the cluster's default."""


def gpu_count(gres: str) -> int:
    """GPUs in an sinfo gres string such as ``gpu:a100:2(S:0-1),shard:8`` (here 2)."""
    total = 0
    for item in gres.split(","):
        item = re.sub(r"\(.*?\)", "", item)
        parts = item.split(":")
        if parts[0] == "gpu" and parts[-1].isdigit():
            total += int(parts[-1])
    return total


def parse_sinfo(text: str) -> list[Node]:
    """Nodes from ``sinfo -h -N -o '%N|%P|%c|%m|%G|%f'``."""
    nodes = []
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) != 6 or not parts[2].isdigit():
            continue
        name, part, cpus, mem, gres, feats = parts
        mem_mb = int(re.sub(r"\D.*", "", mem) or 0)
        features = frozenset(f for f in feats.split(",") if f and f != "(null)")
        default = part.endswith("*")
        gpus = gpu_count(gres)
        nodes.append(Node(name, part.rstrip("*"), default, int(cpus), mem_mb, gpus, features))
    return nodes


def read_nodes() -> list[Node] | None:
    """The cluster's nodes from ``sinfo``; None when sinfo cannot answer."""
    try:
        return parse_sinfo(run(["sinfo", "-h", "-N", "-o", "%N|%P|%c|%m|%G|%f"], timeout_s=20.0))
    except SchedulerError:
        return None


def _has_features(node: Node, constraint: str | None) -> bool:
    if not constraint:
        return True
    if re.search(r"[\[\]*()!]", constraint):  # counts, brackets, negation: let sbatch judge
        return True
    if "|" in constraint:
        return any(f in node.features for f in constraint.split("|"))
    return all(f in node.features for f in constraint.split("&"))


def check_fits(request: Request, nodes: Sequence[Node], launcher: str) -> None:
    """Raise a one-line UserError when no node of the request's partition fits the request.

    Raises:
        UserError: unknown partition, or the request exceeds every node (with the largest seen).
    """
    partitions = sorted({n.partition for n in nodes})
    if request.partition is not None and request.partition not in partitions:
        raise UserError(
            f"launcher {launcher!r}: unknown partition {request.partition!r}; "
            f"partitions of this cluster (sinfo): {', '.join(partitions)}"
        )
    where = [
        n
        for n in nodes
        if (n.partition == request.partition or (request.partition is None and n.default))
        and _has_features(n, request.constraint)
    ]
    fits = [
        n
        for n in where
        if n.gpus >= request.gpus
        and n.cpus >= request.cpus
        and (request.mem_mb is None or n.mem_mb >= request.mem_mb)
    ]
    if fits:
        return
    place = f"partition {request.partition or 'default'}"
    if request.constraint:
        place += f" with features {request.constraint!r}"
    if not where:
        raise UserError(f"launcher {launcher!r}: no node in {place} (sinfo)")
    mem = f", {request.mem_mb / 1024:g} GB" if request.mem_mb else ""
    most = (
        f"{max(n.gpus for n in where)} GPUs, {max(n.cpus for n in where)} CPUs, "
        f"{max(n.mem_mb for n in where) / 1024:.1f} GB"
    )
    raise UserError(
        f"launcher {launcher!r}: a task asks for {request.gpus} GPUs, {request.cpus} CPUs{mem} "
        f"but no node in {place} has that; the most there: {most} (sinfo)"
    )
