"""The study commands' outputs on the four study grids' results come out byte for byte as
recorded in ``golden_studies/`` (see ``study_golden.py``): the analysis layer can move without
changing one number a study reports."""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest
from study_golden import OUTPUTS, STUDIES, cases, outputs


def test_every_study_logs_commands_and_a_report_per_grid() -> None:
    names = [c.name for c in cases()]
    for study in STUDIES:
        assert sum(n.startswith(f"{study}-") for n in names) >= 2, study
        assert f"{study}-report" in names
    assert len(names) == len(set(names))
    assert all("@results" in c.args for c in cases() if c.args[0] in ("analyze", "figures"))


@pytest.mark.slow
def test_study_outputs_are_byte_identical_to_the_recorded_ones(tmp_path: Path) -> None:
    got = outputs(tmp_path)
    recorded = {p.name: p.read_bytes() for p in OUTPUTS.iterdir()}
    assert sorted(got) == sorted(recorded), "outputs added or gone"
    assert all(data.startswith(b"exit 0\n") for n, data in got.items() if n.endswith(".txt"))
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
