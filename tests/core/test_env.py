"""Every environment variable the harness reads is declared once (``harness/core/env.py``), read
through that declaration, and listed in the README; the cache and data folders are chosen there."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from harness.core import env, paths
from harness.data.catalogue import DATASETS, DatasetSpec
from harness.data.prepare import prepare

ROOT = Path(__file__).resolve().parents[2]
SET_ONLY = {"RANK", "WORLD_SIZE", "LOCAL_RANK"}
"""Variables the harness sets for torch.distributed and never reads."""


def test_the_readme_lists_every_variable_as_declared() -> None:
    readme = (ROOT / "README.md").read_text()
    start, end = "<!-- env table: harness.core.env.readme_table() -->", "<!-- end env table -->"
    table = readme.split(start)[1].split(end)[0].strip()
    assert table == env.readme_table()


def test_only_core_env_reads_the_environment() -> None:
    """No module but ``core/env.py`` reads ``os.environ`` (a read elsewhere would be a variable
    nobody lists); every variable named next to ``os.environ`` is declared."""
    readers = re.compile(r"os\.getenv\(|environ\.get\(|environ\[[^]]+\](?!\s*[,=])|\.pop\(")
    for path in sorted((ROOT / "harness").rglob("*.py")):
        if path.name == "env.py" and path.parent.name == "core":
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if "environ" not in line:
                continue
            where = f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
            named = set(re.findall(r"[\"']([A-Z][A-Z0-9_]+)[\"']", line))
            assert named <= SET_ONLY, f"name it through harness.core.env: {where}"
            reads = readers.search(line.split("#")[0])
            assert not reads or ".name" in line, f"read it through harness.core.env: {where}"


def test_cache_folder_honours_xdg_everywhere(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("HARNESS_SPILL", raising=False)
    assert env.cache_dir() == tmp_path / "xdg" / "harness"
    assert paths.spill_dirs()[0] == tmp_path / "xdg" / "harness" / "spill"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert env.cache_dir() == tmp_path / ".cache" / "harness"


def _tiny_build(out: Path) -> None:
    for name in ("train.bin", "val.bin"):
        np.arange(600, dtype=np.uint16).tofile(out / name)
    (out / "meta.json").write_text('{"vocab_size": 600}\n')


def test_preparing_a_dataset_says_where(tmp_path: Path) -> None:
    spec = DatasetSpec(
        name="tiny-said", vocab_size=600, doc="test", build=f"{__name__}:_tiny_build"
    )
    said: list[str] = []
    with DATASETS.temporarily(spec.name, spec):
        out = prepare(spec.name, tmp_path, log=said.append)
        prepare(spec.name, tmp_path, log=said.append)  # already there: nothing to say
    assert said == [f"dataset tiny-said: prepared in {out}"] and out == tmp_path / "tiny-said"
