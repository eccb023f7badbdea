"""Every ``harness analyze``, ``figures`` and ``report`` output recorded in ``golden/`` (before
the analysis layer was restructured) comes out byte for byte the same (see ``golden.py``)."""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest
from golden import GOLDEN, outputs


@pytest.mark.slow
def test_outputs_are_byte_identical_to_the_recorded_ones(tmp_path: Path) -> None:
    got = outputs(tmp_path)
    recorded = {p.name: p.read_bytes() for p in GOLDEN.iterdir()}
    assert sorted(got) == sorted(recorded), "outputs added or gone"
    differ = [name for name in got if got[name] != recorded[name]]
    diffs = "".join(
        "".join(
            difflib.unified_diff(
                recorded[n].decode(errors="replace").splitlines(True)[:400],
                got[n].decode(errors="replace").splitlines(True)[:400],
                n,
                n,
                n=1,
            )
        )[:3000]
        for n in differ
    )
    assert not differ, f"{len(differ)} output(s) changed: {differ}\n{diffs}"
