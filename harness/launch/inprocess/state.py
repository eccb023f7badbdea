"""What a run trained in the caller's process changes, put back after it: the caller must not
see that a run trained (its RNG draws, its thread counts, its working folder and environment
are as they were).

A run seeds Python's, numpy's and torch's global generators, sets torch's and the BLAS's thread
counts (:func:`~harness.launch.worker.threads.set_run_threads`), may point torch.compile's caches
at the grid (environment variables) and fills Dynamo's in-memory caches; on a GPU it sets TF32
matmuls. Each is saved before and restored after; Dynamo is reset, as a run process does between
runs (:func:`harness.launch.worker.process._between_runs`).
"""

from __future__ import annotations

import contextlib
import os
import random
import sys
from collections.abc import Iterator

import numpy as np
import torch
from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]  # no type information


@contextlib.contextmanager
def callers_state_kept() -> Iterator[None]:
    """Inside the block a run may change the process-wide state above; after it (however it
    ends) the caller's is back."""
    py_rng, np_rng, torch_rng = random.getstate(), np.random.get_state(), torch.get_rng_state()
    threads, precision = torch.get_num_threads(), torch.get_float32_matmul_precision()
    tf32 = torch.backends.cudnn.allow_tf32
    cwd, environ = os.getcwd(), dict(os.environ)
    cuda = torch.cuda.is_initialized()  # type: ignore[no-untyped-call]  # torch gives no types
    cuda_rng = torch.cuda.get_rng_state_all() if cuda else None
    try:
        with threadpool_limits(limits=None):  # restores the BLAS libraries' counts on exit
            yield
    finally:
        random.setstate(py_rng)
        np.random.set_state(np_rng)
        torch.set_rng_state(torch_rng)
        if cuda_rng is not None:
            torch.cuda.set_rng_state_all(cuda_rng)
        torch.set_num_threads(threads)
        torch.set_float32_matmul_precision(precision)
        torch.backends.cudnn.allow_tf32 = tf32
        os.chdir(cwd)
        if dict(os.environ) != environ:
            os.environ.clear()
            os.environ.update(environ)
        if "torch._dynamo" in sys.modules:
            torch._dynamo.reset()
