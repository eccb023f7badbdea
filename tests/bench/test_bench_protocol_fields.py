"""The protocol file is declared with the typed-field pattern of the run config (issue 40): each
section a frozen dataclass whose fields are its keys (:func:`harness.core.sections.key`), the
valid and required keys derived from them, one error path (a line naming the file, the key, the
value and what was expected; exit 2). The shipped protocols load as before: the same runs."""

from __future__ import annotations

import ast
import hashlib
import inspect
import json
import textwrap
from pathlib import Path

import pytest

import harness.bench.protocol as protocol_module
from harness.bench import derive_bench, protocol_dirs
from harness.bench.derive import grid_of, runs_of
from harness.bench.protocol import (
    Budget,
    CandidateRules,
    Family,
    Protocol,
    Seeds,
    VerdictRules,
    load_protocol,
)
from harness.core.errors import UserError
from harness.core.sections import keys

SHIPPED = protocol_dirs()[-1]

PINNED = {  # runs, sha of the sorted run_ids, sha of the stamp (runs_of), before the declaration
    "ci.yaml": (24, "5b869506e9eb8ccb", "546c4ac223f30742"),
    "laptop.yaml": (64, "3cd519b961d0c9e1", "7f092a53929589ff"),
    "paper.yaml": (180, "4c5ca6a82689b396", "074c073606140a2f"),
}


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@pytest.mark.parametrize("name", sorted(PINNED))
def test_the_shipped_protocols_derive_the_same_runs_and_stamp(tmp_path: Path, name: str) -> None:
    """The run_ids of SGD benched under each shipped protocol, and the protocol's stamp (what
    an earlier bench's grid was planned with), as they were when protocols were parsed by hand:
    a bench started before goes on, its baselines' runs shared."""
    path = SHIPPED / name
    derived = derive_bench("torch.optim:SGD", root=tmp_path, protocol=path)
    ids = sorted(r.run_id for r in grid_of(derived, tmp_path).runs)
    stamp = json.dumps(runs_of(load_protocol(path)), sort_keys=True)
    assert (len(ids), _sha(" ".join(ids)), _sha(stamp)) == PINNED[name]


def test_every_sections_keys_are_its_declared_fields_each_documented() -> None:
    """One declaration: the keys a section accepts are its dataclass's fields (no second list
    of key names to drift), each documented under it."""
    top = ("name", "description", "launcher", "base", "cells", "seeds", "budget")
    assert keys(Protocol, ("path",)) == (*top, "weight_decay", "baselines", "candidate", "verdict")
    assert keys(Budget) == ("lr_points", "settings", "extend_rounds", "lr_bounds")
    assert keys(Seeds) == ("tune", "confirm", "stages")
    assert keys(Family, ("label",)) == ("optimizer", "search")
    assert keys(CandidateRules) == ("range_factor", "search", "schedules")
    assert keys(VerdictRules) == ("alpha", "power", "spending")
    tree = ast.parse(inspect.getsource(protocol_module))
    sections = {Protocol, Budget, Seeds, Family, CandidateRules, VerdictRules}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name in {c.__name__ for c in sections}:
            body = node.body
            for field, after in zip(body, [*body[1:], None], strict=True):
                if isinstance(field, ast.AnnAssign):
                    documented = isinstance(after, ast.Expr) and isinstance(
                        after.value, ast.Constant
                    )
                    assert documented, (node.name, ast.unparse(field.target))
    assert not [n for n in dir(protocol_module) if n.endswith("_KEYS") and n != "SCHEDULE_KEYS"]


def _ci(tmp_path: Path, **lines: str) -> Path:
    """The CI protocol with whole lines replaced (the key the line starts with -> new line)."""
    text = (SHIPPED / "ci.yaml").read_text().splitlines()
    for old, new in lines.items():
        [i, *_] = [i for i, line in enumerate(text) if line.split("#")[0].strip().startswith(old)]
        text[i] = new
    path = tmp_path / "p.yaml"
    path.write_text(textwrap.dedent("\n".join(text) + "\n"))
    return path


def test_a_key_given_as_null_takes_its_default(tmp_path: Path) -> None:
    """A commented-out value (``weight_decay:`` with nothing after it) is the key's default, as
    a key left out is; a required key given as null is refused."""
    p = load_protocol(_ci(tmp_path, **{"weight_decay:": "weight_decay:", "alpha:": "  alpha:"}))
    assert (p.weight_decay, p.verdict.alpha) == (0.1, 0.05)
    with pytest.raises(UserError, match="name: expected a non-empty string, got None"):
        load_protocol(_ci(tmp_path, **{"name:": "name:"}))
