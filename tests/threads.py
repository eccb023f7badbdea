"""torch's intra-op thread count, set for a block and restored after it (the ``one_thread``
fixture of ``conftest.py`` uses it; so do helpers that train inside a test)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """``torch.set_num_threads(n)`` inside the block; the previous count after it, even on error."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)
