"""The in-process backend's profile section (``kind: inprocess``) and its registry declaration."""

from __future__ import annotations

from dataclasses import dataclass

from harness.launch.profile import Backend


@dataclass(frozen=True, kw_only=True, slots=True)
class InProcessSettings:
    """The keys a ``kind: inprocess`` profile reads besides the common ones."""

    threads_per_run: int = 1
    """torch threads a run trains with (the caller's count is restored after it); 1, as a local
    run without GPUs on a machine whose cores are one per slot, so that rows are the same.
    0: the caller's count, as it is."""

    def __post_init__(self) -> None:
        if self.threads_per_run < 0:
            got = self.threads_per_run
            raise ValueError(f"threads_per_run: must be >= 0 (0: the caller's), got {got}")


BACKEND = Backend(
    settings=InProcessSettings,
    launcher="harness.launch.inprocess.launcher:InProcessLauncher",
)
"""The registry's ``inprocess`` entry: it trains, nothing more (no evaluations: the ``local``
profile's run in the calling process already; nothing queued between submissions)."""
