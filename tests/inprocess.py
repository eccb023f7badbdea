"""Runs trained in the test's own process, for tests where the run process is not what is under
test: the ``runs_in_process`` fixture makes the ``local`` profile (``--local``, ``launcher:
local``, ``launcher="local"``) the in-process backend's (:mod:`harness.launch.inprocess`) for
the test and the processes it starts. A submit of a few quadratic runs then costs a few tenths of
a second of CPU, not the seconds of a pool of run processes (each imports the harness) and, once
per test process, a fork server that imports torch. Tests of processes, signals, logs and time
limits keep the real ``local`` launcher.

Use it in a module as ``pytestmark = pytest.mark.usefixtures("runs_in_process")`` with
``from tests.inprocess import runs_in_process  # noqa: F401``, or per test."""

from __future__ import annotations

from pathlib import Path

import pytest

PROFILE = "kind: inprocess\ncheckpoint_every_s: 60\n"
"""The ``local`` profile of a test that trains in its process."""


@pytest.fixture
def runs_in_process(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> Path | None:
    """``local`` is the in-process profile while the test runs (``$HARNESS_LAUNCHERS``, searched
    before the shipped profiles); returns its folder. A test on the SLURM cluster (``slurm_env``,
    which sets ``$HARNESS_LAUNCHERS`` itself) is left as it is: None."""
    if "slurm_env" in request.fixturenames:
        return None
    folder = tmp_path_factory.getbasetemp() / "launchers-inprocess"
    folder.mkdir(exist_ok=True)
    (folder / "local.yaml").write_text(PROFILE)
    monkeypatch.setenv("HARNESS_LAUNCHERS", str(folder))
    return folder
