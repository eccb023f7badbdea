"""Shared pytest fixtures. Each section belongs to the module it serves."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

# --- data (harness.data) -----------------------------------------------------------------------

_DATA_CODE = ("corpora.py", "tokenizers.py", "prepare.py", "catalogue.py")


def _data_code_fingerprint() -> str:
    """Hash of the code that builds datasets: a changed builder never reuses a stale cache."""
    pkg = Path(__file__).resolve().parent.parent / "harness" / "data"
    h = hashlib.sha256()
    for name in _DATA_CODE:
        h.update((pkg / name).read_bytes())
    return h.hexdigest()[:12]


@pytest.fixture(scope="session")
def prepared_data() -> Path:
    """A data root holding ``classics-bpe8k`` prepared (about 7 s the first time).

    Cached across sessions under ``$HARNESS_TEST_DATA`` (default ``~/.cache/harness-test-data``),
    in a subdirectory named after the hash of the dataset-building code.
    """
    from harness.data.prepare import prepare

    base = Path(os.environ.get("HARNESS_TEST_DATA") or Path.home() / ".cache/harness-test-data")
    root = base / f"v-{_data_code_fingerprint()}"
    prepare("classics-bpe8k", root)
    return root


# --- threads (torch) ----------------------------------------------------------------------------


@pytest.fixture
def one_thread() -> Iterator[None]:
    """torch on one thread (as in a job with ``cpus_per_task: 1``, and for bit-stable sums),
    restored afterwards; use ``pytestmark = pytest.mark.usefixtures("one_thread")`` for a module."""
    from tests.threads import torch_threads

    with torch_threads(1):
        yield


# --- SLURM (harness.launch.slurm) -------------------------------------------------------------


@pytest.fixture
def slurm_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The cluster is required (fails under CI=true when absent); launcher profiles are read from
    ``tmp_path/launchers``; runs checkpoint every second."""
    from tests.slurm_cluster import require_cluster
    from tests.slurm_runs import cancel_leftovers

    require_cluster()
    monkeypatch.setenv("HARNESS_LAUNCHERS", str(tmp_path / "launchers"))
    monkeypatch.setenv("HARNESS_CHECKPOINT_EVERY_S", "1")
    yield tmp_path
    cancel_leftovers(tmp_path / "results")


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C as a terminal gives it, however the suite was started: a shell script's ``cmd &``
    (or ``nohup``) starts it with SIGINT ignored, which every process a test starts inherits
    across ``exec`` (Python then installs no ``KeyboardInterrupt`` handler), so a test that sends
    a ``harness`` process SIGINT saw it ignored (the Ctrl-C preflight test failed so in two
    suites started from a script in the background)."""
    import signal
    import threading

    main = threading.current_thread() is threading.main_thread()
    if main and signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test on the SLURM cluster is ``slow`` too: the fast lane (``-m "not slow"``) never
    waits for a queue. Under pytest-xdist (``--dist loadgroup``, scripts/test.sh) the tests on the
    cluster run one after another in one worker (its one node has 2 CPUs: two tests' arrays at
    once would wait for each other past their time limits), and every other test with the tests
    of its file (a module's fixtures, some of which train, are built once).

    The groups are handed to the workers longest first (``tests.durations``: the last measured
    suite's seconds per group; scripts/test.sh passes ``--no-loadscope-reorder`` so that xdist
    keeps this order): a long group started last would leave one worker alone at the end."""
    from tests.durations import expected_seconds

    for item in items:
        if item.get_closest_marker("slurm") is not None:
            item.add_marker(pytest.mark.slow)
            item.add_marker(pytest.mark.xdist_group("slurm"))
        elif item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.partition("::")[0]))
    cost = expected_seconds([_group(item) for item in items])
    items.sort(key=lambda item: (-cost[_group(item)], _group(item)))  # stable within a group


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """With ``HARNESS_TEST_CPU`` set, a line per test appended to that file: its CPU seconds
    (the worker's and the children it reaped) and its wall seconds (``tests.durations``)."""
    from tests.durations import CPU_VARIABLE, cpu_line

    where = os.environ.get(CPU_VARIABLE)
    if not where:
        yield
        return
    with cpu_line(Path(where), item.nodeid, _group(item)):
        yield


def _group(item: pytest.Item) -> str:
    marker = item.get_closest_marker("xdist_group")
    assert marker is not None  # every item has one (above)
    return str(marker.args[0] if marker.args else marker.kwargs["name"])


# --- the device (harness.train.device) --------------------------------------------------------


@pytest.fixture
def on_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs train on the CPU even on a GPU machine (``torch.cuda.is_available()`` is False for
    this process; processes it starts see no GPU): for tests of exact float32 arithmetic, which
    a GPU's bf16 autocast, TF32 and kernels (SDPA's backward) do not reproduce bit for bit.
    ``tests/train/test_gpu.py`` checks the GPU path with its tolerances."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
