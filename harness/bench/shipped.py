"""The shipped protocols, by scale (``harness bench --scale``), and the protocol a bench runs."""

from __future__ import annotations

from pathlib import Path

from harness.bench.protocol import Protocol, load_protocol
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
