"""The data folder's defaults attacked (issue 29, "not yet attacked"): a relative
``XDG_DATA_HOME``/``XDG_CACHE_HOME`` is ignored, as the XDG spec says (it would name another
folder from every working directory), and a data root that is a file is one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.core import env
from harness.core.errors import UserError
from harness.data.catalogue import data_root
from tests.local_submits import REPO


def test_a_relative_xdg_base_is_ignored(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("HARNESS_DATA", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", "relative/dir")
    monkeypatch.setenv("XDG_CACHE_HOME", "cache")
    assert data_root() == tmp_path / ".local" / "share" / "harness" / "data"
    assert env.cache_dir() == tmp_path / ".cache" / "harness"
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert data_root() == tmp_path / "xdg" / "harness" / "data"


def test_data_list_from_two_folders_names_one_data_root(tmp_path: Path) -> None:
    environ = {
        **os.environ,
        "HOME": str(tmp_path / "home"),
        "XDG_DATA_HOME": "rel",
        "PYTHONPATH": str(REPO),
    }
    environ.pop("HARNESS_DATA", None)
    code = "from harness.data.catalogue import data_root; print(data_root())"
    seen = set()
    for folder in (tmp_path / "a", tmp_path / "b"):
        folder.mkdir()
        out = subprocess.run(
            [sys.executable, "-c", code],
            cwd=folder,
            env=environ,
            text=True,
            capture_output=True,
            check=True,
        ).stdout
        seen.add(out.strip())
    assert seen == {str(tmp_path / "home" / ".local" / "share" / "harness" / "data")}


def test_a_data_root_that_is_a_file_is_one_line(monkeypatch, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    monkeypatch.setenv("HARNESS_DATA", str(tmp_path / "file"))
    with pytest.raises(UserError, match=r"HARNESS_DATA: .*/file is not a folder"):
        data_root()
    with pytest.raises(UserError, match=r"--data: .*/file is not a folder"):
        data_root(tmp_path / "file")
