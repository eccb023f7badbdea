"""Optimizers whose code does what no optimizer should, as a user's file might (issue 29, item
2): each is SGD but for the one thing it does in its constructor or its ``step()``. The tests'
grids name them by file (``./hostile_optimizers.py:ExitZero``)."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import torch


class _SGD(torch.optim.SGD):
    def __init__(self, params, lr: float = 0.01, weight_decay: float = 0.0):
        super().__init__(params, lr=lr, weight_decay=weight_decay)


class ExitZero(_SGD):
    """Its constructor ends the process with status 0 (a false success in the caller)."""

    def __init__(self, params, lr: float = 0.01, weight_decay: float = 0.0):
        os._exit(0)


class ExitThree(_SGD):
    """Its constructor calls ``sys.exit(3)``."""

    def __init__(self, params, lr: float = 0.01, weight_decay: float = 0.0):
        sys.exit(3)


class Interrupt(_SGD):
    """Its constructor raises ``KeyboardInterrupt`` (not the user's Ctrl-C)."""

    def __init__(self, params, lr: float = 0.01, weight_decay: float = 0.0):
        raise KeyboardInterrupt("from the constructor")


class HangStep(_SGD):
    """Its ``step()`` never returns."""

    def step(self, closure=None):
        while True:
            time.sleep(1)


class Segfault(_SGD):
    """Its ``step()`` dies of a signal."""

    def step(self, closure=None):
        os.kill(os.getpid(), signal.SIGSEGV)


class Greedy(_SGD):
    """Its constructor allocates memory without end (20 MB at a time)."""

    def __init__(self, params, lr: float = 0.01, weight_decay: float = 0.0):
        super().__init__(params, lr=lr, weight_decay=weight_decay)
        self.hoard = []
        while True:
            self.hoard.append(bytearray(20 * 2**20))


class Slow(_SGD):
    """Its constructor writes its pid to ``marker`` and sleeps ``seconds``."""

    def __init__(
        self, params, lr: float = 0.01, weight_decay: float = 0.0, marker: str = "", seconds=600.0
    ):
        Path(marker).write_text(str(os.getpid()))
        time.sleep(seconds)
        super().__init__(params, lr=lr, weight_decay=weight_decay)


class SlowInTheRun(_SGD):
    """Quick the first time it is built (the preflight); built again (the run), it writes its
    pid to ``marker`` + ``.run`` and sleeps ``seconds``."""

    def __init__(
        self, params, lr: float = 0.01, weight_decay: float = 0.0, marker: str = "", seconds=600.0
    ):
        if Path(marker).exists():
            Path(marker + ".run").write_text(str(os.getpid()))
            time.sleep(seconds)
        Path(marker).write_text(str(os.getpid()))
        super().__init__(params, lr=lr, weight_decay=weight_decay)
