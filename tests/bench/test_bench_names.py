"""Minor faults of round 4 (issue 44, finding 8): a candidate file name of 240 characters failed
with "File name too long" on the derived grid file; ``extend_rounds: 0`` passed the protocol
check and the error then named the derived grid file."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from harness.bench.derive import slug
from harness.cli import main

PROTOCOLS = Path(__file__).resolve().parents[2] / "protocols"

OPTIMIZER = """
import torch

class Opt(torch.optim.SGD):
    def __init__(self, params, lr=0.1):
        super().__init__(params, lr=lr)
"""


def test_a_long_candidate_file_name_is_shortened_with_a_hash(tmp_path: Path) -> None:
    name = "o" * 240 + ".py"
    (tmp_path / name).write_text(OPTIMIZER)
    candidate = f"{tmp_path / name}:Opt"

    r = CliRunner().invoke(
        main,
        ["bench", candidate, "--scale", "ci", "--dry-run", "--results", str(tmp_path / "r")],
    )

    assert r.exit_code == 0, r.output
    assert len(slug(candidate)) <= 100
    assert slug(candidate) != slug(f"{tmp_path / ('o' * 239 + 'x.py')}:Opt")  # hashes differ
    assert slug("torch.optim:SGD") == "torch.optim-SGD"  # short names as before


def test_no_extension_rounds_is_refused_in_the_protocols_terms(tmp_path: Path) -> None:
    text = (PROTOCOLS / "ci.yaml").read_text()
    assert "  extend_rounds: 3" in text
    path = tmp_path / "p.yaml"
    path.write_text(text.replace("  extend_rounds: 3", "  extend_rounds: 0", 1))

    r = CliRunner().invoke(
        main,
        [
            "bench",
            "torch.optim:SGD",
            "--protocol",
            str(path),
            "--dry-run",
            "--results",
            str(tmp_path / "r"),
        ],
    )

    assert r.exit_code == 2, r.output
    assert "extend_rounds: expected an integer >= 1" in r.output, r.output
    assert str(path) in r.output and "bench" not in r.output.split(str(path))[0], r.output
    assert not (tmp_path / "r").exists()
