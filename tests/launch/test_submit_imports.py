"""A local ``submit`` does not import torch itself (issue 40: about 3 s of CPU per submit, every
submit of the suite and every user's): its run processes do. The launcher, the run pool and the
GPU count (no GPU driver on the machine: no GPU torch could see) are torch-free; a process that
died is recorded with torch imported then."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_the_local_launcher_and_its_pool_import_no_torch() -> None:
    code = (
        "import sys\n"
        "import harness.launch.local.launcher, harness.launch.local.batch\n"
        "import harness.launch.worker.pool, harness.launch.worker.process\n"
        "from harness.launch.local import slots\n"
        "slots.GPU_DRIVER_FILES = ()\n"
        "assert slots.local_gpus() == []\n"
        "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", out.stdout


def test_no_gpu_driver_means_no_gpus_and_cuda_visible_devices_empty_too(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from harness.launch.local import slots

    monkeypatch.setattr(slots, "GPU_DRIVER_FILES", (str(tmp_path / "absent"),))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert slots.local_gpus() == []
    monkeypatch.setattr(slots, "GPU_DRIVER_FILES", (str(tmp_path),))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert slots.local_gpus() == []
