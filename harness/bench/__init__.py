"""``harness bench``: a candidate optimizer against tuned baselines under a protocol, with a
verdict per cell and its interval.

The library behind the command (the CLI only parses and prints)::

    from harness.bench import derive_bench, plan, run, judge
    derived = derive_bench("torch.optim:SGD", scale="local", root=Path("results"))
    print(plan(derived, root, data_root).to_train_max)
    run(derived, root=root, data_root=data_root, launcher=None, wait=None, out=sys.stdout)
    verdict = judge(derived, root)

The parts: the protocol file (:mod:`.protocol`), each arm's search space (:mod:`.space`), the
ordinary grid it derives (:mod:`.derive`), the phases run as submits (:mod:`.phases`), the
verdict (:mod:`.verdict`) and its text (:mod:`.render`). The bench is a client of
:mod:`harness.api` (submits, plans, result rows, selections) and of the statistics facade
:mod:`harness.analysis.stats`; an import-linter contract keeps it from the layers below.
"""

from __future__ import annotations

from pathlib import Path

from harness.bench.derive import Derived, derive
from harness.bench.phases import Plan, Progress, plan, run
from harness.bench.protocol import Protocol, load_protocol
from harness.bench.verdict import Verdict, judge
from harness.core.errors import unknown_choice

SCALES = {"local": "laptop.yaml", "paper": "paper.yaml", "ci": "ci.yaml"}
"""``--scale`` -> the shipped protocol file it names (under ``protocols/``)."""
DEFAULT_SCALE = "local"
"""The scale of ``harness bench`` without ``--scale`` or ``--protocol``."""


def scale_name(scale: str | None, protocol: str | Path | None) -> str:
    """How the bench's output, card and figures name its scale: ``local scale`` (a shipped
    protocol's ``--scale``), ``protocol my.yaml`` (a file). The runs' own ``scale`` field says
    ``full`` for every bench (its grid as written, without ``local:`` overrides), which is not
    the bench's scale."""
    if protocol is not None:
        return f"protocol {Path(protocol).name}"
    return f"{scale or DEFAULT_SCALE} scale"


def protocol_dirs() -> list[Path]:
    """Where shipped protocols are looked up: ``./protocols``, then the project's."""
    return [Path("protocols"), Path(__file__).resolve().parents[2] / "protocols"]


def find_protocol(scale: str | None, protocol: str | Path | None) -> Protocol:
    """The protocol a bench runs: the file ``protocol``, else the shipped one of ``scale``.

    Raises:
        UserError: an unknown scale, a missing or invalid protocol file.
    """
    if protocol is not None:
        return load_protocol(protocol)
    scale = scale or DEFAULT_SCALE
    if scale not in SCALES:
        raise unknown_choice("--scale", scale, SCALES)
    for d in protocol_dirs():
        if (d / SCALES[scale]).is_file():
            return load_protocol(d / SCALES[scale])
    return load_protocol(protocol_dirs()[-1] / SCALES[scale])  # names the missing file


def derive_bench(
    candidate: str,
    *,
    root: Path,
    scale: str | None = None,
    protocol: str | Path | None = None,
    launcher: str | None = None,
) -> Derived:
    """The grid of ``candidate`` under a protocol (:func:`find_protocol`, :func:`derive`)."""
    return derive(find_protocol(scale, protocol), candidate, root, launcher)


__all__ = [
    "DEFAULT_SCALE",
    "SCALES",
    "Derived",
    "Plan",
    "Progress",
    "Protocol",
    "Verdict",
    "derive_bench",
    "find_protocol",
    "judge",
    "plan",
    "run",
    "scale_name",
]
