"""The threads a run computes with, set in its process before it trains and recorded in its row.

A run's numbers depend on its thread counts (a sum split over more threads adds in another
order), so they are part of its execution, never of how many runs a submission holds:

- torch's intra-op threads come from the launcher profile and the machine
  (:attr:`~harness.launch.contract.ExecutionSpec.threads`, set by the backend: the local one
  gives ``threads_per_run``, else the cores divided between its slots; a SLURM task its
  ``cpus_per_task`` divided between the runs it packs);
- the BLAS libraries numpy and scipy load (OpenBLAS, MKL) run :data:`RUN_BLAS_THREADS` threads
  inside a run process: the metrics' matrix work is small, and a BLAS that spins up one thread per
  core in every run of a pool oversubscribes the machine (the isotropy metric of an 8192 x 64
  embedding: about 0.05 s on one thread, 0.5 s with the threads of two runs competing).

Both counts, as the run's process has them, go in its row (:data:`THREAD_COLUMNS`).
"""

from __future__ import annotations

from harness.core.provenance import BLAS_THREADS, TORCH_THREADS

RUN_BLAS_THREADS = 1
"""BLAS threads of a run process (module docstring)."""


def set_run_threads(torch_threads: int | None) -> dict[str, int | None]:
    """Set this run process's threads: torch's to ``torch_threads`` (None: left as they are),
    every loaded BLAS library's to :data:`RUN_BLAS_THREADS`.

    Returns:
        The row's thread columns: ``torch_threads`` and ``blas_threads`` as this process now has
        them (``blas_threads`` None when no BLAS library is loaded).
    """
    import numpy  # noqa: F401  # loads its BLAS, so that the limit reaches it
    import torch
    from threadpoolctl import threadpool_info, threadpool_limits  # type: ignore[import-untyped]  # no type information

    if torch_threads:
        torch.set_num_threads(torch_threads)
    threadpool_limits(limits=RUN_BLAS_THREADS, user_api="blas")  # kept: not used as a context
    blas = [int(lib["num_threads"]) for lib in threadpool_info() if lib["user_api"] == "blas"]
    return {TORCH_THREADS: torch.get_num_threads(), BLAS_THREADS: max(blas) if blas else None}
